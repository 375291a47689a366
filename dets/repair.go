package dets

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godets/godets/etf"
)

// Repair rebuilds a table from the ACTIVE buckets that a scan of the old file
// finds (docs/repair.md), and atomically replaces the old file.
//
// Pipeline:
//
//	scan (repair_scan.go)  every proven object -> 16-byte index entry {offset, length, key hash}
//	size                   slots from a distinct-key estimate (HyperLogLog over key hashes)
//	sort                   entries by (new slot, file offset); in memory, or an external
//	                       merge sort in PATH.TMP.sort above repairMemEntries entries
//	build                  per slot: decode objects in file order and apply the kind's
//	                       insert rule; write buckets, segments, parts, free lists and the
//	                       header into PATH.TMP
//	replace                fsync PATH.TMP, rename it over PATH, fsync the directory
//
// The old file is read through a read-only memory map where the platform has
// one, so the objects themselves never live on the Go heap; the heap holds the
// index (16 bytes per object, bounded by repairMemEntries) and one bucket at a
// time. The in-memory sort replaces the index by the objects' offsets in
// slot order (4 bytes per object) and the slots' ends (4 bytes per slot),
// so the index is gone before the build; up to 1Mi objects the sort also
// holds 8 bytes per object of (slot, offset) pairs while it runs.
//
// Speed: on a large file the scan runs on two goroutines (runSplit), and so
// does the build of a large in-memory index (two halves of the slots, see
// tableWriter); the build encodes buckets straight into write buffers that
// another goroutine writes, asking the kernel to start writeback of each
// (Linux), while a third fsyncs every few MiB (asyncWriter), so the fsync
// before the rename has little left; the replaced
// file is closed after the rename, off the caller's path.
//
// Kind rules, applied per key in file order (offset = sequence):
//   - set: the object latest in the file wins (OTP's rule). A crash can leave
//     two ACTIVE copies of a bucket; the later one is usually, but not
//     necessarily, the newer.
//   - bag: identical objects (=:=) collapse to one, at the position of the
//     last copy, as a re-insert would.
//   - duplicate_bag: every copy is kept. Caveat (OTP has it too): when a crash
//     interrupts the move of a bucket to a larger block, both the old and the
//     new copy can still be ACTIVE, and repair then doubles that slot's
//     objects. otp9 objects carry no sequence number, so the stale copy cannot
//     be told apart from a real duplicate.
//
// Slot count decision: OTP raises the header's MinNoSlots to the estimated key
// count on every repair, which makes a later delete_all_objects re-create a
// large table. We keep MinNoSlots and MaxNoSlots as they were (or as given in
// Options.MinSlots/MaxSlots, which OTP also honours at repair), and size the
// slot count to the number of keys instead (Next = keys rounded up to 256,
// within the bounds), which is the state a grown table reaches anyway.
// Compaction (ForceRepair on a good file) is the same rebuild.
//
// Unreadable pages: a page of the old file's map that cannot be read (a
// sparse file on a full tmpfs, an I/O error, a file cut short meanwhile)
// fails the repair with a *MapFaultError, wrapping syscall.ENOSPC when the
// file system is full, instead of killing the process (repair_fault.go).
//
// Crash safety: the new file is complete and fsynced before the rename, and
// the old file is never written. A crash before the rename leaves the old file
// as it was (so the next open repairs it again, overwriting any stale
// PATH.TMP); a crash after it leaves the new, closed file.

// RepairProgress reports the progress of a repair to Options.Progress.
type RepairProgress struct {
	// Phase is "scan" while the old file is read, then "write".
	Phase string
	// BytesScanned of BytesTotal (the old file's size) have been scanned.
	BytesScanned, BytesTotal int64
	// Objects found so far (scan) or written so far (write).
	Objects int64
}

// RepairStats summarizes a finished repair.
type RepairStats struct {
	ObjectsFound   int64 // objects proven whole by the scan
	ObjectsDropped int64 // framed objects the scan rejected
	BucketsPartial int64 // buckets from which only some objects were kept
	Objects, Keys  int64 // in the new file, after the kind rules
	Slots          int64 // Next of the new file
	ExternalSort   bool  // the index spilled to PATH.TMP.sort
}

// repairMemEntries bounds the index held in memory (16 bytes each, so 32 MiB);
// larger indexes are sorted externally. A variable so tests can force the
// external path.
var repairMemEntries = repairMemEntriesMax

const repairMemEntriesMax = 2 << 20

