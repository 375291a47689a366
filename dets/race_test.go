//go:build race

package dets

// raceEnabled: the race detector makes sync.Pool drop items, so pooled
// scratch allocates again (TestHotPathAllocs).
const raceEnabled = true
