//go:build unix && !linux

package dets

import "os"

// allocateFile extends f to size bytes (sparse: no fallocate here).
func allocateFile(f *os.File, cur, size int64) error {
	return f.Truncate(size)
}
