package dets

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/godets/godets/etf"
)

// The native engine, step 4 of docs/format-native.md §16: create, open of
// a file closed properly, the write path of §10.1 (a bucket into free
// space plus a log record, no write in place) and the checkpoint of §10.3
// for Sync and Close; growth is native_grow.go (step 5). Not built yet:
// recovery of a file not closed properly (step 6) and repair (step 7).

// nativeLayout is the native format's layout (§15.1).
var nativeLayout = layout{
	tag:         tagNative,
	segShift:    9, // nativeSlotsPerSeg
	entrySize:   8,
	keysPerSlot: 2,
}

// nativeState is what a native table keeps beside the shared Table
// fields. The epoch's slot entries live in the segment cache (the
// overlay of §10.4): a segment with a changed entry stays cached and is
// listed in dirty until the checkpoint copies it.
type nativeState struct {
	super   nativeSuper
	meta    nativeMeta // the current meta
	metaOff int64      // its page
	parts   []nativeChild
	segs    []nativeChild // per segment: its block and checksum (see nativeLoadPart)
	dirty   map[uint64]struct{}
	alloc   *nativeAlloc // loaded from the free record at the first write
	seq     uint64       // the last sequence number issued
	// nonce marks this write session's log records (revision 2, §10.2):
	// drawn at the first record, so that a session that starts from the
	// same meta as one lost to a power loss never continues its log.
	nonce uint64

	// The epoch's log: the page or block being filled and its next record.
	logPage   uint64
	logSlots  int
	logIdx    int
	logIndex  uint64   // the page's index in the epoch (0: the head page)
	logBlocks []uint64 // the epoch's log blocks, freed by its checkpoint
	records   int      // records of the epoch, LINKs included

	// The counts of the bucket parsed last, so that a write's log record
	// can carry its change of the counts (dObj, dKeys).
	readPtr           int64
	readKeys, readObj int
	readSeq           uint64 // the bucket's seq: above meta.seq, it is the epoch's

	// A log page's header and a record, as writeRec writes them: a
	// buffer of its own, since a local one would escape to the heap.
	recBuf [nativeLogHeader + nativeLogRecord]byte

	// lookup's parse buffers, reused under t.mu.
	lgs   []group
	lobjs []object

	// pendBytes is the room of the cells and blocks the epoch's writes
	// made pending: with records, what the checkpoint budget watches.
	pendBytes uint64

	// rebuilt: the tree was replaced (nativeRebuild), so the next
	// checkpoint runs even without log records.
	rebuilt bool

	// A growth step's plan and object records (nativeGrow), reused.
	growPlan []nativeSplit
	growBuf  []byte

	nativeRecoverState // native_recover.go
}

// nativeLogBlockClass is the buddy class of a log block (nativeLogBlockSize).
const nativeLogBlockClass = 16

// nativeSlotBounds is slotBounds for a new native file: powers of two in
// [512, 2^32], 512 and 2^32 by default.
func (o *Options) nativeSlotBounds() (uint64, uint64, error) {
	if o.MinSlots < 0 || o.MaxSlots < 0 {
		return 0, 0, fmt.Errorf("%w: negative slot count", ErrInvalidOptions)
	}
	lo := uint64(nativeDefaultMinSlots)
	if o.MinSlots > int(lo) {
		lo = min(uint64(pow2ceil(int64(o.MinSlots))), nativeMaxSlots)
	}
	hi := uint64(nativeDefaultMaxSlots)
	if o.MaxSlots > 0 {
		hi = min(uint64(pow2ceil(max(int64(o.MaxSlots), nativeSlotsPerSeg))), nativeMaxSlots)
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("%w: MinSlots %d above MaxSlots %d", ErrInvalidOptions, o.MinSlots, o.MaxSlots)
	}
	return lo, hi, nil
}

