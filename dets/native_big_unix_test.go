//go:build unix

package dets

import (
	"os"
	"syscall"
	"testing"
)

// allocatedBytes is the space the file at path takes on disk.
func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no block count for this file system")
	}
	return st.Blocks * 512
}
