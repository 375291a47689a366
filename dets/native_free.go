package dets

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// The free record (docs/format-native.md §7.5): the allocator's state at a
// checkpoint, in a block of its own that the meta names with its length
// and checksum. Space at or above the meta's dataEnd is free and not
// listed.
//
//	0   reserved 0 (the checksum is the meta's freeSum)
//	8   "GNF1" | 12 reserved 0
//	16  nBuddy | 24 nQuar | 32 nRuns          u64 each
//	40  nBuddy x u64  ((a - base) >> 12) << 8 | k      free blocks, ascending a
//	                  (a - base < 2^60, so the word is below 2^60; a run's below 2^56)
//	..  nQuar  x u64  the same                         quarantined blocks, ascending
//	..  per run: u64 ((run - base) >> 16) << 8 | class; u64 nWords;
//	    nWords x u64 free bitmap; nWords x u64 quarantine bitmap (bit i = cell i)

const (
	nativeFreeHeader = 40
	nfOffMagic       = 8
	nfOffNBuddy      = 16
	nfOffNQuar       = 24
	nfOffNRuns       = 32
)

// freeRecordSize is the exact size of the record encodeFree would write
// for dataEnd now.
func (a *nativeAlloc) freeRecordSize(dataEnd uint64) uint64 {
	n := uint64(nativeFreeHeader + 8*len(a.quar))
	for k := nativeMinBuddyClass; k <= nativeMaxBuddyClass; k++ {
		i, _ := slices.BinarySearch(a.free[k], dataEnd)
		n += 8 * uint64(i)
	}
	for _, r := range a.runs {
		if r.hasAny(&r.free) || r.hasAny(&r.quar) {
			n += 16 + 16*uint64(r.words())
		}
	}
	return n
}

// freeRecordBound bounds the record a checkpoint writes if its block is
// allocated now: the state after checkpoint(), and the free blocks one
// more allocation's split adds.
func (a *nativeAlloc) freeRecordBound() uint64 {
	n := uint64(nativeFreeHeader + 8*(len(a.quar)+len(a.pend)+nativeMaxBuddyClass))
	for k := nativeMinBuddyClass; k <= nativeMaxBuddyClass; k++ {
		n += 8 * uint64(len(a.free[k]))
	}
	for _, r := range a.runs {
		n += 16 + 16*uint64(r.words())
	}
	return n
}

// encodeFree appends the free record of the allocator's state to dst. The
// state must have no pending space (call it after checkpoint); dataEnd is
// the meta's, at or above a.dataEnd().
func (a *nativeAlloc) encodeFree(dst []byte, dataEnd uint64) ([]byte, error) {
	if len(a.pend) != 0 {
		return dst, corrupt(a.path, "freelist", int64(a.pend[0].off), "free record of a state with pending blocks")
	}
	runs := make([]uint64, 0, len(a.runs))
	for off, r := range a.runs {
		if r.hasAny(&r.pend) {
			return dst, corrupt(a.path, "freelist", int64(off), "free record of a state with pending cells")
		}
		runs = append(runs, off)
	}
	slices.Sort(runs)
	var free []nativeBlock
	for k := nativeMinBuddyClass; k <= nativeMaxBuddyClass; k++ {
		for _, off := range a.free[k] {
			if off >= dataEnd {
				break
			}
			if off+1<<k > dataEnd {
				return dst, corrupt(a.path, "freelist", int64(off), "free block 2^%d crosses the end of data %d", k, dataEnd)
			}
			free = append(free, nativeBlock{off, uint8(k)})
		}
	}
	byOff := func(x, y nativeBlock) int { return cmp.Compare(x.off, y.off) }
	slices.SortFunc(free, byOff)
	quar := slices.SortedFunc(slices.Values(a.quar), byOff)
	start := len(dst)
	dst = append(dst, make([]byte, nativeFreeHeader)...)
	h := dst[start:]
	le.PutUint32(h[nfOffMagic:], nativeFreeMagic)
	le.PutUint64(h[nfOffNBuddy:], uint64(len(free)))
	le.PutUint64(h[nfOffNQuar:], uint64(len(quar)))
	le.PutUint64(h[nfOffNRuns:], uint64(len(runs)))
	for _, l := range [][]nativeBlock{free, quar} {
		for _, b := range l {
			dst = le.AppendUint64(dst, (b.off-a.base)>>12<<8|uint64(b.k))
		}
	}
	for _, off := range runs {
		r := a.runs[off]
		dst = le.AppendUint64(dst, (off-a.base)>>nativeRunClass<<8|uint64(r.class))
		dst = le.AppendUint64(dst, uint64(r.words()))
		for _, set := range []*[nativeRunWords]uint64{&r.free, &r.quar} {
			for _, w := range set[:r.words()] {
				dst = le.AppendUint64(dst, w)
			}
		}
	}
	return dst, nil
}

