package dets

import (
	"math/bits"
	"runtime"
	"runtime/debug"
)

// A long-lived table reads and writes its buckets and slot entries through
// a shared memory map of the file instead of a pread or pwrite each, so a
// lookup or an insert usually makes no system call. Stores into a shared
// map land in the kernel's page cache exactly as pwrite's bytes do: a
// killed process loses nothing it wrote, and fsync covers them.
//
// The map is made lazily, after mapAfterOps bucket reads and writes (or
// fewer large ones), so a short open-lookup-close cycle never pays for
// mmap and munmap. It spans
// mapSpan bytes whatever the file size (otp9 files stay below 2 GiB), so
// the file grows under it without a remap. A 32-bit process has at most
// 4 GiB of address space for its heap, its stacks and every open table, so
// there the span is 256 MiB: a larger file is not mapped at all, and the
// part of a mapped file that grows past the span is read and written with
// pread and pwrite. A store past the end of the file
// first extends the file by an eighth, at least mapGrowMin and at most
// mapGrowMax (with written zeros, so a full disk is an error here rather
// than a fault later; the write then falls back to pwrite, which needs
// only its own bytes); save cuts the file back to its exact size before
// it writes the closed header. A crash in between
// leaves zeros after the data, which a repair scan skips, in OTP too.
//
// A page can still vanish: another process may truncate the file. Accesses
// to the map run with the runtime's panic-on-fault mode, so the SIGBUS
// becomes a recovered panic, and the access falls back to pread or pwrite,
// which report the short file or the I/O error.
const (
	mapAfterOps = 64
	mapSpan     = is64bit<<32 + (1-is64bit)*(256<<20)
	mapGrowMin  = 1 << 20  // smallest extension of a mapped file
	mapGrowMax  = 32 << 20 // largest: its zeros are dirty page cache until used
)

// is64bit is 1 on 64-bit targets and 0 on 32-bit ones.
const is64bit = bits.UintSize / 64

// mappable is implemented by files that can be memory-mapped (OS files).
type mappable interface {
	// mapShared maps length bytes of the file, shared; writable adds
	// PROT_WRITE.
	mapShared(length int, writable bool) ([]byte, func() error, error)
}

// countOp maps the file once enough bucket I/O has been done; an access
// of n bytes counts as one operation per 8 KiB, so a full scan's large
// reads map the file at once.
func (t *Table) countOp(n int) {
	if t.mm == nil && !t.noMap {
		t.mapOps += 1 + n>>13
		if t.mapOps >= mapAfterOps {
			t.mapFile()
		}
	}
}

// readAt reads len(b) bytes at off, through the map when there is one.
func (t *Table) readAt(b []byte, off int64) error {
	t.countOp(len(b))
	if end := off + int64(len(b)); t.mm != nil && off >= 0 && end <= t.size && end <= int64(len(t.mm)) {
		if mapCopy(b, t.mm[off:end]) {
			return nil
		}
	}
	return readFull(t.f, b, off)
}

// storeAt writes b at off, through the map when there is one.
func (t *Table) storeAt(b []byte, off int64) error {
	t.countOp(len(b))
	if end := off + int64(len(b)); t.mmWritable && off >= 0 && end <= int64(len(t.mm)) {
		// A failed extension (a nearly full disk) leaves the write to
		// pwrite, which needs only the bytes it writes.
		if end <= t.size || t.extend(end) == nil {
			if mapCopy(t.mm[off:end], b) {
				return nil
			}
		}
	}
	return t.pwrite(b, off)
}

// pwrite writes b at off with the file's WriteAt.
func (t *Table) pwrite(b []byte, off int64) error {
	if _, err := t.f.WriteAt(b, off); err != nil {
		return err
	}
	t.size = max(t.size, off+int64(len(b)))
	return nil
}

// truncate sets the file's size.
func (t *Table) truncate(size int64) error {
	if err := t.f.Truncate(size); err != nil {
		return err
	}
	t.size = size
	return nil
}

