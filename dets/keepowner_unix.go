//go:build unix

package dets

import (
	"io/fs"
	"syscall"
)

// ownerOf is the owner and group of fi's file.
func ownerOf(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
