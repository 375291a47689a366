//go:build unix

package exclusive

import "golang.org/x/sys/unix"

// monoNow reads CLOCK_MONOTONIC, which every process on the machine shares,
// so that the intervals children print can be compared with each other.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
