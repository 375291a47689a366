package dets

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/godets/godets/etf"
)

// Check's native structure rules (docs/format-native.md §13.2): the
// superblock and both metas, the tree's checksums, every bucket header and
// every object record, levels against M and N, the allocator's tiling of
// [base, dataEnd) and the free record. Damaged objects are collected, not
// stopped at, so that `dets check` can name each one.

// maxCheckDamaged bounds the damaged objects a report lists; the count
// goes on past it.
const maxCheckDamaged = 10000

// DamagedObject is an object record of a native table that failed its own
// test (§6.3): its checksum, framing, term, or key placement.
type DamagedObject struct {
	Offset int64    // of the object record
	Slot   uint64   // the slot whose bucket holds it
	Key    etf.Term // the key element, when it decodes
	// KeyOK says Key was decoded. When the record failed its framing or
	// checksum the key is unverified: it was read from bytes that failed
	// their sum.
	KeyOK  bool
	Reason string
	sumOK  bool // the record passed its checksum
}

// Verified reports whether Key comes from a record whose checksum passed.
func (d DamagedObject) Verified() bool { return d.KeyOK && d.sumOK }

const reasonChecksum = "checksum mismatch"

// NativeMetaState is what Check found in one meta page of a native file.
type NativeMetaState struct {
	Page    int64  // file offset of the page
	Gen     uint64 // 0 when the meta is not valid
	Valid   bool
	Current bool
}

// CheckReport is the result of Table.CheckReport.
type CheckReport struct {
	// Objects is the number of objects read and found sound.
	Objects int64
	// Damaged lists native object records that failed their test, in
	// file order per slot, at most 10,000; DamagedCount counts them all,
	// DamagedBuckets the buckets they are in.
	Damaged        []DamagedObject
	DamagedCount   int64
	DamagedBuckets int64
	// Problems are the other findings, each a *CorruptionError, at most
	// 20 of them.
	Problems []error
	// Deep lists sound objects nested deeper than etf.MaxDepth, which OTP
	// writes and this library keeps but reads only as bytes (at most
	// 10,000, each at its bucket's offset; DeepCount counts them all).
	// They are not damage: Err ignores them.
	Deep      []DeepTermError
	DeepCount int64
	// Metas is the state of native's two meta pages (empty for otp9).
	Metas []NativeMetaState
	// LeakedBytes counts native space below the end of data that no
	// block, cell or free list accounts for: lost until a repair or a
	// compaction, never data, so not a problem. Files written before
	// fitFreeRecord may hold such space: a free record's block whose
	// upper half its freeLen did not name (docs/format-native.md §16,
	// step 10).
	LeakedBytes uint64

	path string
}

