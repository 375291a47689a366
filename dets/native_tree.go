package dets

import (
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// The native slot table (docs/format-native.md §5): a tree whose nodes
// carry their children's checksums.
//
//	meta     rootOff, rootLen, rootSum
//	root     [part 0: off u64, sum u64] [part 1] ...       16 B an entry
//	part     [seg 0: off u64, sum u64] ... [seg 255]      4096 B, unused entries zero
//	segment  [slot entry u64] x 512                        4096 B
//
//	slot entry   bits 63..8: offset >> 4   bits 7..0: code
//	code 0       empty slot (the whole entry is 0)
//	code 1..55   a cell of cellSize(code) bytes in a 64 KiB run
//	code 76..123 a buddy block of 2^(code-64) bytes

// nativeEntry is a slot entry (§5.2).
type nativeEntry uint64

// nativeCellEntry is the entry of a bucket in a cell of class c at off.
func nativeCellEntry(off uint64, c int) nativeEntry { return nativeEntry(off>>4<<8 | uint64(c)) }

// nativeBlockEntry is the entry of a bucket in a buddy block of 2^k bytes.
func nativeBlockEntry(off uint64, k int) nativeEntry {
	return nativeEntry(off>>4<<8 | uint64(nativeBuddyCode+k))
}

func (e nativeEntry) off() uint64 { return uint64(e) >> 8 << 4 }
func (e nativeEntry) code() int   { return int(e & 0xff) }

// cellClass is the entry's cell class, or 0 when it names no cell.
func (e nativeEntry) cellClass() int {
	if c := e.code(); c >= 1 && c <= nativeCellClasses {
		return c
	}
	return 0
}

// blockClass is the entry's buddy class k, or 0 when it names no block.
func (e nativeEntry) blockClass() int {
	if k := e.code() - nativeBuddyCode; k >= nativeMinBuddyClass && k <= nativeMaxBuddyClass {
		return k
	}
	return 0
}

// room is the size of the entry's cell or block: the bytes to read for the
// bucket and the allocation to free; 0 for an empty or invalid entry.
func (e nativeEntry) room() uint64 {
	if c := e.cellClass(); c != 0 {
		return cellSize(c)
	}
	if k := e.blockClass(); k != 0 {
		return 1 << k
	}
	return 0
}

// validIn reports whether e is empty, or names a cell or block that lies
// where the allocator could have placed it: inside [base, end), cells on
// their run's grid, blocks aligned to their size relative to base.
func (e nativeEntry) validIn(base, end uint64) bool { return e.placedIn(base, end, true) }

// writtenIn is validIn for an entry that a log record names, read from a
// file its writer may have left unclosed: such a file grows in steps that
// do not follow the runs (nativeCover), so a cell's run may end past its
// end, and only the cell itself must lie inside.
func (e nativeEntry) writtenIn(base, end uint64) bool { return e.placedIn(base, end, false) }

// placedIn is validIn, with wholeRun saying whether a cell's whole run
// must lie inside end too.
func (e nativeEntry) placedIn(base, end uint64, wholeRun bool) bool {
	if e == 0 {
		return true
	}
	off, room := e.off(), e.room()
	if room == 0 || off < base || room > end || off > end-room {
		return false
	}
	rel := off - base
	if c := e.cellClass(); c != 0 {
		in := rel % nativeRunSize
		runEnd := off - in + nativeRunSize
		return in%cellSize(c) == 0 && in/cellSize(c) < uint64(cellsInRun(c)) && (runEnd <= end || !wholeRun)
	}
	return rel%room == 0
}

// cellSize is the size of cell class c (1..55, §7.2).
func cellSize(c int) uint64 {
	if c <= 31 {
		return 16 * uint64(c+1)
	}
	return 512 + 64*uint64(c-31)
}

// cellsInRun is the number of cells of class c in one run.
func cellsInRun(c int) int { return nativeRunSize / int(cellSize(c)) }

// cellClassFor is the smallest class whose cells hold size bytes, or 0 when
// size needs a buddy block (above 2048 bytes).
func cellClassFor(size uint64) int {
	switch {
	case size <= 32:
		return 1
	case size <= 512:
		return int((size+15)/16) - 1
	case size <= nativeMaxCell:
		return 31 + int((size-512+63)/64)
	}
	return 0
}

// blockClassFor is the buddy class k of the smallest block that holds size
// bytes (at least 2^12), or 0 beyond 2^59.
func blockClassFor(size uint64) int {
	if size > 1<<nativeMaxBuddyClass {
		return 0
	}
	k := nativeMinBuddyClass
	if size > 1<<k {
		k = bits.Len64(size - 1)
	}
	return k
}

// nativeChild is a root or part entry: a child node and its checksum.
type nativeChild struct{ off, sum uint64 }

// nativeNodeSum is the checksum a parent stores for a node's bytes.
func nativeNodeSum(b []byte) uint64 { return xxhash.Sum64(b) }

// encodeNativeRoot writes the root entries into dst[:16*len(parts)] and
// returns the root's checksum, which the meta stores as rootSum.
func encodeNativeRoot(dst []byte, parts []nativeChild) uint64 {
	dst = dst[:16*len(parts)]
	for i, p := range parts {
		le.PutUint64(dst[16*i:], p.off)
		le.PutUint64(dst[16*i+8:], p.sum)
	}
	return nativeNodeSum(dst)
}

// encodeNativePart writes a part's children (at most 256, the rest zero)
// into the 4096-byte node dst and returns its checksum.
func encodeNativePart(dst []byte, segs []nativeChild) uint64 {
	dst = dst[:nativePageSize]
	clear(dst)
	encodeNativeRoot(dst, segs)
	return nativeNodeSum(dst)
}

// encodeNativeSegment writes 512 slot entries into the 4096-byte node dst
// and returns its checksum.
func encodeNativeSegment(dst []byte, entries *[nativeSlotsPerSeg]nativeEntry) uint64 {
	dst = dst[:nativePageSize]
	for i, e := range entries {
		le.PutUint64(dst[8*i:], uint64(e))
	}
	return nativeNodeSum(dst)
}

// nativeSegsInPart is how many segments of part p hold slots below next.
func nativeSegsInPart(next, p uint64) int {
	first := p * nativeSlotsPerPart
	if next <= first {
		return 0
	}
	return int(min((next-first)/nativeSlotsPerSeg, nativeSegsPerPart))
}

// validChild reports whether a child node of nativePageSize bytes at off
// lies on the page grid inside [base, end).
func validChild(off, base, end uint64) bool {
	return off >= base && (off-base)%nativePageSize == 0 && end >= nativePageSize && off <= end-nativePageSize
}

// decodeNativeRoot verifies the root's bytes b (read at m.rootOff) against
// the meta and appends its entries to dst. Errors are *CorruptionError in
// section "root".
func decodeNativeRoot(path string, b []byte, m *nativeMeta, base uint64, dst []nativeChild) ([]nativeChild, error) {
	off := int64(m.rootOff)
	if uint64(len(b)) != m.rootLen || m.rootLen%16 != 0 {
		return dst, corrupt(path, "root", off, "%d bytes, meta says %d", len(b), m.rootLen)
	}
	if nativeNodeSum(b) != m.rootSum {
		return dst, corrupt(path, "root", off, "checksum mismatch")
	}
	for i := 0; i < len(b); i += 16 {
		if c := le.Uint64(b[i:]); !validChild(c, base, m.dataEnd) {
			return dst, corrupt(path, "root", off+int64(i), "part pointer %d out of range", c)
		}
	}
	for i := 0; i < len(b); i += 16 {
		dst = append(dst, nativeChild{le.Uint64(b[i:]), le.Uint64(b[i+8:])})
	}
	return dst, nil
}

// decodeNativePart verifies a part's 4096 bytes b, read at off, against the
// checksum sum from its root entry, and decodes its entries into dst. used
// is nativeSegsInPart for this part: those entries name segments, the rest
// are zero. Errors are *CorruptionError in section "part".
func decodeNativePart(path string, b []byte, off int64, sum uint64, used int, base, end uint64, dst *[nativeSegsPerPart]nativeChild) error {
	if len(b) != nativePageSize {
		return corrupt(path, "part", off, "%d bytes", len(b))
	}
	if nativeNodeSum(b) != sum {
		return corrupt(path, "part", off, "checksum mismatch")
	}
	for i := range nativeSegsPerPart {
		c := nativeChild{le.Uint64(b[16*i:]), le.Uint64(b[16*i+8:])}
		switch {
		case i < used && !validChild(c.off, base, end):
			return corrupt(path, "part", off+16*int64(i), "segment pointer %d out of range", c.off)
		case i >= used && c != nativeChild{}:
			return corrupt(path, "part", off+16*int64(i), "entry %d beyond the table is not zero", i)
		}
		dst[i] = c
	}
	return nil
}

// decodeNativeSegment verifies a segment's 4096 bytes b, read at off,
// against the checksum sum from its part entry, and decodes its slot
// entries into dst. Errors are *CorruptionError in section "segment".
func decodeNativeSegment(path string, b []byte, off int64, sum uint64, base, end uint64, dst *[nativeSlotsPerSeg]nativeEntry) error {
	if len(b) != nativePageSize {
		return corrupt(path, "segment", off, "%d bytes", len(b))
	}
	if nativeNodeSum(b) != sum {
		return corrupt(path, "segment", off, "checksum mismatch")
	}
	for i := range nativeSlotsPerSeg {
		e := nativeEntry(le.Uint64(b[8*i:]))
		if !e.validIn(base, end) {
			return corrupt(path, "segment", off+8*int64(i), "slot entry %#x names no cell or block of the file", uint64(e))
		}
		dst[i] = e
	}
	return nil
}

// nativeSlotLevel returns the slot of key hash h in a table of M and N,
// and the level L of its bucket (§9): the bucket holds exactly the keys
// with h mod 2^L = slot.
func nativeSlotLevel(h, m, n uint64) (slot uint64, level int) {
	level = bits.TrailingZeros64(m)
	slot = h & (m - 1)
	if slot < n {
		slot, level = h&(2*m-1), level+1
	}
	return slot, level
}

// String names an entry for messages: "cell 48 B at 0x5000", "block 2^13 at ...".
func (e nativeEntry) String() string {
	switch {
	case e == 0:
		return "empty"
	case e.cellClass() != 0:
		return fmt.Sprintf("cell %d B at %#x", e.room(), e.off())
	case e.blockClass() != 0:
		return fmt.Sprintf("block 2^%d at %#x", e.blockClass(), e.off())
	}
	return fmt.Sprintf("invalid entry %#x", uint64(e))
}
