package dets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"

	"github.com/cespare/xxhash/v2"
)

// The full repair of a native file (docs/format-native.md §12): the
// pipeline of docs/repair.md with the native scan sources and writer.
//
//	shape    superblock and current meta, or the options when the
//	         superblock is damaged; the log of the meta's epoch applied
//	         as a recovery would (§11.2), so that a killed writer's
//	         acknowledged writes are kept
//	scan     the tree walk (§12.1) over the verified tree, every object
//	         checked on its own; the raw scan (§12.3) for the slots of a
//	         damaged tree node, or for the whole file without a meta
//	size     the distinct keys over two keys a slot, a whole segment
//	sort     the shared index of {offset, length, hash} (§12.2)
//	build    nativeBuilder into PATH.TMP, fsynced (§12.4)
//	replace  the shared rename and directory fsync

// nativeRepair is what a native repair learns about the old file.
type nativeRepair struct {
	super   nativeSuper
	superOK bool
	meta    nativeMeta
	metaOK  bool
	rootOK  bool
	parts   []nativeChild // the root's entries, when rootOK

	// The old table's shape after its log, and the log's slot entries.
	m, n, next uint64
	overlay    map[uint64]nativeEntry
	treeNext   uint64 // slots the tree covers (the meta's next)

	// damaged lists the slot ranges of tree nodes that failed; allRaw:
	// no meta or root, so every key comes from the raw scan.
	damaged []slotRange
	allRaw  bool

	maxSeq uint64 // the highest sequence number the old file holds

	// The new table: slot bounds, slot count and linear-hash shape.
	minSlots, maxSlots, newNext, newM, newN uint64

	found int64 // objects emitted

	checksumFailed, dropped, partial, nodes, ambiguous int64
}

// slotRange is the slots [lo, hi).
type slotRange struct{ lo, hi uint64 }

// rawSlot reports whether the key hash h belongs to the raw scan: its
// slot in the old table lies under a damaged node and the log did not
// rewrite it.
func (nr *nativeRepair) rawSlot(h uint64) bool {
	if nr.allRaw {
		return true
	}
	if len(nr.damaged) == 0 {
		return false
	}
	s, _ := nativeSlotLevel(h, nr.m, nr.n)
	if _, ok := nr.overlay[s]; ok {
		return false
	}
	for _, r := range nr.damaged {
		if s >= r.lo && s < r.hi {
			return true
		}
	}
	return false
}

// isNativeFile reports whether data starts like a native file (§4.1 step 2).
func isNativeFile(data []byte) bool {
	return len(data) >= nsOffVersion+4 && be.Uint32(data[nsOffVersion:]) == nativeVersionBE
}

// nativeStages runs the stages after openOld for a native file.
func (p *repairPlan) nativeStages() error {
	if err := p.guard.run(p.nativeShape); err != nil {
		return err
	}
	if err := p.guard.run(p.nativeScan); err != nil {
		return err
	}
	p.nativeSizeSlots()
	m, n := p.nat.newM, p.nat.newN
	order, err := p.idx.sorted(func(e repairEntry) uint32 { return uint32(slotOf(uint64(e.hash), m, n)) }, 0, p.data)
	if err != nil {
		return err
	}
	p.order = order
	p.stats.ExternalSort = p.idx.spilled
	if err := p.nativeBuild(); err != nil {
		return err
	}
	return p.replace()
}

