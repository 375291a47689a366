//go:build unix && !linux

package dets

import "golang.org/x/sys/unix"

// syncCall flushes a descriptor's data (no fdatasync here).
var syncCall, syncOp = unix.Fsync, "fsync"
