//go:build darwin

package dets

import "golang.org/x/sys/unix"

// On macOS fsync(2) only hands the data to the drive, whose cache may lose
// it at a power cut; fcntl F_FULLFSYNC also flushes that cache. Go's
// (*os.File).Sync already uses it, so only the descriptor File needs it
// here. Filesystems that do not support it (SMB, some FUSE and FAT
// drivers) answer ENOTSUP or EINVAL, and get fsync.

// syncCall flushes a descriptor's data to stable storage.
var syncCall, syncOp = fullFsync, "fcntl F_FULLFSYNC"

func fullFsync(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	if err == unix.ENOTSUP || err == unix.EINVAL {
		return unix.Fsync(fd)
	}
	return err
}
