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

// noSpaceLeft reports whether the file system of dir has no free page
// left for an unprivileged writer.
func noSpaceLeft(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < uint64(unix.Getpagesize())
}
