//go:build unix

package dets

import (
	"io/fs"
	"os"
	"syscall"
)

// openOSFile opens name close-on-exec and wraps the descriptor with
// os.NewFile. os.OpenFile would first try to register a regular file with
// the network poller (two fcntl calls to set and clear O_NONBLOCK around an
// epoll_ctl that Linux refuses for regular files); os.NewFile on a blocking
// descriptor costs one fcntl and keeps the *os.File guarantees (close-once,
// finalizer, reference-counted descriptor use).
func openOSFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	mode := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		mode |= syscall.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		mode |= syscall.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		mode |= syscall.S_ISVTX
	}
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, mode)
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}