// nativeShape reads the superblock, picks the meta, reads its log and
// root, and decides what the scan trusts.
func (p *repairPlan) nativeShape() error {
	nr := p.nat
	s, err := decodeNativeSuper(p.path, p.data, p.size)
	var rev *NativeRevisionError
	if errors.As(err, &rev) {
		return err // a later revision may mean other things by every field
	}
	if err == nil {
		nr.super, nr.superOK = s, true
		p.kind, p.keyPos = Kind(s.kind), int(s.keyPos)
		if p.wantKind != 0 && p.wantKind != p.kind {
			return openError(ErrKindMismatch, p.path)
		}
		if p.wantKeyPos != 0 && p.wantKeyPos != p.keyPos {
			return openError(ErrKeyPosMismatch, p.path)
		}
	} else {
		if p.wantKind == 0 || p.wantKeyPos == 0 {
			return fmt.Errorf("%w: %s: the native superblock is damaged (%v); give Options.Kind and Options.KeyPos to repair it", ErrCorrupt, p.path, err)
		}
		p.kind, p.keyPos = p.wantKind, p.wantKeyPos
		nr.super = newNativeSuper(p.kind, p.keyPos, nativeDefaultMinSlots, nativeDefaultMaxSlots, 0)
	}
	lo, hi := nr.super.minSlots, nr.super.maxSlots
	if p.natMin != 0 {
		lo = p.natMin
	}
	if p.natMax != 0 {
		hi = p.natMax
	}
	if lo > hi {
		return fmt.Errorf("%w: min slots %d above max slots %d", ErrInvalidOptions, lo, hi)
	}
	p.nat.minSlots, p.nat.maxSlots = lo, hi
	nr.allRaw = true
	if !nr.superOK {
		return nil
	}
	ma, errA := decodeNativeMeta(p.path, p.data[nativeMetaAOff:], nativeMetaAOff, &s, p.size)
	mb, errB := decodeNativeMeta(p.path, p.data[nativeMetaBOff:], nativeMetaBOff, &s, p.size)
	m, _, _, ok := chooseNativeMeta(ma, errA, mb, errB)
	if !ok {
		return nil
	}
	nr.meta, nr.metaOK = m, true
	nr.maxSeq = m.seq
	nr.m, nr.n, nr.next, nr.treeNext = m.m, m.n, m.next, m.next
	p.nativeReplay()
	rb := p.data[m.rootOff : m.rootOff+m.rootLen]
	parts, err := decodeNativeRoot(p.path, rb, &m, s.base, nil)
	if err != nil {
		nr.nodes++
		return nil
	}
	nr.parts, nr.rootOK, nr.allRaw = parts, true, false
	return nil
}

// nativeReplay applies the log of the current meta's epoch as a recovery
// would (§11.2 steps 1-4): the longest prefix of whole groups whose
// buckets verify becomes the overlay of slot entries and the shape the
// scan uses, up to the first group that contradicts the state.
func (p *repairPlan) nativeReplay() {
	nr := p.nat
	m, s := &nr.meta, &nr.super
	size := uint64(p.size)
	read := func(off uint64, n int) ([]byte, error) {
		if off > size || uint64(n) > size-off {
			return nil, fmt.Errorf("%w: %s: log read past the end", ErrCorrupt, p.path)
		}
		return p.data[off : off+uint64(n)], nil
	}
	lg, err := readNativeLog(p.path, read, s.revision, s.fileID, m.gen, m.seq, s.base, size)
	if err != nil || len(lg.recs) == 0 {
		return
	}
	// The record binds its bucket by seq, slot and header checksum, and
	// no space is reused within an epoch (§7.3), so a bucket that passes
	// is the one the record wrote. (verifyNativePut's test that the space
	// was free at the checkpoint is left out: it refuses cells of a run
	// carved after a Sync from quarantined and free blocks together.)
	verify := func(i int) bool {
		r := &lg.recs[i]
		e := nativeEntry(r.entry)
		if !e.writtenIn(s.base, size) {
			return false
		}
		b := p.data[e.off() : e.off()+e.room()]
		h, err := walkNativeBucket(p.path, b, int64(e.off()), e.room(), p.keyPos, nil)
		return err == nil && h.seq == r.seq && uint64(h.slot) == r.slot && nativeBucketSum(s.revision, b[:h.size]) == r.bsum
	}
	n := nativeReplayLength(lg.recs, verify)
	// Group by group, so that a record that contradicts the state (a
	// correct writer never writes one) ends the replay before its group
	// and the groups before it still count.
	cur := *m
	nr.overlay = map[uint64]nativeEntry{}
	for lo := 0; lo < n; {
		hi := lo
		for hi < n && !lg.recs[hi].endsGroup() {
			hi++
		}
		hi = min(hi+1, n)
		st, err := applyNativeLog(p.path, lg.recs[lo:hi], &cur, s.maxSlots)
		if err != nil {
			break
		}
		maps.Copy(nr.overlay, st.entries)
		cur.next, cur.m, cur.n, cur.noObjects, cur.noKeys, cur.seq = st.next, st.m, st.n, st.noObjects, st.noKeys, st.seq
		lo = hi
	}
	nr.m, nr.n, nr.next = cur.m, cur.n, cur.next
	nr.maxSeq = max(nr.maxSeq, cur.seq)
}

