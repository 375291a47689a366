//go:build !unix

package dets

// mapFile reads the whole of f into memory (no mmap on this platform).
func mapFile(f File, size int64) ([]byte, func() error, error) {
	return readWhole(f, size)
}

// renameOverOpen: Windows refuses to replace a file that is open.
const renameOverOpen = false
