package dets

import "golang.org/x/sys/unix"

// Sync flushes the file's data with fdatasync: it writes the metadata
// needed to read the data back (the size), but not timestamps, so a sync
// that only overwrote blocks costs no journal commit.
func (f osFile) Sync() error { return syncFD(int(f.Fd()), f.Name()) }

// syncCall flushes a descriptor's data: fdatasync, which skips
// timestamps.
var syncCall, syncOp = unix.Fdatasync, "fdatasync"
