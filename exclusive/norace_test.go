//go:build !race

package exclusive

const raceEnabled = false
