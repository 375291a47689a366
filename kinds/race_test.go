//go:build race

package kinds

// raceEnabled: the race detector makes sync.Pool drop items, so the engine's
// pooled scratch allocates again and allocation counts are not comparable.
const raceEnabled = true
