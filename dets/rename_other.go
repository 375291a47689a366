//go:build !windows

package dets

import "os"

// renameFile is os.Rename; the directory fsync after it (syncDir) makes it
// durable. Windows has its own (rename_windows.go).
func renameFile(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
