//go:build !unix

package dets

// syncDir is a no-op where directories cannot be fsynced (Windows commits
// directory entries with the metadata of the files themselves).
func syncDir(dir string) error { return nil }
