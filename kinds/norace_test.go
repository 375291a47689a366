//go:build !race

package kinds

const raceEnabled = false
