//go:build race

package sqlenv

// raceEnabled: the race detector slows transpiled SQLite several times, so
// timing bounds get more slack.
const raceEnabled = true
