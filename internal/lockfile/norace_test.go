//go:build !race

package lockfile

const raceEnabled = false
