package dets

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"
)

// A repair reads the old file through a read-only memory map (mapFile).
// A page of it that cannot be read raises SIGBUS, which by default kills
// the process with no chance to clean up. It happens on a full tmpfs to a
// sparse file (an ENOSPC during a write can leave the file longer than its
// data): a read of the hole through a shared map needs a page that tmpfs
// cannot allocate, where a pread of the same bytes returns zeros. An I/O
// error under the map, or another process truncating the file, do the
// same. Every goroutine that reads the map therefore runs under a
// mapGuard, with the runtime's panic-on-fault mode, which turns the fault
// into a recovered panic and that into a *MapFaultError; the repair then
// fails as on any other error: the temporary files are removed and the old
// file is untouched (it is only ever read). The new file is written with
// pwrite, never through a map, so a full disk shows there as ENOSPC.

// mapGuard guards reads of data, the map of src (path). A nil *mapGuard
// guards nothing: the file was read into memory, which cannot fault.
type mapGuard struct {
	data []byte
	src  File
	path string
}

// mapSource maps the file at path read-only for one pass over all of it
// (a conversion's source), guarded as a repair's source is. release
// unmaps and closes it.
func mapSource(path string) ([]byte, *mapGuard, func(), error) {
	f, err := OSFS{}.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	var data []byte
	var unmap func() error
	size, err := f.Size()
	if err == nil {
		data, unmap, err = mapFile(f, size)
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	var guard *mapGuard
	if unmap != nil {
		guard = &mapGuard{data: data, src: f, path: path}
	}
	return data, guard, func() {
		if unmap != nil {
			unmap()
		}
		f.Close()
	}, nil
}

// run runs fn, turning a fault on a read of the map into a *MapFaultError.
// Other panics, and faults at other addresses (a nil pointer, say), stay
// panics.
func (g *mapGuard) run(fn func() error) (err error) {
	if g == nil {
		return fn()
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if re, ok := r.(runtime.Error); ok {
			if a, ok := re.(interface{ Addr() uintptr }); ok {
				if off, in := g.offset(a.Addr()); in {
					err = g.fault(off)
					return
				}
			}
		}
		panic(r)
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	return fn()
}

// offset returns the file offset of addr, and whether addr is in the map.
func (g *mapGuard) offset(addr uintptr) (int64, bool) {
	if len(g.data) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(g.data)))
	if addr < base || addr-base >= uintptr(len(g.data)) {
		return 0, false
	}
	return int64(addr - base), true
}

// fault builds the error for a fault at off, looking for its cause: the
// file shrank, a read of the same page fails (its errno is the cause), or
// the file system has no free block left (ENOSPC).
func (g *mapGuard) fault(off int64) error {
	e := &MapFaultError{Path: g.path, Offset: off}
	page := int64(os.Getpagesize())
	at := off &^ (page - 1)
	switch size, err := g.src.Size(); {
	case err != nil:
		e.Err = err
	case size <= off:
		e.Err = io.ErrUnexpectedEOF
	default:
		buf := make([]byte, min(page, size-at))
		if err := readFull(g.src, buf, at); err != nil {
			e.Err = err // io.ErrUnexpectedEOF: it shrank meanwhile
		} else if noSpaceLeft(filepath.Dir(g.path)) {
			e.Err = syscall.ENOSPC
		}
	}
	return e
}
