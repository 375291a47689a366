package dets

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// entryIter yields index entries in sorted order.
type entryIter interface {
	// next returns the next entry and its slot, or false at the end.
	next() (repairEntry, uint32, bool, error)
}

// entryIndex is the index of the sort stage of a repair (docs/repair.md
// §5): it collects the scan's entries, spilling them to PATH.TMP.sort when
// there are more than limit, and gives them back in (new slot, file offset)
// order as an entryIter for the build (sorted).
type entryIndex struct {
	fs          FS
	path        string
	limit       int
	twoLevelMax int // slotOrder's
	// ownLengths: the entries' lengths are not otp9 framing words before
	// the objects (native records), so slotOrder's offsets-only order,
	// which reads them there, is not used.
	ownLengths bool
	mem        []repairEntry
	spill      File
	spilled    bool
	nSpill     int64
	buf        []byte
}

const entrySize = 16

func (x *entryIndex) add(e repairEntry) error {
	if len(x.mem) == cap(x.mem) {
		// Grow by a quarter, not double: the index is most of a repair's
		// heap, and doubling would briefly hold three times its size.
		n := min(max(cap(x.mem)+cap(x.mem)/4, 1024), x.limit)
		x.mem = slices.Grow(x.mem, n-len(x.mem))
	}
	x.mem = append(x.mem, e)
	if len(x.mem) >= x.limit {
		return x.spillMem()
	}
	return nil
}

func (x *entryIndex) spillMem() error {
	if x.spill == nil {
		f, err := createFresh(x.fs, x.path, 0o600)
		if err != nil {
			return err
		}
		x.spill, x.spilled = f, true
	}
	if err := x.writeEntries(x.mem, x.nSpill); err != nil {
		return err
	}
	x.nSpill += int64(len(x.mem))
	x.mem = x.mem[:0]
	return nil
}

// spillChunk is the number of entries encoded or decoded at a time between
// the index and PATH.TMP.sort: the file is read and written through one
// buffer of this many entries (64 KiB), not one the size of the index,
// which would double a large repair's peak heap (a 3M-object native
// repair peaked at 164 MiB with whole-run buffers).
const spillChunk = 4096

// writeEntries writes es to the spill file from entry index at on.
func (x *entryIndex) writeEntries(es []repairEntry, at int64) error {
	if cap(x.buf) < spillChunk*entrySize {
		x.buf = make([]byte, 0, spillChunk*entrySize)
	}
	for len(es) > 0 {
		n := min(len(es), spillChunk)
		x.buf = x.buf[:0]
		for _, e := range es[:n] {
			x.buf = appendEntry(x.buf, e)
		}
		if _, err := x.spill.WriteAt(x.buf, at*entrySize); err != nil {
			return err
		}
		es, at = es[n:], at+int64(n)
	}
	return nil
}

// readEntries appends cnt entries of the spill file, from entry index at
// on, to x.mem.
func (x *entryIndex) readEntries(at, cnt int64) error {
	if cap(x.buf) < spillChunk*entrySize {
		x.buf = make([]byte, 0, spillChunk*entrySize)
	}
	for cnt > 0 {
		n := min(cnt, spillChunk)
		raw := x.buf[:n*entrySize]
		if err := readFull(x.spill, raw, at*entrySize); err != nil {
			return err
		}
		for i := range n {
			x.mem = append(x.mem, readEntry(raw[i*entrySize:]))
		}
		at, cnt = at+n, cnt-n
	}
	return nil
}

func appendEntry(b []byte, e repairEntry) []byte {
	b = be.AppendUint64(b, e.off)
	b = be.AppendUint32(b, e.n)
	return be.AppendUint32(b, e.hash)
}

func readEntry(b []byte) repairEntry {
	return repairEntry{off: be.Uint64(b), n: be.Uint32(b[8:]), hash: be.Uint32(b[12:])}
}

func (x *entryIndex) cleanup() {
	if x.spill != nil {
		x.spill.Close()
		x.spill = nil
		x.fs.Remove(x.path)
	}
}