// Err returns nil for a sound table, or an error matching ErrCorrupt that
// joins the problems and a *CorruptionError for each listed damaged object.
func (r *CheckReport) Err() error {
	errs := slices.Clone(r.Problems)
	for _, d := range r.Damaged {
		if len(errs) >= maxCheckProblems {
			break
		}
		errs = append(errs, &CorruptionError{Path: r.path, Section: "object", Offset: d.Offset,
			Reason: fmt.Sprintf("slot %d: %s", d.Slot, d.Reason)})
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

// CheckReport runs Check's rules and returns what they found. The error is
// only for a table that cannot be checked at all (closed); damage is in
// the report.
func (t *Table) CheckReport() (CheckReport, error) {
	if err := t.begin(false); err != nil {
		return CheckReport{}, err
	}
	defer t.mu.Unlock()
	c := checker{t: t}
	c.run()
	c.report.Problems, c.report.path = c.problems, t.path
	return c.report, nil
}

// damaged records one damaged object record.
func (c *checker) damaged(d DamagedObject, bucketCounted *bool) {
	c.report.DamagedCount++
	if !*bucketCounted {
		*bucketCounted = true
		c.report.DamagedBuckets++
	}
	if len(c.report.Damaged) < maxCheckDamaged {
		c.report.Damaged = append(c.report.Damaged, d)
	}
}

// extent is a piece of [base, dataEnd) in the tiling check.
type extent struct {
	off, size uint64
	what      string
}

func (c *checker) runNative() {
	t := c.t
	nat := t.nat
	path := t.path
	hb := make([]byte, nativeBase)
	size, err := t.f.Size()
	if err == nil {
		err = readFull(t.f, hb, 0)
	}
	if err != nil {
		c.add("superblock", 0, "reading: %v", err)
		return
	}
	s, err := decodeNativeSuper(path, hb, size)
	if err != nil {
		c.problems = append(c.problems, err)
		return
	}
	if s != nat.super {
		c.add("superblock", 0, "superblock differs from the one read at open")
	}
	for _, page := range []int64{nativeMetaAOff, nativeMetaBOff} {
		m, err := decodeNativeMeta(path, hb[page:], page, &s, size)
		st := NativeMetaState{Page: page, Valid: err == nil, Current: page == nat.metaOff}
		if err == nil {
			st.Gen = m.gen
		}
		c.report.Metas = append(c.report.Metas, st)
		switch {
		case st.Current && err != nil:
			c.problems = append(c.problems, err)
		case st.Current && m != nat.meta:
			c.add("meta", page, "current meta differs from the table state")
		case !st.Current && err == nil && m.gen >= nat.meta.gen:
			c.add("meta", page, "fallback meta gen %d is not below the current gen %d", m.gen, nat.meta.gen)
		}
		// A fallback meta that is not valid is not damage: a new file's
		// meta B is zero, and a torn fallback is what the pair is for.
	}
	m := &nat.meta
	used := c.nativeTree(m)
	if used == nil {
		return
	}
	objects, keys, liveCells := c.nativeBuckets(&used)
	clean := c.report.DamagedCount == 0
	if clean && (objects != t.h.noObjects || keys != t.h.noKeys) {
		c.add("meta", nat.metaOff, "counts %d objects and %d keys, the buckets hold %d and %d", t.h.noObjects, t.h.noKeys, objects, keys)
	}
	c.nativeTiling(m, used, liveCells)
}

// nativeTree checks the root, parts and segments the current meta names,
// as they are on disk, and returns their extents (nil when the root
// fails: nothing below it can be placed).
func (c *checker) nativeTree(m *nativeMeta) []extent {
	t := c.t
	path, base := t.path, t.nat.super.base
	rb := make([]byte, m.rootLen)
	if err := readFull(t.f, rb, int64(m.rootOff)); err != nil {
		c.add("root", int64(m.rootOff), "reading: %v", err)
		return nil
	}
	parts, err := decodeNativeRoot(path, rb, m, base, nil)
	if err != nil {
		c.problems = append(c.problems, err)
		return nil
	}
	used := []extent{{m.rootOff, 1 << blockClassFor(m.rootLen), "root"}}
	pb := make([]byte, nativePageSize)
	var children [nativeSegsPerPart]nativeChild
	var es [nativeSlotsPerSeg]nativeEntry
	for p, pc := range parts {
		used = append(used, extent{pc.off, nativePageSize, fmt.Sprintf("part %d", p)})
		if err := readFull(t.f, pb, int64(pc.off)); err != nil {
			c.add("part", int64(pc.off), "reading: %v", err)
			continue
		}
		n := nativeSegsInPart(m.next, uint64(p))
		if err := decodeNativePart(path, pb, int64(pc.off), pc.sum, n, base, m.dataEnd, &children); err != nil {
			c.problems = append(c.problems, err)
			continue
		}
		for i, sc := range children[:n] {
			seg := p*nativeSegsPerPart + i
			used = append(used, extent{sc.off, nativePageSize, fmt.Sprintf("segment %d", seg)})
			if err := readFull(t.f, pb, int64(sc.off)); err != nil {
				c.add("segment", int64(sc.off), "reading: %v", err)
				continue
			}
			if err := decodeNativeSegment(path, pb, int64(sc.off), sc.sum, base, m.dataEnd, &es); err != nil {
				c.problems = append(c.problems, err)
			}
		}
	}
	return used
}

// nativeBuckets walks every slot's bucket (the table's current entries,
// so the epoch's writes too), appends the blocks buckets hold to used, and
// returns the counts of the buckets' objects and keys and the live cells
// by run.
func (c *checker) nativeBuckets(used *[]extent) (objects, keys uint64, cells map[uint64][]uint64) {
	t := c.t
	base := t.nat.super.base
	cells = map[uint64][]uint64{}
	var gs []group
	for slot := uint64(0); slot < t.h.next; slot++ {
		w, err := t.entry(slot)
		if err != nil {
			c.problems = append(c.problems, err)
			slot = slot/nativeSlotsPerSeg*nativeSlotsPerSeg + nativeSlotsPerSeg - 1 // the rest of its segment
			continue
		}
		if w.size == 0 {
			continue
		}
		e := nativeEntry(t.wordOf(w))
		if e.cellClass() != 0 {
			run := base + (e.off()-base)&^(nativeRunSize-1)
			cells[run] = append(cells[run], uint64(e))
		} else {
			*used = append(*used, extent{e.off(), e.room(), fmt.Sprintf("bucket of slot %d", slot)})
		}
		b := make([]byte, e.room())
		if err := t.readAt(b, int64(e.off())); err != nil {
			c.problems = append(c.problems, t.ioErr("bucket", int64(e.off()), err))
			continue
		}
		var o, k uint64
		gs, o, k = c.nativeBucket(slot, e, b, gs[:0])
		objects += o
		keys += k
	}
	return objects, keys, cells
}

// nativeBucket checks one bucket: its header, its level, every object
// record on its own, then the shared rules over the sound objects.
func (c *checker) nativeBucket(slot uint64, e nativeEntry, b []byte, gs []group) ([]group, uint64, uint64) {
	t := c.t
	off := int64(e.off())
	h, err := decodeNativeBucketHeader(t.path, b, off, e.room())
	if err != nil {
		c.problems = append(c.problems, err)
		return gs, 0, 0
	}
	if uint64(h.slot) != slot || h.level != t.nativeLevel(slot) {
		c.add("bucket", off, "bucket of slot %d level %d is in slot %d, which has level %d", h.slot, h.level, slot, t.nativeLevel(slot))
	}
	body, pos := b[:h.size], nativeBucketHeader
	mask := uint64(1)<<h.level - 1
	counted := false
	var objects uint64
	for pos < len(body) {
		recOff := off + int64(pos)
		enc, n, err := decodeNativeObject(t.path, body[pos:], recOff)
		if err != nil {
			// Step over the damage as repair does: a damaged length that
			// still fits would land inside a record.
			next := resyncNative(body, pos)
			objects += c.nativeDamagedRun(slot, off, body, pos, next, &counted)
			pos = next
			continue
		}
		objects++
		kenc, deep, why := nativeObjectKeyDeep(enc, t.keyPos)
		if deep != nil {
			c.deep(recOff, false, deep) // sound, too deep to decode: listed, as on otp9
		}
		if why == "" && !c.structural && nativeKeyHash(kenc)&mask != uint64(h.slot) {
			why = fmt.Sprintf("key does not hash to slot %d", h.slot)
		}
		if why != "" {
			d := DamagedObject{Offset: recOff, Slot: slot, Reason: why, sumOK: true}
			d.Key, d.KeyOK = keyOfRaw(enc, t.keyPos)
			c.damaged(d, &counted)
			pos += n
			continue
		}
		c.report.Objects++
		if len(gs) > 0 && sameStoredKey(gs[len(gs)-1].kenc, kenc) {
			g := &gs[len(gs)-1]
			g.objs = append(g.objs, object{enc: enc, kenc: kenc})
		} else {
			gs = append(gs, group{kenc: kenc, objs: []object{{enc: enc, kenc: kenc}}})
		}
		pos += n
	}
	for gi := range gs {
		g := &gs[gi]
		key, err := g.keyTerm(t.keyPos)
		if errors.Is(err, etf.ErrTooDeep) {
			continue // listed with its object above; nothing to order it by
		}
		if err != nil {
			c.add("object", off, "slot %d: %v", slot, err)
			continue
		}
		if gi > 0 && !c.structural && gs[gi-1].key != nil && etf.CompareExact(gs[gi-1].key, key) >= 0 {
			c.add("bucket", off, "slot %d: keys %v and %v out of order", slot, gs[gi-1].key, key)
		}
		if t.kind == Set && len(g.objs) != 1 {
			c.add("bucket", off, "slot %d: set key %v has %d objects", slot, key, len(g.objs))
		}
		if t.kind == Bag && !c.structural {
			for i := range g.objs {
				for j := i + 1; j < len(g.objs); j++ {
					if bytes.Equal(g.objs[i].enc, g.objs[j].enc) {
						c.add("bucket", off, "slot %d: bag key %v holds an object twice", slot, key)
					}
				}
			}
		}
	}
	return gs, objects, uint64(len(gs))
}

// nativeDamagedRun names the damaged records of body (a bucket read at
// off) from pos up to the next sound one at next, as many as repair drops
// there (chainStarts), and returns their number. Each key is read from the
// record's span, since its length word may be what is damaged.
func (c *checker) nativeDamagedRun(slot uint64, off int64, body []byte, pos, next int, counted *bool) uint64 {
	starts := chainStarts(body, pos, next)
	for i, at := range starts {
		end := next
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		d := DamagedObject{Offset: off + int64(at), Slot: slot, Reason: reasonChecksum}
		// No record before next passes (resyncNative stops at the first that does).
		if _, _, err := decodeNativeObject(c.t.path, body[at:], d.Offset); err != nil {
			d.Reason = reasonOf(err)
		}
		d.Key, d.KeyOK = keyOfRaw(damagedETF(body, at, end), c.t.keyPos)
		c.damaged(d, counted)
	}
	return uint64(len(starts))
}

// reasonOf is a corruption error's reason, or the error's text.
func reasonOf(err error) string {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}

// keyOfRaw decodes only the key element of the ETF bytes enc, which need
// not be sound (§13.2: the key of a record whose checksum failed).
func keyOfRaw(enc []byte, keyPos int) (etf.Term, bool) {
	k := keySpan(enc, keyPos)
	if k == nil {
		return nil, false
	}
	key, err := encodings.DecodeBody(k)
	if err != nil {
		return nil, false
	}
	return key, true
}

// nativeTiling checks that no two blocks or cells of [base, dataEnd)
// overlap, each being one of: a live node, a live bucket, a log block, the
// free record, free, quarantined or pending (§13.2); space in none is
// counted as leaked.
func (c *checker) nativeTiling(m *nativeMeta, used []extent, liveCells map[uint64][]uint64) {
	t := c.t
	nat := t.nat
	base := nat.super.base
	a := nat.alloc
	dataEnd := m.dataEnd
	if a == nil {
		b := make([]byte, m.freeLen)
		if err := readFull(t.f, b, int64(m.freeOff)); err != nil {
			c.add("freelist", int64(m.freeOff), "reading: %v", err)
			return
		}
		var err error
		if a, err = decodeNativeFree(t.path, b, int64(m.freeOff), m.freeSum, base, m.dataEnd); err != nil {
			c.problems = append(c.problems, err)
			return
		}
	} else {
		dataEnd = max(dataEnd, a.dataEnd())
	}
	fk := blockClassFor(m.freeLen)
	used = append(used, extent{m.freeOff, 1 << fk, "free record"})
	for _, blk := range nat.logBlocks {
		used = append(used, extent{blk, nativeLogBlockSize, "log block"})
	}
	for k := nativeMinBuddyClass; k <= nativeMaxBuddyClass; k++ {
		for _, off := range a.free[k] {
			if off < dataEnd {
				used = append(used, extent{off, 1 << k, "free block"})
			}
		}
	}
	for _, l := range []struct {
		bs   []nativeBlock
		what string
	}{{a.quar, "quarantined block"}, {a.pend, "pending block"}} {
		for _, blk := range l.bs {
			used = append(used, extent{blk.off, 1 << blk.k, l.what})
		}
	}
	runs := map[uint64]struct{}{}
	for off := range a.runs {
		runs[off] = struct{}{}
	}
	for off := range liveCells {
		runs[off] = struct{}{}
	}
	for off := range runs {
		used = append(used, extent{off, nativeRunSize, "run"})
		c.nativeRunCells(off, a.runs[off], liveCells[off])
	}
	slices.SortFunc(used, func(x, y extent) int { return cmpInt64(int64(x.off), int64(y.off)) })
	// Space in no block is leaked, not damage: no data can be there.
	at := base
	for _, b := range used {
		switch {
		case b.off < at:
			c.add("layout", int64(b.off), "%s (%d bytes) overlaps the block before it, which ends at %d", b.what, b.size, at)
		case b.off > at:
			c.report.LeakedBytes += b.off - at
		}
		// A free block may run past the end of data: free space goes on
		// there (a Sync that released a quarantine merges such blocks).
		if b.off+b.size > dataEnd && b.what != "free block" {
			c.add("layout", int64(b.off), "%s ends at %d, past the end of data %d", b.what, b.off+b.size, dataEnd)
		}
		at = max(at, b.off+b.size)
	}
	if at < dataEnd {
		c.report.LeakedBytes += dataEnd - at
	}
}

// nativeRunCells checks that no cell of the run at off is in two of the
// states live, free, quarantined and pending, and counts cells in none
// as leaked. r is the allocator's state of the run, nil when every cell
// is live.
func (c *checker) nativeRunCells(off uint64, r *nativeRun, live []uint64) {
	class := 0
	if r != nil {
		class = int(r.class)
	}
	var seen [nativeRunWords]uint64
	for _, w := range live {
		e := nativeEntry(w)
		if class == 0 {
			class = e.cellClass()
		}
		if e.cellClass() != class {
			c.add("layout", int64(e.off()), "cell of %d bytes in a run of %d-byte cells", e.room(), cellSize(class))
			continue
		}
		i := (e.off() - off) / cellSize(class)
		if seen[i/64]&(1<<(i%64)) != 0 {
			c.add("layout", int64(e.off()), "two buckets in one cell")
		}
		seen[i/64] |= 1 << (i % 64)
	}
	cells := cellsInRun(class)
	for i := range (cells + 63) / 64 {
		full := ^uint64(0)
		if n := cells - 64*i; n < 64 {
			full = 1<<n - 1
		}
		var f, p, q uint64
		if r != nil {
			f, p, q = r.free[i], r.pend[i], r.quar[i]
		}
		if both := (seen[i] & (f | p | q)) | (f & p) | (f & q) | (p & q); both != 0 {
			c.add("layout", int64(off), "run at %d: a cell is in two states", off)
			return
		}
		if lost := full &^ (seen[i] | f | p | q); lost != 0 {
			c.report.LeakedBytes += uint64(popcount(lost)) * cellSize(class)
		}
	}
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
