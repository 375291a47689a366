//go:build linux

package dets

import "golang.org/x/sys/unix"

// mapPopulate asks mmap to map the whole old file at once: the scan reads
// all of it, and one populate is cheaper than a fault per few pages.
const mapPopulate = unix.MAP_POPULATE

// startWriteback starts writing [off, off+n) of f to disk without waiting,
// so that the fsync before the rename finds little left to do. It is only
// a hint: errors surface at that fsync.
func startWriteback(f File, off, n int64) {
	if of, ok := f.(osFile); ok {
		_ = unix.SyncFileRange(int(of.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}
}