// nativeScan indexes every sound object: the tree walk, then the raw scan
// where the tree cannot speak.
func (p *repairPlan) nativeScan() error {
	nr := p.nat
	p.idx = &entryIndex{fs: p.fs, path: sortPath(p.path), limit: p.tune.repairMemEntries,
		twoLevelMax: p.tune.slotOrderTwoLevelMax, ownLengths: true}
	if nr.metaOK {
		p.idx.mem = make([]repairEntry, 0, min(nr.meta.noObjects+nr.meta.noObjects/8+1024, uint64(p.idx.limit), uint64(p.size/16)))
	}
	var err error
	if !nr.allRaw {
		err = p.treeWalk()
	}
	if err == nil && (nr.allRaw || len(nr.damaged) > 0) {
		err = p.rawScan()
	}
	if err != nil {
		return err
	}
	p.stats.ObjectsFound = nr.found
	p.stats.ObjectsDropped = nr.dropped
	p.stats.ObjectsChecksumFailed = nr.checksumFailed
	p.stats.BucketsPartial = nr.partial
	p.stats.NodesDamaged = nr.nodes
	p.stats.Ambiguous = nr.ambiguous
	if !nr.superOK && nr.found == 0 {
		return fmt.Errorf("%w: %s: damaged superblock and no objects found", ErrNotDETS, p.path)
	}
	return nil
}

// emit adds one sound object to the index and its key to the sketch.
func (p *repairPlan) emitNative(etfOff uint64, n int, h uint64) error {
	if uint64(n) > math.MaxUint32 {
		return fmt.Errorf("%w: %s: object at %d of %d bytes: repair indexes objects below 4 GiB", ErrNotSupported, p.path, etfOff, n)
	}
	p.nat.found++
	p.sketch.add(uint32(h))
	return p.idx.add(repairEntry{off: etfOff, n: uint32(n), hash: uint32(h)})
}

// treeWalk visits every slot of the verified tree (and those the log
// added) in slot order and reads its bucket (§12.1). A part or segment that
// fails its checksum puts its slots on the raw scan's list.
func (p *repairPlan) treeWalk() error {
	nr := p.nat
	s := &nr.super
	end := uint64(p.size)
	var children [nativeSegsPerPart]nativeChild
	var es [nativeSlotsPerSeg]nativeEntry
	reported := int64(0)
	for pi, pc := range nr.parts {
		used := nativeSegsInPart(nr.treeNext, uint64(pi))
		first := uint64(pi) * nativeSlotsPerPart
		if err := decodeNativePart(p.path, p.data[pc.off:pc.off+nativePageSize], int64(pc.off), pc.sum, used, s.base, nr.meta.dataEnd, &children); err != nil {
			nr.nodes++
			nr.damaged = append(nr.damaged, slotRange{first, first + uint64(used)*nativeSlotsPerSeg})
			continue
		}
		for si, sc := range children[:used] {
			lo := first + uint64(si)*nativeSlotsPerSeg
			if err := decodeNativeSegment(p.path, p.data[sc.off:sc.off+nativePageSize], int64(sc.off), sc.sum, s.base, end, &es); err != nil {
				nr.nodes++
				nr.damaged = append(nr.damaged, slotRange{lo, lo + nativeSlotsPerSeg})
				clear(es[:])
				// The log's entries for these slots are still good.
			} else if lo >= nr.next {
				continue
			}
			for i := range uint64(nativeSlotsPerSeg) {
				slot := lo + i
				e, logged := nr.overlay[slot]
				if !logged {
					e = es[i]
				}
				if err := p.readSlot(slot, e); err != nil {
					return err
				}
			}
			// Progress by the share of slots walked: the segments lie
			// anywhere in the file, so their offsets would not ascend.
			if done := int64(float64(p.size) * float64(lo+nativeSlotsPerSeg) / float64(nr.next)); p.progress != nil && done-reported > progressGap {
				reported = done
				p.progress(RepairProgress{Phase: "scan", BytesScanned: min(done, p.size), BytesTotal: p.size, Objects: nr.found})
			}
		}
	}
	// Slots that growth in the log added past the tree's.
	for slot := nr.treeNext; slot < nr.next; slot++ {
		if err := p.readSlot(slot, nr.overlay[slot]); err != nil {
			return err
		}
	}
	return nil
}

