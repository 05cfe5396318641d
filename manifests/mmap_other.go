//go:build !unix

package manifests

import "os"

// mapFile never maps on systems without mmap; files are read instead.
func mapFile(*os.File, int64) ([]byte, func(), bool) { return nil, nil, false }
