//go:build race

package lockfile

const raceEnabled = true