// readSlot reads the bucket that entry e names for slot (§12.1): with a
// sound header, its records up to its size; with a header that fails, by
// their framing to the end of the cell or block, the slot and level coming
// from the entry's position.
func (p *repairPlan) readSlot(slot uint64, e nativeEntry) error {
	nr := p.nat
	if e == 0 {
		return nil
	}
	if !e.writtenIn(nr.super.base, uint64(p.size)) {
		nr.dropped++ // a log entry cannot name this; count the bucket's loss
		return nil
	}
	off, room := e.off(), e.room()
	b := p.data[off : off+room]
	_, level := nativeSlotLevel(slot, nr.m, nr.n)
	h, err := decodeNativeBucketHeader(p.path, b, int64(off), room)
	exact := err == nil && uint64(h.slot) == slot && int(h.level) == level
	if exact {
		b = b[:h.size]
		nr.maxSeq = max(nr.maxSeq, h.seq)
	}
	mask := uint64(1)<<level - 1
	w := recordWalk{path: p.path, keyPos: p.keyPos, exact: exact}
	err = w.walk(b, off, func(etfOff uint64, n int, h uint64) error {
		if h&mask != slot {
			nr.dropped++
			return nil
		}
		return p.emitNative(etfOff, n, h)
	})
	p.countWalk(&w)
	return err
}

// countWalk adds a walk's drops to the stats.
func (p *repairPlan) countWalk(w *recordWalk) {
	nr := p.nat
	nr.dropped += w.failed + w.unsound
	nr.checksumFailed += w.failed
	if w.failed+w.unsound > 0 && w.kept > 0 {
		nr.partial++
	}
}

// recordWalk reads the object records of one bucket body, each checked on
// its own (§6.3, §12.1).
type recordWalk struct {
	path   string
	keyPos int
	// exact: the body is a bucket's records and nothing else (its header
	// passed). Otherwise it runs to the end of a cell or block whose tail
	// may hold zeros or an older bucket's bytes: a zero tail ends the
	// walk, and so does a key below the one before it (keys ascend in a
	// bucket, so it is a stale tail).
	exact bool

	failed  int64 // records whose framing or checksum failed
	unsound int64 // records that passed their checksum but hold no sound object
	kept    int64
}

// walk calls emit for each sound record of body (read at off) from byte
// nativeBucketHeader on, with the ETF's offset, its length and its key's
// hash. A record that fails is skipped to the next one whose checksum
// passes (resync).
func (w *recordWalk) walk(body []byte, off uint64, emit func(etfOff uint64, n int, h uint64) error) error {
	return w.walkFrom(body, off, nativeBucketHeader, emit)
}

func (w *recordWalk) walkFrom(body []byte, off uint64, pos int, emit func(etfOff uint64, n int, h uint64) error) error {
	var lastKey []byte
	for pos < len(body) {
		if !w.exact && allZero(body[pos:]) {
			return nil
		}
		enc, n, err := decodeNativeObject(w.path, body[pos:], int64(off)+int64(pos))
		if err != nil {
			q := resyncNative(body, pos)
			if !w.exact && q == len(body) {
				return nil // the tail of a cell or block, not a record
			}
			w.failed += int64(chainCount(body, pos, q))
			pos = q
			continue
		}
		kenc, why := nativeObjectKey(enc, w.keyPos)
		if why != "" {
			w.unsound++
			pos += n
			continue
		}
		if !w.exact && lastKey != nil {
			if c, ok := encodings.CompareBodies(kenc, lastKey); ok && c < 0 {
				return nil
			}
		}
		lastKey = kenc
		if err := emit(off+uint64(pos+n-len(enc)), len(enc), nativeKeyHash(kenc)); err != nil {
			return err
		}
		w.kept++
		pos += n
	}
	return nil
}