// createNative writes a new empty native file (§3): every page but meta
// A, an fsync so that the superblock is durable before any meta, then
// meta A and a second fsync; then it opens the file as open would.
func (t *Table) createNative(opts *Options) error {
	lo, hi, err := opts.nativeSlotBounds()
	if err != nil {
		return err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	s := newNativeSuper(t.kind, t.keyPos, lo, hi, le.Uint64(id[:]))
	if r := t.tune.nativeRevision; r != 0 {
		s.revision = r
	}
	img, _, err := nativeEmptyImage(&s)
	if err != nil {
		return err
	}
	metaPage := slices.Clone(img[nativeMetaAOff : nativeMetaAOff+nativePageSize])
	clear(img[nativeMetaAOff : nativeMetaAOff+nativePageSize])
	if _, err := t.f.WriteAt(img, 0); err != nil {
		return t.wrote(err)
	}
	if err := t.f.Sync(); err != nil {
		return t.wrote(err)
	}
	if _, err := t.f.WriteAt(metaPage, nativeMetaAOff); err != nil {
		return t.wrote(err)
	}
	if err := t.f.Sync(); err != nil {
		return t.wrote(err)
	}
	_, err = t.loadNative(&Options{Repair: NoRepair}, int64(len(img)))
	return err
}

// nativeHeaderPool holds the buffers of the header pages loadNative reads,
// which are done with when it returns: an open allocates no 20 KiB.
var nativeHeaderPool = sync.Pool{New: func() any { return new([nativeBase]byte) }}

// loadNative is load for a file whose version word is NAT1: the tests of
// §4.1, the choice of meta (§4.2), the tree's root and parts, and the
// decision table of §11.5. It only reads.
func (t *Table) loadNative(opts *Options, size int64) (*repairRequest, error) {
	if size < nativeBase {
		return nil, openError(ErrNotDETS, t.path)
	}
	hp := nativeHeaderPool.Get().(*[nativeBase]byte)
	defer nativeHeaderPool.Put(hp)
	hb := hp[:]
	if err := readFull(t.f, hb, 0); err != nil {
		return nil, err
	}
	s, err := decodeNativeSuper(t.path, hb, size)
	if err != nil {
		return nil, err
	}
	ma, errA := decodeNativeMeta(t.path, hb[nativeMetaAOff:], nativeMetaAOff, &s, size)
	mb, errB := decodeNativeMeta(t.path, hb[nativeMetaBOff:], nativeMetaBOff, &s, size)
	m, page, _, ok := chooseNativeMeta(ma, errA, mb, errB)
	needs := func(reason error) (*repairRequest, error) {
		switch {
		case opts.Repair == NoRepair:
			return nil, fmt.Errorf("%w: %s: %w", ErrNeedsRepair, t.path, reason)
		case opts.ReadOnly:
			return nil, fmt.Errorf("%w: %s: %w", ErrNotClosed, t.path, reason)
		}
		return &repairRequest{}, nil // §11.5: the full repair, with the raw scan (native_repair.go)
	}
	if !ok {
		return needs(nativeMetaErr(errA, errB))
	}
	if opts.Kind != 0 && Kind(s.kind) != opts.Kind {
		return nil, fmt.Errorf("%w: %s is a %s, not a %s", ErrKindMismatch, t.path, Kind(s.kind), opts.Kind)
	}
	if opts.KeyPos != 0 && int(s.keyPos) != opts.KeyPos {
		return nil, fmt.Errorf("%w: %s has key position %d, not %d", ErrKeyPosMismatch, t.path, s.keyPos, opts.KeyPos)
	}
	nat := &nativeState{super: s, meta: m, metaOff: page, seq: m.seq, dirty: map[uint64]struct{}{}}
	// The superblock and metas are decoded: their pages' buffer, below
	// the log heads that §11.1 reads, holds a small root.
	var rb []byte
	if m.rootLen <= nativeLogHeadOff {
		rb = hb[:m.rootLen]
	} else {
		rb = make([]byte, m.rootLen)
	}
	if err := readFull(t.f, rb, int64(m.rootOff)); err != nil {
		return nil, t.ioErr("root", int64(m.rootOff), err)
	}
	if nat.parts, err = decodeNativeRoot(t.path, rb, &m, s.base, nil); err != nil {
		return needs(err)
	}
	nsegs := m.next / nativeSlotsPerSeg
	// The parts are read at the first access to one of their segments
	// (nativeLoadPart): a clean open reads the root and no part, and a
	// damaged part fails the reads under it, not the open (§11.5).
	nat.segs = make([]nativeChild, nsegs)
	// §11.1: closed properly unless the first record of the epoch's log passes.
	head := nativeLogHead(m.gen)
	recovering := false
	lb := hb[head : head+2*nativeLogRecord]
	if h, why := parseNativeLogBlock(lb); why == "" && h.fileID == s.fileID && h.epoch == m.gen && h.index == 0 {
		if r, err := decodeNativeLogRec(t.path, lb[nativeLogHeader:], int64(head)+nativeLogHeader); err == nil && nativeLogFollows(&r, m.gen, m.seq) {
			if opts.Repair == NoRepair || opts.ReadOnly {
				return needs(errors.New("not closed properly"))
			}
			recovering = true // §11.2 (AutoRepair)
		}
	}
	// ForceRepair always runs the full repair of §12, on a file not
	// closed properly too: the repair applies the epoch's log itself, then
	// reads every object, so damage the log does not cover is found.
	if opts.Repair == ForceRepair {
		if opts.ReadOnly {
			return nil, fmt.Errorf("%w: forced repair of %s needs read-write access", ErrReadOnly, t.path)
		}
		return &repairRequest{}, nil // the full repair of §12 (native_repair.go)
	}
	t.lay = nativeLayout
	t.nat = nat
	t.kind, t.keyPos = Kind(s.kind), int(s.keyPos)
	t.h = header{shape: shape{m: m.m, n: m.n, next: m.next, minSlots: s.minSlots, maxSlots: s.maxSlots,
		noObjects: m.noObjects, noKeys: m.noKeys}}
	t.segCache = make([]*[slotsPerSeg]slotWord, m.next/slotsPerSeg)
	t.entryReads = singleEntryReads // a segment is verified whole (§5.1)
	t.fileEnd = int64(m.dataEnd)
	t.dirty = false
	t.startEpoch()
	if !recovering && !opts.ReadOnly {
		// A writable open loads the allocator now, not at the first
		// write: a damaged free record is then a repair decision, as a
		// malformed otp9 free list is, instead of an error on every write.
		if err := t.nativeBeginWrite(); errors.Is(err, ErrCorrupt) {
			return needs(err)
		} else if err != nil {
			return nil, err
		}
	}
	if recovering {
		if err := t.nativeRecover(); errors.Is(err, errNativeFallback) {
			return &repairRequest{}, nil // §11.3: recovery gives way to the full repair
		} else if err != nil {
			return nil, err
		}
		t.removeRepairLeftovers()
	}
	return nil, nil
}

// startEpoch points the log writer at the head page of the current meta's
// epoch.
func (t *Table) startEpoch() {
	nat := t.nat
	nat.logPage, nat.logSlots, nat.logIdx, nat.logIndex = nativeLogHead(nat.meta.gen), nativeHeadRecords, 0, 0
	nat.logBlocks, nat.records = nat.logBlocks[:0], 0
}

// nativeSegment is segment for native: it reads the 512-entry segment
// that holds cache page s, verifies it against its part's checksum and
// caches both of its pages.
func (t *Table) nativeSegment(s uint64) (*[slotsPerSeg]slotWord, error) {
	nat := t.nat
	seg := s / 2
	if err := t.nativeLoadPart(seg / nativeSegsPerPart); err != nil {
		return nil, err
	}
	c := nat.segs[seg]
	b := make([]byte, nativePageSize)
	if err := t.readAt(b, int64(c.off)); err != nil {
		return nil, t.ioErr("segment", int64(c.off), err)
	}
	var es [nativeSlotsPerSeg]nativeEntry
	if err := decodeNativeSegment(t.path, b, int64(c.off), c.sum, nat.super.base, uint64(t.fileEnd), &es); err != nil {
		return nil, err
	}
	for half := range uint64(2) {
		pg := new([slotsPerSeg]slotWord)
		for i := range pg {
			pg[i] = slotWord(es[half*slotsPerSeg+uint64(i)])
		}
		t.segCache[2*seg+half] = pg
	}
	return t.segCache[s], nil
}

// nativeLoadPart reads and verifies part p, if it is on disk and not read
// yet, and copies its children into segs: a part is read at the first
// access to one of its segments (§5.1), not at open. A part on disk has
// at least one child, whose offset is never 0, so a zero first child
// marks it unread; a part growth added is not on disk (offset 0) until
// the checkpoint writes it with all its children. The part has the
// children of the last checkpoint's next: growth since then appends past
// them, and those stay as they are.
func (t *Table) nativeLoadPart(p uint64) error {
	nat := t.nat
	pc, lo := nat.parts[p], int(p)*nativeSegsPerPart
	if pc.off == 0 || nat.segs[lo].off != 0 {
		return nil
	}
	n := nativeSegsInPart(nat.meta.next, p)
	b := make([]byte, nativePageSize)
	if err := t.readAt(b, int64(pc.off)); err != nil {
		return t.ioErr("part", int64(pc.off), err)
	}
	var children [nativeSegsPerPart]nativeChild
	if err := decodeNativePart(t.path, b, int64(pc.off), pc.sum, n, nat.super.base, uint64(t.fileEnd), &children); err != nil {
		return err
	}
	copy(nat.segs[lo:lo+n], children[:n])
	return nil
}

// nativeBeginWrite loads the allocator from the current meta's free
// record before the first write (§7.5: read-only opens never parse it).
func (t *Table) nativeBeginWrite() error {
	nat := t.nat
	if nat.alloc != nil {
		return nil
	}
	m := &nat.meta
	n, ok := memLen(m.freeLen)
	if !ok {
		return corrupt(t.path, "meta", nat.metaOff, "a free record of %d bytes, more than this platform can hold", m.freeLen)
	}
	b := make([]byte, n)
	if err := readFull(t.f, b, int64(m.freeOff)); err != nil {
		return t.ioErr("freelist", int64(m.freeOff), err)
	}
	a, err := decodeNativeFree(t.path, b, int64(m.freeOff), m.freeSum, nat.super.base, m.dataEnd)
	if err != nil {
		return err
	}
	nat.alloc = a
	return nil
}

// nativeLevel is the level of slot's bucket (§9).
func (t *Table) nativeLevel(slot uint64) uint8 {
	l := uint8(bits.Len64(t.h.m) - 1)
	if slot < t.h.n || slot >= t.h.m { // split already: mask 2M-1
		l++
	}
	return l
}

// nativeBucketBody checks the header of the bucket b read for slot from
// e and returns the bucket's bytes, header included.
func (t *Table) nativeBucketBody(slot uint64, e slotEntry, b []byte) ([]byte, error) {
	h, err := decodeNativeBucketHeader(t.path, b, e.ptr, uint64(e.size))
	if err != nil {
		return nil, err
	}
	if uint64(h.slot) != slot || h.level != t.nativeLevel(slot) {
		return nil, corrupt(t.path, "bucket", e.ptr, "bucket of slot %d level %d is in slot %d, level %d", h.slot, h.level, slot, t.nativeLevel(slot))
	}
	return b[:h.size], nil
}

// parseNative parses a native bucket (read by readBucket) into key
// groups, verifying every object record (§6.3), reusing gs and objs.
func (t *Table) parseNative(b []byte, e slotEntry, gs []group, objs []object) ([]group, []object, error) {
	gs, objs = gs[:0], objs[:0]
	h, err := walkNativeBucket(t.path, b, e.ptr, uint64(e.size), t.keyPos, func(recOff int64, enc, kenc []byte) error {
		// The walk verified the record's checksum: a rewrite reuses it.
		objs = append(objs, object{enc: enc, kenc: kenc, sum: le.Uint64(b[recOff-e.ptr:])})
		return nil
	})
	if err != nil {
		return nil, objs, err
	}
	for i := range objs {
		if t.kind != Set && len(gs) > 0 {
			if g := &gs[len(gs)-1]; sameStoredKey(g.kenc, objs[i].kenc) {
				g.objs = objs[i-len(g.objs) : i+1 : i+1]
				continue
			}
		} else if len(gs) > 0 && sameStoredKey(gs[len(gs)-1].kenc, objs[i].kenc) {
			return nil, objs, corrupt(t.path, "object", e.ptr, "set bucket of slot holds a key twice")
		}
		gs = append(gs, group{kenc: objs[i].kenc, objs: objs[i : i+1 : i+1]})
	}
	t.nat.readPtr, t.nat.readKeys, t.nat.readObj, t.nat.readSeq = e.ptr, len(gs), len(objs), h.seq
	return gs, objs, nil
}

// nativeLookup is lookup's search of a native bucket whose header
// readBucket checked (§6.3). Every record's framing and checksum are
// verified, since a damaged key must not turn a present key into "not
// found"; the records of the key looked up are then checked as terms by
// their decoding (Validate for Member), as otp9's lookupInBody does. Their
// key is the one looked up, so it hashes into this slot: no key is hashed.
func (t *Table) nativeLookup(b []byte, e slotEntry, ka *keyArg, wantObjs bool) ([]etf.Term, bool, error) {
	nat := t.nat
	objs := nat.lobjs[:0]
	for pos := nativeBucketHeader; pos < len(b); {
		recOff := e.ptr + int64(pos)
		enc, n, err := decodeNativeObject(t.path, b[pos:], recOff)
		if err != nil {
			return nil, false, err
		}
		kenc := keySpan(enc, t.keyPos)
		if kenc == nil {
			return nil, false, corrupt(t.path, "object", recOff, "not a tuple with a key element")
		}
		if g := (group{kenc: kenc}); cmpGroupKey(&g, ka, t.keyPos) == 0 {
			if t.kind == Set && len(objs) > 0 {
				return nil, false, corrupt(t.path, "object", recOff, "set bucket holds a key twice")
			}
			objs = append(objs, object{enc: enc, kenc: kenc})
		}
		pos += n
	}
	nat.lobjs = objs // they point into t.rbuf, which t keeps anyway
	if len(objs) == 0 {
		return nil, false, nil
	}
	if !wantObjs {
		for i := range objs {
			if err := validateStored(objs[i].enc); err != nil {
				return nil, false, corrupt(t.path, "object", e.ptr, "undecodable object: %v", err)
			}
		}
		return nil, true, nil
	}
	if len(objs) == 1 { // a set's: the result and the term share an allocation
		out, err := encodings.DecodeOne(objs[0].enc)
		if err != nil {
			return nil, false, decodeFailure(t.path, e.ptr, err, "slot object undecodable: %v", err)
		}
		return out, true, nil
	}
	out := make([]etf.Term, len(objs))
	for j := range objs {
		v, err := objs[j].decoded()
		if err != nil {
			return nil, false, decodeFailure(t.path, e.ptr, err, "slot object undecodable: %v", err)
		}
		out[j] = v
	}
	return out, true, nil
}

// nativeWriteSlot is writeSlot for native (§10.1): the new bucket goes
// into a new cell or block, one PUT (or EMPTY) record goes to the log, the
// slot's new entry into the overlay, and the old cell becomes pending.
// Nothing is written in place and nothing is fsynced.
func (t *Table) nativeWriteSlot(slot uint64, old slotEntry, gs []group) error {
	nat := t.nat
	if len(gs) == 0 && old.size == 0 {
		return nil
	}
	oldKeys, oldObjs, oldFresh := 0, 0, false
	if old.size != 0 {
		if nat.readPtr != old.ptr {
			return fmt.Errorf("%w: native write of slot %d without a read of its bucket", errInconsistent, slot)
		}
		oldKeys, oldObjs, oldFresh = nat.readKeys, nat.readObj, nat.readSeq > nat.meta.seq
	}
	// A LINK takes a seq, so it goes first: the bucket carries its record's.
	if err := t.logRoom(); err != nil {
		return err
	}
	newObjs := 0
	for i := range gs {
		newObjs += len(gs[i].objs)
	}
	rec := nativeLogRec{epoch: nat.meta.gen, typ: recEmpty, flags: recEndGroup, slot: slot,
		dObj: int32(newObjs - oldObjs), dKeys: int32(len(gs) - oldKeys)}
	var ne nativeEntry
	if len(gs) > 0 {
		var err error
		if ne, err = t.writeNativeBucket(slot, gs, nat.seq+1); err != nil {
			return err
		}
		rec.typ, rec.entry, rec.bsum = recPut, uint64(ne), nativeBucketSum(nat.super.revision, t.wbuf)
	}
	if err := t.appendLog(&rec); err != nil {
		return err
	}
	// The old bucket is pending, unless this epoch wrote it: then only
	// the epoch's log names it, in a record this one supersedes, and its
	// cell is free at once (§7.3), so a session that rewrites its buckets
	// does not grow the file by a copy of each.
	// The log names the write now: a failure from here on leaves memory
	// behind the file, and the table must stop (errInconsistent).
	switch {
	case old.size == 0:
	case oldFresh:
		if err := nat.alloc.reuse(nativeEntry(t.wordOf(old))); err != nil {
			return fmt.Errorf("%w: %w", errInconsistent, err)
		}
	default:
		if err := nat.alloc.release(nativeEntry(t.wordOf(old))); err != nil {
			return fmt.Errorf("%w: %w", errInconsistent, err)
		}
		nat.pendBytes += uint64(old.size)
	}
	nat.readPtr = -1
	seg, err := t.segment(slot / slotsPerSeg)
	if err != nil {
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	seg[slot%slotsPerSeg] = slotWord(ne)
	nat.dirty[slot/nativeSlotsPerSeg] = struct{}{}
	t.changes++
	return nil
}

// writeNativeBucket writes the bucket of slot that holds gs, with seq,
// into a new cell or block and returns its entry; the bucket's bytes stay
// in t.wbuf (for the log record's bsum).
func (t *Table) writeNativeBucket(slot uint64, gs []group, seq uint64) (nativeEntry, error) {
	size, _ := nativeBucketSize(gs)
	ne, err := t.nat.alloc.alloc(size)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, t.path)
	}
	h := nativeBucketHead{seq: seq, slot: uint32(slot), level: t.nativeLevel(slot), size: size}
	buf := encodeNativeBucket(t.wbuf, h, gs)
	t.wbuf = buf
	if err := t.nativeCover(ne.off() + ne.room()); err != nil {
		return 0, err
	}
	if err := t.writeAt(buf, int64(ne.off())); err != nil {
		return 0, err
	}
	return ne, nil
}

