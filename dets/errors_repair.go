package dets

import (
	"errors"
	"fmt"
)

// ErrMapFault: a page of a memory-mapped file could not be read (SIGBUS).
// The cause, when it can be found, is wrapped too: syscall.ENOSPC when the
// file system is full (a sparse file's hole needs a page to be read
// through the map on tmpfs), the I/O error a read of the same bytes
// returns, or io.ErrUnexpectedEOF when the file shrank. Details are in
// *MapFaultError.
var ErrMapFault = errors.New("dets: a page of the file's memory map could not be read")

// MapFaultError says where a read through a memory map faulted, and why
// when that could be found. It matches ErrMapFault and its cause with
// errors.Is.
type MapFaultError struct {
	Path   string
	Offset int64 // of the faulting byte in the file
	Err    error // the cause, or nil when it could not be found
}

// Error ends with the path, as the package's other errors do.
func (e *MapFaultError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("dets: a read at offset %d through the memory map failed (SIGBUS): %s", e.Offset, e.Path)
	}
	return fmt.Sprintf("dets: a read at offset %d through the memory map failed: %v: %s", e.Offset, e.Err, e.Path)
}

// Is reports that every MapFaultError is an ErrMapFault.
func (e *MapFaultError) Is(target error) bool { return target == ErrMapFault }

// Unwrap returns the cause.
func (e *MapFaultError) Unwrap() error { return e.Err }