// resyncNative finds the next record after a damaged one at pos: the
// first later offset where a record's checksum passes (§12.1), so that a
// length damaged to point past the next record cannot skip it. A
// candidate is a minimal uvarint length that fits, followed by an ETF
// version byte and a tuple tag, before its checksum is computed. It
// returns len(body) when there is none. Check steps over damage with it
// too, so that it names the records repair drops.
func resyncNative(body []byte, pos int) int {
	for q := pos + 1; q+nativeMinObjectRecord <= len(body); q++ {
		if recordPasses(body, q) {
			return q
		}
	}
	return len(body)
}

// recordPasses reports whether a record whose checksum matches starts at q.
func recordPasses(body []byte, q int) bool {
	if q+nativeMinObjectRecord > len(body) {
		return false
	}
	l, v := binary.Uvarint(body[q+8 : min(len(body), q+8+binary.MaxVarintLen64)])
	if v <= 0 || l < 2 || v != uvarintLen(l) || l > uint64(len(body)-q-8-v) {
		return false
	}
	e := q + 8 + v
	if body[e] != 131 || (body[e+1] != 104 && body[e+1] != 105) {
		return false
	}
	return le.Uint64(body[q:]) == xxhash.Sum64(body[q+8:e+int(l)])
}

// chainCount is the number of records between a damaged record at from and
// the next sound one at to (chainStarts).
func chainCount(body []byte, from, to int) int { return len(chainStarts(body, from, to)) }

// chainStarts returns the offsets of the records between a damaged record
// at from and the next sound one at to: the steps of the length chain when
// it lands on to exactly and each step after the first lands on what
// starts like a record (an ETF version byte and a tuple tag: random bytes
// rarely do), else from alone (the lengths themselves are damaged). Repair
// counts these and Check names them, so that both agree.
func chainStarts(body []byte, from, to int) []int {
	var starts []int
	at := from
	for at < to {
		if at+8 >= len(body) {
			return []int{from}
		}
		l, v := binary.Uvarint(body[at+8 : min(len(body), at+8+binary.MaxVarintLen64)])
		if v <= 0 || l < 2 || l > uint64(len(body)-at-8-v) {
			return []int{from}
		}
		if e := at + 8 + v; at != from && (body[e] != 131 || (body[e+1] != 104 && body[e+1] != 105)) {
			return []int{from}
		}
		starts = append(starts, at)
		at += 8 + v + int(l)
	}
	if at != to {
		return []int{from}
	}
	return starts
}

// damagedETF returns the ETF bytes of the damaged record at at, which
// ends at end (the next start chainStarts or resyncNative gives), or nil.
// The length word itself may be damaged, so its width is the one that
// makes the record fill the span exactly; when none does (damaged records
// run together), the width read there.
func damagedETF(body []byte, at, end int) []byte {
	g := end - at - 8
	if g < 2 {
		return nil
	}
	for v := 1; v <= binary.MaxVarintLen64 && v < g; v++ {
		if uvarintLen(uint64(g-v)) == v {
			return body[at+8+v : end]
		}
	}
	if _, v := binary.Uvarint(body[at+8 : min(end, at+8+binary.MaxVarintLen64)]); v > 0 && v < g {
		return body[at+8+v : end]
	}
	return nil
}

// nativeSizeSlots sizes the new table: the distinct keys at two a slot,
// rounded up to a whole segment, within the slot bounds (§5.3).
func (p *repairPlan) nativeSizeSlots() {
	keys := uint64(p.sketch.estimate())
	next := (keys/2 + nativeSlotsPerSeg - 1) / nativeSlotsPerSeg * nativeSlotsPerSeg
	next = min(max(next, p.nat.minSlots), p.nat.maxSlots)
	p.nat.newNext = next
	p.nat.newM, p.nat.newN = hashParamsFor(next)
	p.stats.Slots = int64(next)
}