// repairParams says what to rebuild.
type repairParams struct {
	fs       FS
	path     string
	kind     Kind   // 0: from the header
	keyPos   int    // 0: from the header
	minSlots uint32 // 0: from the header, else 256
	maxSlots uint32 // 0: from the header, else 32Mi
	progress func(RepairProgress)
}

func tmpPath(path string) string  { return path + ".TMP" }
func sortPath(path string) string { return path + ".TMP.sort" }

// repairTable rebuilds p.path in place.
func repairTable(p repairParams) (st RepairStats, err error) {
	if p.fs == nil {
		p.fs = OSFS{}
	}
	src, err := p.fs.OpenFile(p.path, os.O_RDONLY, 0)
	if err != nil {
		return st, err
	}
	srcOpen := true
	defer func() {
		if srcOpen {
			src.Close()
		}
	}()
	size, err := src.Size()
	if err != nil {
		return st, err
	}
	if size > 1<<32 {
		return st, fmt.Errorf("%w: %s: %d bytes is beyond the otp9 format", ErrNotDETS, p.path, size)
	}
	data, unmap, err := mapFile(src, size)
	if err != nil {
		return st, err
	}
	defer func() {
		if unmap != nil {
			unmap()
		}
	}()
	// Every read of the map runs under the guard (repair_fault.go).
	var guard *mapGuard
	if unmap != nil {
		guard = &mapGuard{data: data, src: src, path: p.path}
	}

	var (
		kind        Kind
		keyPos      int
		minS, maxS  uint32
		maxSz, hint int64
		trusted     bool
	)
	err = guard.run(func() (err error) {
		kind, keyPos, minS, maxS, maxSz, trusted, err = repairShape(data, p)
		if err == nil && trusted && len(data) >= headerSize {
			hint = min(int64(be.Uint32(data[offNoObjects:])), size/16)
		}
		return err
	})
	if err != nil {
		return st, err
	}

	// Scan into the index.
	idx := &entryIndex{fs: p.fs, path: sortPath(p.path), limit: repairMemEntries}
	if hint > 0 {
		// The header's object count (possibly stale) sizes the index.
		idx.mem = make([]repairEntry, 0, min(hint+hint/8+1024, int64(idx.limit)))
	}
	defer idx.cleanup()
	var sketch hll
	sc := &scanner{data: data, kind: kind, keyPos: keyPos, maxSz: maxSz, guard: guard,
		splitCap: idx.limit / 4, splitHint: int(hint/2 + hint/16)}
	sc.emit = func(e repairEntry) error {
		sketch.add(e.hash)
		return idx.add(e)
	}
	if p.progress != nil {
		sc.report = func(b, o int64) {
			p.progress(RepairProgress{Phase: "scan", BytesScanned: b, BytesTotal: size, Objects: o})
		}
	}
	if err := guard.run(sc.run); err != nil {
		return st, err
	}
	st.ObjectsFound = sc.stats.objects
	st.ObjectsDropped = sc.stats.droppedObjects
	st.BucketsPartial = sc.stats.partial
	if !trusted && st.ObjectsFound == 0 {
		// Nothing proves this was ever a table of the given kind.
		return st, fmt.Errorf("%w: %s: damaged header and no objects found", ErrNotDETS, p.path)
	}

	// Size the new table.
	next := (sketch.estimate() + slotsPerSeg - 1) / slotsPerSeg * slotsPerSeg
	next = min(max(next, int64(minS)), int64(maxS))
	m, n := layoutFor(uint32(next))
	st.Slots = next

	slotFn := func(e repairEntry) uint32 { return slotOf(e.hash, m, n) }
	it, err := idx.sorted(slotFn, uint32(next), data)
	if err != nil {
		return st, err
	}
	st.ExternalSort = idx.spilled

	// Build PATH.TMP.
	tmp := tmpPath(p.path)
	out, err := p.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return st, err
	}
	// Large in-memory indexes are built by two goroutines, each taking
	// a contiguous half of the slots.
	its, bounds := []entryIter{it}, []uint32{0}
	if oi, ok := it.(*orderIter); ok && oi.end-oi.i >= parallelBuildMin && runtime.GOMAXPROCS(0) > 1 {
		its, bounds = oi.split()
		if len(its) > 1 {
			repairSplitBuilds.Add(1)
		}
	}
	w, err := newTableWriter(out, kind, keyPos, m, n, minS, maxS, chunkFor(size), bounds)
	if err != nil {
		out.Close()
		p.fs.Remove(tmp)
		return st, err
	}
	var done atomic.Int64
	bs := make([]*slotBuilder, len(its))
	for i := range bs {
		bs[i] = &slotBuilder{data: data, kind: kind, keyPos: keyPos, w: w.placers[i], done: &done}
	}
	if p.progress != nil {
		bs[0].report = func(o int64) {
			p.progress(RepairProgress{Phase: "write", BytesScanned: size, BytesTotal: size, Objects: o})
		}
	}
	err = guard.run(func() error {
		w.planExact(its, bs[0], size)
		return nil
	})
	if err == nil {
		errs := make([]error, len(bs))
		var wg sync.WaitGroup
		for i := 1; i < len(bs); i++ {
			wg.Go(func() { errs[i] = guard.run(func() error { return bs[i].run(its[i]) }) })
		}
		errs[0] = guard.run(func() error { return bs[0].run(its[0]) })
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				err = e
				break
			}
		}
	}
	if err == nil {
		err = w.finish()
	} else {
		w.abort()
	}
	written := w.objects
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.fs.Remove(tmp)
		return st, err
	}
	st.Objects, st.Keys = written, w.keys
	if p.progress != nil {
		p.progress(RepairProgress{Phase: "write", BytesScanned: size, BytesTotal: size, Objects: written})
	}

	// Replace. The map goes first: nothing may read the old bytes after the
	// rename. Where a file can be renamed over while open (unix), the old
	// descriptor is closed after the directory fsync, on another goroutine:
	// the last close of the replaced file frees its pages and blocks, which
	// takes a few milliseconds that need not delay the caller, and which
	// the directory's journal commit then need not include.
	if unmap != nil {
		unmap()
		unmap = nil
	}
	idx.cleanup()
	_, lateClose := src.(osFile)
	lateClose = lateClose && renameOverOpen
	if !lateClose {
		srcOpen = false
		src.Close()
	}
	if err := p.fs.Rename(tmp, p.path); err != nil {
		p.fs.Remove(tmp)
		return st, err
	}
	err = p.fs.SyncDir(filepath.Dir(p.path))
	if lateClose {
		srcOpen = false
		go src.Close()
	}
	return st, err
}