// nativeCover makes the file reach end, so that a bucket read of a whole
// cell or block never runs past its end.
func (t *Table) nativeCover(end uint64) error {
	if int64(end) > t.fileEnd {
		t.fileEnd = int64(end)
	}
	if int64(end) <= t.size {
		return nil
	}
	// In steps, as a mapped file grows, not a truncate per new cell (that
	// was half the time of an insert); the checkpoint cuts the file back
	// to its data.
	size := max(int64(end), t.size+min(max(t.size/8, mapGrowMin), mapGrowMax))
	return t.wrote(t.truncate(size))
}

// appendLog writes r as the epoch's next record, with the next seq.
func (t *Table) appendLog(r *nativeLogRec) error {
	if err := t.logRoom(); err != nil {
		return err
	}
	return t.writeRec(r)
}

// logRoom makes room for the epoch's next record: when the page or block
// has one record slot left, a LINK to a new log block goes there (§10.2).
func (t *Table) logRoom() error {
	nat := t.nat
	if nat.logIdx == nat.logSlots-1 {
		blk, err := nat.alloc.allocBlock(nativeLogBlockClass)
		if err != nil {
			return fmt.Errorf("%w: %s", err, t.path)
		}
		if err := t.nativeCover(blk + nativeLogBlockSize); err != nil {
			return err
		}
		link := nativeLogRec{epoch: nat.meta.gen, typ: recLink, entry: blk}
		if err := t.writeRec(&link); err != nil {
			return err
		}
		nat.logBlocks = append(nat.logBlocks, blk)
		nat.logPage, nat.logSlots, nat.logIdx, nat.logIndex = blk, nativeBlockRecords, 0, nat.logIndex+1
	}
	return nil
}

