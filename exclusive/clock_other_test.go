//go:build !unix

package exclusive

import "time"

// monoNow falls back to the wall clock where no shared monotonic clock is at
// hand; the interval checks then assume the clock is not stepped meanwhile.
func monoNow() int64 { return time.Now().UnixNano() }