// repairShape decides the kind, key position, slot bounds and largest
// plausible bucket of the file being repaired. The header is trusted for
// kind and key position when its cookie, type, version and MD5 are right;
// otherwise the caller must supply them.
func repairShape(data []byte, p repairParams) (kind Kind, keyPos int, minS, maxS uint32, maxSz int64, good bool, err error) {
	size := int64(len(data))
	maxSz = min(size, 1<<31)
	var h header
	if size >= headerSize {
		h = decodeHeader(data[:headerSize])
		good = h.cookie == cookie && h.version == formatVersion &&
			h.typ >= typeSet && h.typ <= typeDuplicateBag && md5OK(data[:headerSize]) &&
			h.keyPos >= 1 && h.keyPos <= 1<<24
	}
	if good {
		kind, keyPos = Kind(h.typ), int(h.keyPos)
		if p.kind != 0 && p.kind != kind {
			return 0, 0, 0, 0, 0, false, openError(ErrKindMismatch, p.path)
		}
		if p.keyPos != 0 && p.keyPos != keyPos {
			return 0, 0, 0, 0, 0, false, openError(ErrKeyPosMismatch, p.path)
		}
		// OTP also bounds a bucket by the header's largest size class. In a
		// dirty file those counters can be older than the buckets, so OTP
		// then drops every bucket that grew past them; we bound by the file
		// size only.
	} else {
		if p.kind == 0 || p.keyPos == 0 {
			return 0, 0, 0, 0, 0, false, fmt.Errorf("%w: %s: the header is damaged; give Options.Kind and Options.KeyPos to repair it", ErrCorrupt, p.path)
		}
		kind, keyPos = p.kind, p.keyPos
	}
	isPow2 := func(v uint32) bool { return v != 0 && v&(v-1) == 0 }
	minS, maxS = defaultMinSlots, defaultMaxSlots
	if good && isPow2(h.minSlots) && isPow2(h.maxSlots) && h.minSlots >= slotsPerSeg &&
		h.maxSlots <= maxSlotsLimit && h.minSlots <= h.maxSlots {
		minS, maxS = h.minSlots, h.maxSlots
	}
	if p.minSlots != 0 {
		minS = p.minSlots
	}
	if p.maxSlots != 0 {
		maxS = p.maxSlots
	}
	if minS > maxS {
		return 0, 0, 0, 0, 0, false, fmt.Errorf("%w: min slots %d above max slots %d", ErrInvalidOptions, minS, maxS)
	}
	return kind, keyPos, minS, maxS, maxSz, good, nil
}

