//go:build !unix

package publish

import "os"

// Without flock no staging directory can be told from a running
// publish's, so none is swept: a killed publish's stays until deleted by
// hand.
const sweepable = false

func lockDir(dir string) (*os.File, error) { return os.Open(dir) }