// freeRun is a run as the free record lists it: where its bitmaps are.
type freeRun struct {
	off   uint64
	class int
	pos   int // offset of its free bitmap in the record
}

// decodeNativeFree parses and validates the free record b, read at off and
// named by a meta with freeSum sum, for a buddy area [base, dataEnd), and
// returns the allocator of that state. Everything is checked before the
// allocator is built: the checksum, the counts against the length, classes
// in range, blocks aligned and inside [base, dataEnd), each list
// ascending, no two extents of any lists overlapping, run bitmaps of the
// right length with bits only for cells that exist, free and quarantined
// cells disjoint, and no run entirely free (it would be a buddy block).
// Errors are *CorruptionError in section "freelist".
func decodeNativeFree(path string, b []byte, off int64, sum, base, dataEnd uint64) (*nativeAlloc, error) {
	bad := func(at int, format string, args ...any) (*nativeAlloc, error) {
		return nil, corrupt(path, "freelist", off+int64(at), format, args...)
	}
	if dataEnd < base || (dataEnd-base)%nativePageSize != 0 {
		return bad(0, "end of data %d below the buddy base %d", dataEnd, base)
	}
	if len(b) < nativeFreeHeader || len(b)%8 != 0 {
		return bad(0, "free record of %d bytes", len(b))
	}
	if xxhash.Sum64(b) != sum {
		return bad(0, "checksum mismatch")
	}
	if le.Uint64(b) != 0 || le.Uint32(b[nfOffMagic:]) != nativeFreeMagic || le.Uint32(b[nfOffMagic+4:]) != 0 {
		return bad(0, "bad magic")
	}
	words := uint64(len(b)-nativeFreeHeader) / 8
	nBuddy, nQuar, nRuns := le.Uint64(b[nfOffNBuddy:]), le.Uint64(b[nfOffNQuar:]), le.Uint64(b[nfOffNRuns:])
	if nBuddy > words || nQuar > words-nBuddy || nRuns > (words-nBuddy-nQuar)/2 {
		return bad(nfOffNBuddy, "counts %d, %d, %d do not fit %d bytes", nBuddy, nQuar, nRuns, len(b))
	}
	pos := nativeFreeHeader
	var lists [2][]nativeBlock
	for li, n := range [2]uint64{nBuddy, nQuar} {
		l := make([]nativeBlock, 0, n)
		for range n {
			v := le.Uint64(b[pos:])
			k := int(v & 0xff)
			rel := v >> 8 << 12
			if v >= 1<<60 || k < nativeMinBuddyClass || k > nativeMaxBuddyClass || rel%(1<<k) != 0 ||
				rel > dataEnd-base || 1<<k > dataEnd-base-rel {
				return bad(pos, "block %#x outside the buddy area", v)
			}
			blk := nativeBlock{base + rel, uint8(k)}
			if len(l) > 0 && blk.off < l[len(l)-1].end() {
				return bad(pos, "blocks not ascending")
			}
			l = append(l, blk)
			pos += 8
		}
		lists[li] = l
	}
	runs := make([]freeRun, 0, nRuns)
	for range nRuns {
		if len(b)-pos < 16 {
			return bad(pos, "run entry past the record")
		}
		v, nw := le.Uint64(b[pos:]), le.Uint64(b[pos+8:])
		c := int(v & 0xff)
		rel := v >> 8 << nativeRunClass
		if v >= 1<<56 || c < 1 || c > nativeCellClasses || rel > dataEnd-base || nativeRunSize > dataEnd-base-rel {
			return bad(pos, "run %#x outside the buddy area", v)
		}
		r := freeRun{off: base + rel, class: c, pos: pos + 16}
		if len(runs) > 0 && r.off <= runs[len(runs)-1].off {
			return bad(pos, "runs not ascending")
		}
		cells := cellsInRun(c)
		if nw != uint64(cells+63)/64 || uint64(len(b)-r.pos)/16 < nw {
			return bad(pos, "run of %d cells with %d bitmap words", cells, nw)
		}
		if msg := checkRunBitmaps(b[r.pos:r.pos+16*int(nw)], cells); msg != "" {
			return bad(pos, "run at %d: %s", r.off, msg)
		}
		runs = append(runs, r)
		pos = r.pos + 16*int(nw)
	}
	if pos != len(b) {
		return bad(pos, "%d bytes after the last run", len(b)-pos)
	}
	if at, ok := freeExtentsDisjoint(lists[0], lists[1], runs); !ok {
		return bad(0, "extents overlap at %d", at)
	}
	return buildNativeAlloc(path, b, base, dataEnd, lists[0], lists[1], runs), nil
}