// slotBuilder turns the sorted index into buckets.
type slotBuilder struct {
	data   []byte
	kind   Kind
	keyPos int
	w      *placer
	done   *atomic.Int64 // objects built by all builders
	report func(objects int64)

	groups  []group
	slab    []object // objects of the current slot's groups
	lone    bool     // groups holds one object, not yet keyed (see add)
	loneOff uint64
}

func (b *slotBuilder) run(it entryIter) error {
	cur := int64(-1)
	var done int64
	for {
		e, es, ok, err := it.next()
		if err != nil {
			return err
		}
		s := int64(-1)
		if ok {
			s = int64(es)
		}
		if s != cur && cur >= 0 {
			if err := b.flush(uint32(cur)); err != nil {
				return err
			}
		}
		if !ok {
			return nil
		}
		cur = s
		if err := b.add(e); err != nil {
			return err
		}
		done++
		if done%(1<<16) == 0 {
			total := b.done.Add(1 << 16)
			if b.report != nil {
				b.report(total)
			}
		}
	}
}

// add applies the kind's insert rule to the object of e, within the slot
// being built.
func (b *slotBuilder) add(e repairEntry) error {
	if int64(e.off)+int64(e.n) > int64(len(b.data)) {
		return fmt.Errorf("dets: repair index entry beyond the file")
	}
	enc := b.data[e.off : e.off+uint64(e.n)]
	if len(b.groups) == 0 {
		// The first object of the slot: its key is needed only if
		// another object joins it, which at the usual load is not the
		// case for a third of the slots.
		b.slab = append(b.slab, object{enc: enc})
		b.groups = append(b.groups, group{objs: b.slab[:1:1]})
		b.lone, b.loneOff = true, e.off
		return nil
	}
	if b.lone {
		b.lone = false
		first := b.groups[0].objs[0].enc
		clear(b.groups)
		b.groups = b.groups[:0]
		clear(b.slab)
		b.slab = b.slab[:0]
		if err := b.insert(first, b.loneOff); err != nil {
			return err
		}
	}
	return b.insert(enc, e.off)
}

// insert applies the kind's insert rule to the object enc (at off in the
// file) within the slot being built. The scan proved the object; it is
// copied as raw bytes, and its key is compared through its encoding
// (decoded only when the encodings alone cannot decide).
func (b *slotBuilder) insert(enc []byte, off uint64) error {
	o := object{enc: enc, kenc: keySpan(enc, b.keyPos)}
	var k etf.Term
	if o.kenc == nil {
		t, err := decodeTerm(enc)
		if err != nil {
			return fmt.Errorf("dets: repair: object at %d no longer decodes: %w", off, err)
		}
		o.term = t
		k, _ = keyOf(t, b.keyPos)
	}
	b.groups, _, _ = applyInsertSlab(b.kind, b.groups, k, o, b.keyPos, &b.slab)
	return nil
}

func (b *slotBuilder) flush(slot uint32) error {
	nobj := 0
	for _, g := range b.groups {
		nobj += len(g.objs)
	}
	// The bucket is encoded straight into the writer's buffer.
	size := bucketSize(b.kind, b.groups)
	dst, err := b.w.addBucket(slot, size, len(b.groups), nobj)
	if err == nil {
		if got := appendBucket(dst, b.kind, b.groups); int64(len(got)) != size {
			err = fmt.Errorf("dets: repair: bucket of slot %d encoded to %d bytes, want %d", slot, len(got), size)
		}
	}
	clear(b.groups)
	b.groups = b.groups[:0]
	clear(b.slab)
	b.slab = b.slab[:0]
	b.lone = false
	return err
}

// entryIter yields index entries in sorted order.
type entryIter interface {
	// next returns the next entry and its slot, or false at the end.
	next() (repairEntry, uint32, bool, error)
}