// nativeBuild writes PATH.TMP from the sorted index: per slot, the kind's
// insert rule over its objects in offset order, then the bucket.
func (p *repairPlan) nativeBuild() error {
	p.tmp = tmpPath(p.path)
	if err := checkWritable(p.fs, p.path); err != nil {
		return err
	}
	out, err := createFresh(p.fs, p.tmp, 0o644)
	if err != nil {
		return err
	}
	if err := keepOwnerAndMode(p.fs, p.path, out); err != nil {
		out.Close()
		p.fs.Remove(p.tmp)
		return err
	}
	err = p.guard.run(func() error { return p.nativeBuildInto(out) })
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.fs.Remove(p.tmp)
		return err
	}
	if p.progress != nil {
		p.progress(RepairProgress{Phase: "write", BytesScanned: p.size, BytesTotal: p.size, Objects: p.stats.Objects})
	}
	return nil
}

func (p *repairPlan) nativeBuildInto(out File) error {
	s := p.nat.super
	s.minSlots, s.maxSlots = p.nat.minSlots, p.nat.maxSlots
	if p.nativeBase != 0 {
		s.base = p.nativeBase
	}
	nb, err := newNativeBuilder(out, p.tmp, s, p.nat.newNext, p.nat.maxSeq)
	if err != nil {
		return err
	}
	var done int64
	err = streamNative(nb, p.order, p.data, nil, p.kind, p.keyPos, func() {
		if done++; p.progress != nil && done%(1<<16) == 0 {
			p.progress(RepairProgress{Phase: "write", BytesScanned: p.size, BytesTotal: p.size, Objects: done})
		}
	})
	if err != nil {
		return err
	}
	if _, err := nb.finish(); err != nil {
		return err
	}
	p.stats.Objects, p.stats.Keys = int64(nb.objects), int64(nb.keys)
	return nil
}

// removeRepairLeftovers removes the PATH.TMP and PATH.TMP.sort that a
// killed repair may have left next to the table. A recovery (§11.2) is the
// repair of a native file not closed properly; like every repair, which
// reuses a stale PATH.TMP and removes a stale PATH.TMP.sort, it leaves
// neither behind (docs/repair.md). Errors are ignored: most often there
// is no such file.
func (t *Table) removeRepairLeftovers() {
	if t.fsys == nil {
		return
	}
	t.fsys.Remove(tmpPath(t.path))
	t.fsys.Remove(sortPath(t.path))
}

// streamNative feeds the sorted index to nb, for a repair and a
// conversion: per native slot, the kind's insert rule over its objects in
// index order, then the bucket. An entry's bytes are in data, or in staged
// from len(data) on (a conversion's objects encoded anew). each, if set,
// is called after every object.
func streamNative(nb *nativeBuilder, order entryIter, data, staged []byte, kind Kind, keyPos int, each func()) error {
	sb := slotBuilder{data: data, kind: kind, keyPos: keyPos}
	cur := int64(-1)
	flush := func() error {
		if cur < 0 || len(sb.groups) == 0 {
			return nil
		}
		err := nb.addBucket(uint64(cur), sb.groups)
		clear(sb.groups)
		sb.groups = sb.groups[:0]
		clear(sb.slab)
		sb.slab = sb.slab[:0]
		return err
	}
	for {
		e, es, ok, err := order.next()
		if err != nil {
			return err
		}
		if !ok || int64(es) != cur {
			if err := flush(); err != nil {
				return err
			}
		}
		if !ok {
			return nil
		}
		cur = int64(es)
		src, off := data, e.off
		if off >= uint64(len(data)) {
			src, off = staged, off-uint64(len(data))
		}
		if off+uint64(e.n) > uint64(len(src)) {
			return fmt.Errorf("dets: index entry beyond its source")
		}
		if err := sb.insert(src[off:off+uint64(e.n)], e.off); err != nil {
			return err
		}
		if each != nil {
			each()
		}
	}
}