// writeRec writes one record at the log's position, with the page's
// header when it is the page's first.
func (t *Table) writeRec(r *nativeLogRec) error {
	nat := t.nat
	if nat.nonce == 0 && nat.super.revision >= nativeRevisionSessions {
		nat.nonce = newNativeNonce()
	}
	nat.seq++
	r.seq, r.nonce = nat.seq, nat.nonce
	b := nat.recBuf[:]
	at := nat.logPage + nativeLogHeader + uint64(nat.logIdx)*nativeLogRecord
	w := b[nativeLogHeader:]
	off := at
	if nat.logIdx == 0 {
		h := nativeLogBlock{fileID: nat.super.fileID, epoch: nat.meta.gen, index: nat.logIndex}
		h.encode(b)
		w, off = b, nat.logPage
	}
	r.encode(b[nativeLogHeader:])
	if err := t.writeAt(w, int64(off)); err != nil {
		return err
	}
	nat.logIdx++
	nat.records++
	t.dirty = true
	return nil
}

// nativeSave is the checkpoint of §10.3: the epoch's dirty segments, their
// parts and a new root into new blocks, the free record, an fsync, then
// the next meta into the other page; durable (Sync) adds the second fsync
// and releases the quarantine.
func (t *Table) nativeSave(durable bool) error { return t.nativeCheckpoint(durable, !durable) }

