//go:build !unix

package dets

import "os"

// OpenDescriptor is OpenFile for a bare descriptor of the table file; see
// the Unix version. Here it wraps fd in an *os.File, and size, dev and ino
// are not used.
func OpenDescriptor(fd int, name string, size int64, dev, ino uint64, opts Options) (*Table, error) {
	return OpenFile(os.NewFile(uintptr(fd), name), opts)
}