// sorted returns the entries ordered by (slot(e), e.off); slot values are
// below nslots. data is the old file, which the entries point into.
func (x *entryIndex) sorted(slot func(repairEntry) uint32, nslots uint32, data []byte) (entryIter, error) {
	if !x.spilled && !x.ownLengths {
		if offs, ends, ok := slotOrder(x.mem, slot, nslots, x.twoLevelMax); ok {
			// The order holds all the build needs, so the index
			// itself can go.
			x.mem = nil
			return &orderIter{data: data, offs: offs, ends: ends, end: len(offs)}, nil
		}
	}
	cmp := func(a, b repairEntry) int {
		sa, sb := slot(a), slot(b)
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	}
	if !x.spilled {
		slices.SortFunc(x.mem, cmp)
		return &memIter{es: x.mem, slot: slot}, nil
	}
	if len(x.mem) > 0 {
		if err := x.spillMem(); err != nil {
			return nil, err
		}
	}
	// Sort runs of limit entries in place in the spill file, then merge.
	x.mem = x.mem[:0]
	var runs []*runIter
	for start := int64(0); start < x.nSpill; start += int64(x.limit) {
		cnt := min(int64(x.limit), x.nSpill-start)
		x.mem = x.mem[:0]
		if err := x.readEntries(start, cnt); err != nil {
			return nil, err
		}
		slices.SortFunc(x.mem, cmp)
		if err := x.writeEntries(x.mem, start); err != nil {
			return nil, err
		}
		runs = append(runs, &runIter{f: x.spill, pos: start, end: start + cnt})
	}
	x.mem = nil
	m := &mergeIter{runs: runs, cmp: cmp, slot: slot}
	for _, r := range runs {
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// slotOrder orders es by (slot, off) with a counting sort, which is
// stable: the scan emits entries in file order, so the result is in offset
// order within each slot. It returns the objects' offsets in that order (4
// bytes per entry, not a second copy of the index: the build reads each
// object's length from its <<ObjSz:32>> framing, and its slot from ends),
// and ends[s], the index in offs after slot s's objects. It returns false
// when es is not in offset order, an offset does not fit 32 bits, or the
// slot table would be much larger than the index.
//
// Up to twoLevelMax entries the sort has two levels: (slot, off)
// pairs are distributed over at most 1<<slotOrderBits ranges of slots, and
// each range is then ordered with counters that fit in the CPU's caches.
// One counting sort over all the slots at once spends most of its time in
// cache misses on its counters and its output (1M entries: 165 ms against
// 35). The pairs take 8 bytes an entry more; above twoLevelMax the
// one-level sort keeps the peak memory of an in-memory sort as it was.
func slotOrder(es []repairEntry, slot func(repairEntry) uint32, nslots uint32, twoLevelMax int) (offs, ends []uint32, ok bool) {
	if len(es) == 0 || uint64(len(es)) > math.MaxUint32 || uint64(nslots) > 4*uint64(len(es))+1<<16 {
		return nil, nil, false
	}
	// One level counts by slot, in ends; two count by range first.
	twoLevel := len(es) <= twoLevelMax
	ends = make([]uint32, nslots)
	cnt, shift := ends, 0
	var rangeCnt [1 << slotOrderBits]uint32
	if twoLevel {
		shift = max(bits.Len32(nslots-1)-slotOrderBits, 0)
		cnt = rangeCnt[:(nslots-1)>>shift+1]
	}
	for i := range es {
		s := slot(es[i])
		if (i > 0 && es[i].off <= es[i-1].off) || s >= nslots || es[i].off > math.MaxUint32 || es[i].off < 4 {
			return nil, nil, false
		}
		cnt[s>>shift]++
	}
	toStarts(cnt, 0)
	offs = make([]uint32, len(es))
	if !twoLevel {
		for i := range es {
			s := slot(es[i])
			offs[ends[s]] = uint32(es[i].off)
			ends[s]++ // ends at the slot's end
		}
		return offs, ends, true
	}
	pairs := make([]uint64, len(es)) // slot<<32 | off, by range
	for i := range es {
		s := slot(es[i])
		pairs[cnt[s>>shift]] = uint64(s)<<32 | es[i].off
		cnt[s>>shift]++ // ends at the range's end
	}
	lo := uint32(0)
	for r, hi := range cnt {
		first := uint32(r) << shift
		local := ends[first:min(first+1<<shift, nslots)]
		for _, p := range pairs[lo:hi] {
			local[uint32(p>>32)-first]++
		}
		toStarts(local, lo)
		for _, p := range pairs[lo:hi] {
			k := uint32(p>>32) - first
			offs[local[k]] = uint32(p)
			local[k]++ // ends at the slot's end
		}
		lo = hi
	}
	return offs, ends, true
}

// toStarts turns counts into the index where each count's entries start,
// the first at base.
func toStarts(cnt []uint32, base uint32) {
	for k, c := range cnt {
		cnt[k] = base
		base += c
	}
}

// slotOrderBits is log2 of slotOrder's number of slot ranges.
const slotOrderBits = 11

// orderIter yields the entries offs[i:end] of a slotOrder, the first of
// them in slot s or later.
type orderIter struct {
	data    []byte // the old file
	offs    []uint32
	ends    []uint32
	i, end  int
	s       uint32
	started bool
	sink    byte
}

func (o *orderIter) next() (repairEntry, uint32, bool, error) {
	if o.i >= o.end {
		return repairEntry{}, 0, false, nil
	}
	// The objects are read in slot order, which is random in the file.
	// Touching a whole batch of them ahead, in a loop of independent
	// loads, lets their cache and TLB misses overlap with each other.
	if !o.started {
		o.started = true
		o.touch(o.i)
		o.touch(o.i + prefetchBatch)
	} else if o.i%prefetchBatch == 0 {
		o.touch(o.i + prefetchBatch)
	}
	for o.ends[o.s] <= uint32(o.i) {
		o.s++
	}
	off := int64(o.offs[o.i])
	if off < 4 || off > int64(len(o.data)) {
		return repairEntry{}, 0, false, fmt.Errorf("dets: repair index entry beyond the file")
	}
	o.i++
	// The scan proved the framing, which gives the length.
	n := be.Uint32(o.data[off-4:]) - 4
	return repairEntry{off: uint64(off), n: n}, o.s, true, nil
}

// touch reads one byte per cache line of the objects of the batch that
// starts at offs[from].
func (o *orderIter) touch(from int) {
	if from >= o.end {
		return
	}
	var s byte
	for _, off := range o.offs[from:min(from+prefetchBatch, o.end)] {
		// The framing before the object gives its length.
		at := int64(off) - 4
		if at < 0 || at+4 > int64(len(o.data)) {
			continue
		}
		s += touchLines(o.data, at, min(at+4+int64(min(be.Uint32(o.data[at:]), prefetchMax)), int64(len(o.data))))
	}
	o.sink += s
}

// split divides o, which must not have started, into two iterators over
// contiguous slot ranges with about half the entries each, and returns them
// with the first slot of each range (a multiple of slotsPerSeg). It returns
// o alone when no such boundary exists.
func (o *orderIter) split() ([]entryIter, []uint32) {
	whole := []entryIter{o}
	if o.started || o.s != 0 || o.end-o.i < 2 {
		return whole, []uint32{0}
	}
	// The slot of the middle entry, rounded down to a segment start.
	midEntry := uint32(o.i + (o.end-o.i)/2)
	s, _ := slices.BinarySearch(o.ends, midEntry+1)
	mid := uint32(s) / slotsPerSeg * slotsPerSeg
	if mid == 0 {
		return whole, []uint32{0}
	}
	k := int(o.ends[mid-1])
	if k <= o.i || k >= o.end {
		return whole, []uint32{0}
	}
	a := &orderIter{data: o.data, offs: o.offs, ends: o.ends, i: o.i, end: k}
	b := &orderIter{data: o.data, offs: o.offs, ends: o.ends, i: k, end: o.end, s: mid}
	return []entryIter{a, b}, []uint32{0, mid}
}

const (
	prefetchBatch = 32
	prefetchMax   = 1024 // bytes touched per object
)

type memIter struct {
	es   []repairEntry
	i    int
	slot func(repairEntry) uint32
}

func (m *memIter) next() (repairEntry, uint32, bool, error) {
	if m.i >= len(m.es) {
		return repairEntry{}, 0, false, nil
	}
	m.i++
	e := m.es[m.i-1]
	return e, m.slot(e), true, nil
}

// runIter reads one sorted run of the spill file through a small buffer.
type runIter struct {
	f        File
	pos, end int64         // entry indexes
	buf      []repairEntry // the entries not yet merged: a tail of mem
	mem      []repairEntry // buf's whole array, which next's reslicing shrinks
	raw      []byte
}

func (r *runIter) fill() error {
	if r.mem == nil {
		r.mem = make([]repairEntry, 0, spillChunk)
	}
	r.buf = r.mem[:0]
	cnt := min(int64(spillChunk), r.end-r.pos)
	if cnt <= 0 {
		return nil
	}
	if cap(r.raw) < int(cnt)*entrySize {
		r.raw = make([]byte, spillChunk*entrySize)
	}
	raw := r.raw[:cnt*entrySize]
	if err := readFull(r.f, raw, r.pos*entrySize); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("dets: repair sort file %w", err)
		}
		return err
	}
	for i := int64(0); i < cnt; i++ {
		r.buf = append(r.buf, readEntry(raw[i*entrySize:]))
	}
	r.pos += cnt
	return nil
}

// mergeIter merges sorted runs; the run count is small (entries/limit), so
// a linear minimum search is enough.
type mergeIter struct {
	runs []*runIter
	cmp  func(a, b repairEntry) int
	slot func(repairEntry) uint32
}

func (m *mergeIter) next() (repairEntry, uint32, bool, error) {
	best := -1
	for i, r := range m.runs {
		if len(r.buf) == 0 {
			continue
		}
		if best < 0 || m.cmp(r.buf[0], m.runs[best].buf[0]) < 0 {
			best = i
		}
	}
	if best < 0 {
		return repairEntry{}, 0, false, nil
	}
	r := m.runs[best]
	e := r.buf[0]
	r.buf = r.buf[1:]
	if len(r.buf) == 0 {
		if err := r.fill(); err != nil {
			return e, 0, false, err
		}
	}
	return e, m.slot(e), true, nil
}
