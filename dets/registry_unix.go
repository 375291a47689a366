//go:build unix

package dets

import (
	"io/fs"
	"syscall"
)

type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

func makeID(dev, ino uint64) (fileID, bool) { return fileID{dev, ino}, true }
