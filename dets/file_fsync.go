//go:build unix && !linux && !darwin

package dets

import "golang.org/x/sys/unix"

// syncCall flushes a descriptor's data: fsync, which FreeBSD and the other
// Unix systems send through to stable storage (no fdatasync wrapper here).
var syncCall, syncOp = unix.Fsync, "fsync"
