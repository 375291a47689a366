//go:build unix

package dets

import "syscall"

// freeBytes is the space free for this user in dir's file system, or -1.
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