// extend grows a mapped file so that it holds at least end bytes.
func (t *Table) extend(end int64) error {
	size := max(end, t.size+min(max(t.size/8, mapGrowMin), mapGrowMax))
	size = min((size+mapGrowMin-1)&^(mapGrowMin-1), int64(len(t.mm)))
	if err := extendWithZeros(t.f, t.size, size); err != nil {
		return err
	}
	t.size = size
	t.extended = true
	return nil
}

// zeroBlock is what extendWithZeros writes (never written itself: it stays
// on the zero page).
var zeroBlock [256 << 10]byte

// extendWithZeros extends f from cur to size bytes by writing zeros, so
// that a full disk shows up here (a write reserves or allocates its
// blocks) and not as a fault on a store into the map. Writes rather than
// fallocate: stores into pages a write put in the page cache fault
// cheaply, and ext4 writes them back in large pieces, while pages of
// fallocated (unwritten) extents fault in one by one and write back
// slowly. Filling 25 MB through the map and syncing it took 72-95 ms
// this way against 131-155 ms after fallocate. A failed extension is cut
// back to cur.
func extendWithZeros(f File, cur, size int64) error {
	for off := cur; off < size; {
		n := min(int64(len(zeroBlock)), size-off)
		if _, err := f.WriteAt(zeroBlock[:n], off); err != nil {
			f.Truncate(cur) // best effort: the write's error is the one to report
			return err
		}
		off += n
	}
	return nil
}

// trimExtension cuts a file that reaches past its data (see extended) back
// to end bytes.
func (t *Table) trimExtension(end int64) error {
	if !t.extended {
		return nil
	}
	if t.size == end {
		t.extended = false
		return nil
	}
	if err := t.truncate(end); err != nil {
		return err
	}
	t.extended = false
	return nil
}

// mapFile maps t.f, or records that it cannot be mapped.
func (t *Table) mapFile() {
	t.noMap = true
	m, ok := t.f.(mappable)
	if !ok || t.size > int64(t.tune.mapSpan) {
		return
	}
	b, unmap, err := m.mapShared(t.tune.mapSpan, !t.readOnly)
	if err != nil {
		return
	}
	t.mm, t.unmap, t.noMap, t.mmWritable = b, unmap, false, !t.readOnly
}

// unmapFile releases the map; I/O uses pread and pwrite until the next
// map. A file still extended keeps t.extended, so save trims it.
func (t *Table) unmapFile() {
	if t.unmap != nil {
		t.unmap() // munmap fails only on a bad range, which would be a bug here
	}
	t.mm, t.unmap, t.mmWritable, t.mapOps, t.noMap = nil, nil, false, 0, false
}

// mapCopy copies src to dst, one of which is in the map, reporting false
// when a page of the map could not be accessed.
func mapCopy(dst, src []byte) (ok bool) {
	return mapCopyFunc(func() { copy(dst, src) })
}

// mapCopyFunc runs fn, which accesses the map, reporting false when a page
// of the map could not be accessed.
func mapCopyFunc(fn func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if re, isRuntime := r.(runtime.Error); isRuntime && hasAddr(re) {
				ok = false
				return
			}
			panic(r)
		}
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	fn()
	return true
}

// touchBuckets loads one byte per cache line of each bucket of es in the
// map: a loop of independent loads, whose cache misses overlap, where
// reading the buckets one after another (as growth does, 256 of them at
// random places) would wait for each miss in turn. Files below
// tune.touchMin are not touched. A fault ends it quietly; the reads that
// follow report it.
func (t *Table) touchBuckets(ws []slotWord) {
	if t.mm == nil || t.fileEnd < t.tune.touchMin {
		return
	}
	end := min(t.size, int64(len(t.mm)))
	var s byte
	mapCopyFunc(func() {
		for _, w := range ws {
			e := t.entryOf(w)
			s += touchLines(t.mm, e.ptr, min(e.ptr+e.size, end))
		}
	})
	t.touched += s
}

// touchLines loads one byte per cache line of b[lo:hi]; the caller keeps
// their sum, so that the loads are not dropped.
func touchLines(b []byte, lo, hi int64) (s byte) {
	for p := lo; p < hi; p += 64 {
		s += b[p]
	}
	return s
}

// hasAddr reports whether err is a memory fault (it carries the address).
func hasAddr(err error) bool {
	_, ok := err.(interface{ Addr() uintptr })
	return ok
}