// nativeCheckpoint is nativeSave; byClose sets the meta's flag bit 0.
func (t *Table) nativeCheckpoint(durable, byClose bool) error {
	nat := t.nat
	if nat.records == 0 && !nat.rebuilt {
		t.dirty = false
		return nil
	}
	nat.rebuilt = false
	a := nat.alloc
	m := nat.meta
	type node struct {
		off uint64
		b   []byte
	}
	var nodes []node
	newPage := func(old uint64) (uint64, []byte, error) {
		off, err := a.allocBlock(nativeMinBuddyClass)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %s", err, t.path)
		}
		if old != 0 {
			if err := a.release(nativeBlockEntry(old, nativeMinBuddyClass)); err != nil {
				return 0, nil, err
			}
		}
		b := make([]byte, nativePageSize)
		nodes = append(nodes, node{off, b})
		return off, b, nil
	}
	dirtyParts := map[uint64]struct{}{}
	segs := make([]uint64, 0, len(nat.dirty))
	for s := range nat.dirty {
		segs = append(segs, s)
	}
	slices.Sort(segs)
	for _, s := range segs {
		var es [nativeSlotsPerSeg]nativeEntry
		for half := range uint64(2) {
			pg := t.segCache[2*s+half]
			if pg == nil {
				return fmt.Errorf("%w: dirty segment %d not cached", errInconsistent, s)
			}
			for i, w := range pg {
				es[half*slotsPerSeg+uint64(i)] = nativeEntry(w)
			}
		}
		// Its part is encoded below from all of segs: its other
		// children must be read first (a segment growth added may sit in
		// a part no access has read).
		if err := t.nativeLoadPart(s / nativeSegsPerPart); err != nil {
			return err
		}
		off, b, err := newPage(nat.segs[s].off)
		if err != nil {
			return err
		}
		nat.segs[s] = nativeChild{off, encodeNativeSegment(b, &es)}
		dirtyParts[s/nativeSegsPerPart] = struct{}{}
	}
	for p := range nat.parts {
		if _, ok := dirtyParts[uint64(p)]; !ok {
			continue
		}
		off, b, err := newPage(nat.parts[p].off)
		if err != nil {
			return err
		}
		lo := p * nativeSegsPerPart
		nat.parts[p] = nativeChild{off, encodeNativePart(b, nat.segs[lo:min(lo+nativeSegsPerPart, len(nat.segs))])}
	}
	rootLen := nativeRootLen(t.h.next) // growth may have added parts
	rootOff, err := a.allocBlock(blockClassFor(rootLen))
	if err != nil {
		return fmt.Errorf("%w: %s", err, t.path)
	}
	root := make([]byte, rootLen)
	rootSum := encodeNativeRoot(root, nat.parts)
	nodes = append(nodes, node{rootOff, root})
	for _, e := range []nativeEntry{nativeBlockEntry(m.rootOff, blockClassFor(m.rootLen)), nativeBlockEntry(m.freeOff, blockClassFor(m.freeLen))} {
		if err := a.release(e); err != nil {
			return err
		}
	}
	for _, blk := range nat.logBlocks {
		if err := a.release(nativeBlockEntry(blk, nativeLogBlockClass)); err != nil {
			return err
		}
	}
	fk := blockClassFor(a.freeRecordBound())
	freeOff, err := a.allocBlock(fk)
	if err != nil {
		return fmt.Errorf("%w: %s", err, t.path)
	}
	if err := a.checkpoint(); err != nil {
		return err
	}
	dataEnd := a.dataEnd()
	rec, err := a.encodeFree(nil, dataEnd)
	if err != nil {
		return err
	}
	// The bound may have asked for a larger block than the record needs:
	// the block must be the smallest that holds freeLen bytes, the size a
	// later checkpoint frees (§7.5).
	if rec, _, dataEnd, err = a.fitFreeRecord(rec, freeOff, fk); err != nil {
		return err
	}
	nodes = append(nodes, node{freeOff, rec})
	if err := t.nativeCover(dataEnd); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := t.writeAt(n.b, int64(n.off)); err != nil {
			return err
		}
	}
	if err := t.f.Sync(); err != nil {
		return t.wrote(err)
	}
	nm := nativeMeta{fileID: m.fileID, gen: m.gen + 1, seq: nat.seq, next: t.h.next, m: t.h.m, n: t.h.n,
		noObjects: t.h.noObjects, noKeys: t.h.noKeys, dataEnd: dataEnd,
		rootOff: rootOff, rootLen: rootLen, rootSum: rootSum,
		freeOff: freeOff, freeLen: uint64(len(rec)), freeSum: nativeNodeSum(rec), verifiedGen: m.verifiedGen}
	if byClose {
		nm.flags |= metaFlagClose
	}
	nm.flags |= nat.metaFlags
	page := int64(nativeMetaAOff)
	if nat.metaOff == nativeMetaAOff {
		page = nativeMetaBOff
	}
	mb := make([]byte, nativePageSize)
	nm.encode(mb)
	if err := t.writeAt(mb, page); err != nil {
		return err
	}
	if durable {
		if err := t.f.Sync(); err != nil {
			return t.wrote(err)
		}
		if err := a.releaseQuarantine(); err != nil {
			return err
		}
	}
	// Past dataEnd the allocator has nothing, free record, quarantine and
	// pending space included, so the new meta names none of those bytes:
	// the steps nativeCover grew by go. Without the second fsync the old
	// meta is still the fallback, and the cut may reach the disk before
	// the new meta does: a file shorter than the old meta's dataEnd makes
	// that meta invalid, and open would pick the one before it, whose
	// blocks are reused (§10.3: a cut never removes what the fallback
	// needs). So a Close cuts no lower than the old meta's end.
	cut := int64(dataEnd)
	if !durable {
		cut = max(cut, int64(m.dataEnd))
	}
	if t.size > cut {
		if err := t.truncate(cut); err != nil {
			return t.wrote(err)
		}
		t.extended = false
		t.fileEnd = min(t.fileEnd, int64(dataEnd))
	}
	nat.meta, nat.metaOff = nm, page
	nat.pendBytes = 0
	clear(nat.dirty)
	t.startEpoch()
	t.dirty = false
	return nil
}