// checkRunBitmaps checks a run's free and quarantine bitmaps (bm holds
// both, nWords each) for a run of cells cells; "" when sound.
func checkRunBitmaps(bm []byte, cells int) string {
	nw := len(bm) / 16
	anySet, allFree := false, true
	for i := range nw {
		f, q := le.Uint64(bm[8*i:]), le.Uint64(bm[8*(nw+i):])
		full := ^uint64(0)
		if n := cells - 64*i; n < 64 {
			full = 1<<n - 1
		}
		switch {
		case (f|q)&^full != 0:
			return "bits for cells that do not exist"
		case f&q != 0:
			return "a cell both free and quarantined"
		}
		anySet = anySet || f|q != 0
		allFree = allFree && f == full
	}
	switch {
	case !anySet:
		return "no free or quarantined cell"
	case allFree:
		return "every cell free"
	}
	return ""
}

// freeExtentsDisjoint merges the three ascending extent lists and reports
// the first address where two overlap.
func freeExtentsDisjoint(free, quar []nativeBlock, runs []freeRun) (uint64, bool) {
	var last uint64
	i, j, r := 0, 0, 0
	for i < len(free) || j < len(quar) || r < len(runs) {
		start, end := ^uint64(0), uint64(0)
		pick := 0
		if i < len(free) && free[i].off < start {
			start, end, pick = free[i].off, free[i].end(), 1
		}
		if j < len(quar) && quar[j].off < start {
			start, end, pick = quar[j].off, quar[j].end(), 2
		}
		if r < len(runs) && runs[r].off < start {
			start, end, pick = runs[r].off, runs[r].off+nativeRunSize, 3
		}
		switch pick {
		case 1:
			i++
		case 2:
			j++
		case 3:
			r++
		}
		if start < last {
			return start, false
		}
		last = end
	}
	return 0, true
}

// buildNativeAlloc builds the allocator of a validated free record: the
// listed space, and [dataEnd, base+2^59) free as buddy blocks of
// ascending sizes.
func buildNativeAlloc(path string, b []byte, base, dataEnd uint64, free, quar []nativeBlock, runs []freeRun) *nativeAlloc {
	a := &nativeAlloc{path: path, base: base, runs: make(map[uint64]*nativeRun, len(runs)), quar: quar,
		held: make(map[uint64]uint8, len(quar))}
	for _, q := range quar {
		a.held[q.off] = q.k
	}
	for _, blk := range free {
		a.free[blk.k] = append(a.free[blk.k], blk.off)
	}
	for rel := dataEnd - base; rel < 1<<nativeMaxBuddyClass; {
		k := min(bits.TrailingZeros64(rel), nativeMaxBuddyClass)
		a.free[k] = append(a.free[k], base+rel)
		rel += 1 << k
	}
	for _, fr := range runs {
		r := &nativeRun{class: uint8(fr.class), cells: uint16(cellsInRun(fr.class))}
		nw := r.words()
		for i := range nw {
			r.free[i] = le.Uint64(b[fr.pos+8*i:])
			r.quar[i] = le.Uint64(b[fr.pos+8*(nw+i):])
		}
		a.runs[fr.off] = r
		if r.hasAny(&r.free) {
			a.open[fr.class] = append(a.open[fr.class], fr.off)
		}
	}
	return a
}