// entryIndex collects the scan's entries, spilling them to a file beside the
// table when there are more than limit.
type entryIndex struct {
	fs      FS
	path    string
	limit   int
	mem     []repairEntry
	spill   File
	spilled bool
	nSpill  int64
	buf     []byte
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
		f, err := x.fs.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		x.spill, x.spilled = f, true
	}
	x.buf = x.buf[:0]
	for _, e := range x.mem {
		x.buf = appendEntry(x.buf, e)
	}
	if _, err := x.spill.WriteAt(x.buf, x.nSpill*entrySize); err != nil {
		return err
	}
	x.nSpill += int64(len(x.mem))
	x.mem = x.mem[:0]
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
	if !x.spilled {
		if offs, ends, ok := slotOrder(x.mem, slot, nslots); ok {
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
		raw := make([]byte, cnt*entrySize)
		if err := readFull(x.spill, raw, start*entrySize); err != nil {
			return nil, err
		}
		x.mem = x.mem[:0]
		for i := int64(0); i < cnt; i++ {
			x.mem = append(x.mem, readEntry(raw[i*entrySize:]))
		}
		slices.SortFunc(x.mem, cmp)
		raw = raw[:0]
		for _, e := range x.mem {
			raw = appendEntry(raw, e)
		}
		if _, err := x.spill.WriteAt(raw, start*entrySize); err != nil {
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
// Up to slotOrderTwoLevelMax entries the sort has two levels: (slot, off)
// pairs are distributed over at most 1<<slotOrderBits ranges of slots, and
// each range is then ordered with counters that fit in the CPU's caches.
// One counting sort over all the slots at once spends most of its time in
// cache misses on its counters and its output (1M entries: 165 ms against
// 35). The pairs take 8 bytes an entry more; above slotOrderTwoLevelMax the
// one-level sort keeps the peak memory of an in-memory sort as it was.
func slotOrder(es []repairEntry, slot func(repairEntry) uint32, nslots uint32) (offs, ends []uint32, ok bool) {
	if len(es) == 0 || uint64(len(es)) > math.MaxUint32 || uint64(nslots) > 4*uint64(len(es))+1<<16 {
		return nil, nil, false
	}
	// One level counts by slot, in ends; two count by range first.
	twoLevel := len(es) <= slotOrderTwoLevelMax
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

// slotOrderTwoLevelMax: see slotOrder. A variable so tests can take the
// one-level sort.
var slotOrderTwoLevelMax = repairMemEntriesMax / 2

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

// parallelBuildMin: smaller indexes are built by one goroutine, where the
// second goroutine's start and the shared end of the file cost more than
// they save (at 100k objects the split was 0-18% faster in six
// interleaved runs on a quiet two-core machine). A variable so tests can
// split small tables.
var parallelBuildMin = 1 << 16

// repairSplitBuilds counts the builds that ran on two goroutines (for tests).
var repairSplitBuilds atomic.Int64

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
	pos, end int64 // entry indexes
	buf      []repairEntry
	raw      []byte
}

const runBufEntries = 4096

func (r *runIter) fill() error {
	r.buf = r.buf[:0]
	cnt := min(int64(runBufEntries), r.end-r.pos)
	if cnt <= 0 {
		return nil
	}
	if cap(r.raw) < int(cnt)*entrySize {
		r.raw = make([]byte, runBufEntries*entrySize)
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

// repairFile is the seam Open uses (see table.go): it rebuilds path, a file
// that was not closed properly, has bad free lists, or is being compacted by
// ForceRepair. h is the header as read, or nil.
var repairFile = func(path string, opts Options, h *header) error {
	_, err := repairTable(paramsFor(path, opts, opts.Progress))
	return err
}

func paramsFor(path string, opts Options, progress func(RepairProgress)) repairParams {
	p := repairParams{fs: opts.FS, path: path, kind: opts.Kind, keyPos: opts.KeyPos, progress: progress}
	if lo, hi, err := opts.slotBounds(); err == nil {
		if opts.MinSlots > 0 {
			p.minSlots = lo
		}
		if opts.MaxSlots > 0 {
			p.maxSlots = hi
		}
	}
	return p
}

// Repair rebuilds the table file at path unconditionally, as a ForceRepair
// open would, and reports what it found. Unlike Open it also works when the
// header itself is damaged, provided opts.Kind and opts.KeyPos say what the
// table was; a file in which that finds no object at all is refused with
// ErrNotDETS rather than turned into an empty table. progress, if not nil,
// is called as the scan and the rebuild advance. The caller must hold the
// file exclusively (package exclusive); a file open in this process is
// refused with ErrAlreadyOpen.
func Repair(path string, opts Options, progress func(RepairProgress)) (RepairStats, error) {
	if err := opts.validate(); err != nil {
		return RepairStats{}, err
	}
	c, err := claimPath(opts.FS, path)
	if err != nil {
		return RepairStats{}, err
	}
	defer c.release()
	return repairTable(paramsFor(path, opts, progress))
}
