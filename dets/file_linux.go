//go:build linux

package dets

// Linux: fdatasync for the durability syncs, and the repair's hints
// (MAP_POPULATE, sync_file_range) and its full-disk diagnosis.

import "golang.org/x/sys/unix"

// Sync flushes the file's data with fdatasync: it writes the metadata
// needed to read the data back (the size), but not timestamps, so a sync
// that only overwrote blocks costs no journal commit.
func (f osFile) Sync() error { return syncFD(int(f.Fd()), f.Name()) }

// syncCall flushes a descriptor's data: fdatasync, which skips
// timestamps.
var syncCall, syncOp = unix.Fdatasync, "fdatasync"

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

// noSpaceLeft reports whether the file system of dir has no free page
// left for an unprivileged writer.
func noSpaceLeft(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < uint64(unix.Getpagesize())
}
