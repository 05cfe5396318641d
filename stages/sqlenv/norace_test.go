//go:build !race

package sqlenv

const raceEnabled = false
