package dets

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// renameFile is the rename repair replaces a table with, on Windows.
//
// Windows cannot fsync a directory, so the directory fsync that follows
// the rename on Unix (syncDir) is a no-op here; what takes its place is
// MOVEFILE_WRITE_THROUGH, with which MoveFileEx returns only once the
// rename has reached the disk. os.Rename uses MoveFileEx with
// MOVEFILE_REPLACE_EXISTING alone, which may leave the rename in the cache:
// after a power loss the old file could be back under the name while
// writes made through the new one were acknowledged.
//
// OSFS.Rename (file_os.go) calls it; elsewhere renameFile is os.Rename.
func renameFile(oldpath, newpath string) error {
	from, err := windows.UTF16PtrFromString(longPath(oldpath))
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	to, err := windows.UTF16PtrFromString(longPath(newpath))
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if err := windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// longPath gives an absolute path of MAX_PATH characters or more the
// \\?\ prefix, under which Win32 takes it as it is instead of refusing it,
// as package os does for its own calls. \\?\ turns off the rewriting of
// "." and "..", so the path is cleaned first.
func longPath(path string) string {
	if len(path) < windows.MAX_PATH-12 || !filepath.IsAbs(path) || strings.HasPrefix(path, `\\`) {
		return path
	}
	return `\\?\` + filepath.Clean(path)
}