// nativeAfterWrite checkpoints when the epoch is over its budget (§10.3;
// the table's tuning holds it), with
// both fsyncs as Sync does, so that the epoch's pending space is free at
// once (§7.3); with Close's one fsync it stayed quarantined for another
// epoch, and the bench's 100k file grew from 264 to 370 bytes an object.
func (t *Table) nativeAfterWrite() error {
	nat := t.nat
	// The log's records count with the pending space: both stay in the
	// file until the checkpoint, and with cells reused in the epoch
	// (§7.3) a session of overwrites makes the log its main growth.
	grown := nat.pendBytes + uint64(nat.records)*nativeLogRecord
	if nat.records < t.tune.nativeBudgetRecords && grown <= max(t.tune.nativeBudgetPending, uint64(t.fileEnd)/t.tune.nativeBudgetShare) {
		return nil
	}
	return t.nativeCheckpoint(true, false)
}

// nativeGroups is readGroups' parse for native: keys decoded, and for bags
// every object too, as parseGroups does.
func (t *Table) nativeGroups(b []byte, e slotEntry) ([]group, slotEntry, error) {
	gs, _, err := t.parseNative(b, e, nil, nil)
	if err != nil {
		return nil, e, err
	}
	for i := range gs {
		g := &gs[i]
		if t.kind != Set {
			for j := range g.objs {
				if _, err := g.objs[j].decoded(); err != nil {
					return nil, e, decodeFailure(t.path, e.ptr, err, "undecodable object: %v", err)
				}
			}
		}
		if _, err := g.keyTerm(t.keyPos); err != nil {
			return nil, e, decodeFailure(t.path, e.ptr, err, "%v", err)
		}
	}
	return gs, e, nil
}

// memLen is n as an int, or false where it is past what a slice on this
// platform can hold (a 32-bit one, for a length a file gives).
func memLen(n uint64) (int, bool) {
	if n > math.MaxInt {
		return 0, false
	}
	return int(n), true
}
