//go:build race

package exclusive

const raceEnabled = true
