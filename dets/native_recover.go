package dets

import (
	"errors"
	"fmt"
	"slices"
)

// Recovery of a native file not closed properly (docs/format-native.md
// §11.2): meta g plus the verified groups of its epoch's log give the
// state the killed writer had acknowledged, and a checkpoint with flag
// bit 1 makes that the clean state. Only what the epoch wrote is read.

// RecoveryStats says what the recovery of a native file not closed
// properly did when it was opened (Table.Recovery).
type RecoveryStats struct {
	Records   int // log records of whole groups read, LINKs not counted
	Replayed  int // records applied
	GroupsCut int // whole groups after the cut: their buckets failed to verify
	Slots     int // slots whose entry the replay changed
	Verified  int // buckets read and verified
	Grown     int // growth steps replayed
}

// Recovery reports what the recovery of a native file at this open did;
// ok is false when the open recovered nothing (a file closed properly,
// or an otp9 file).
func (t *Table) Recovery() (stats RecoveryStats, ok bool, err error) {
	if err := t.begin(false); err != nil {
		return RecoveryStats{}, false, err
	}
	defer t.mu.Unlock()
	if t.nat == nil || t.nat.recovered == nil {
		return RecoveryStats{}, false, nil
	}
	return *t.nat.recovered, true, nil
}

// nativeRecoverSeqGap is how far the sequence counter jumps past the last
// record a recovery read. Records after the first one that fails may have
// been written, and their buckets stay in free space until it is reused;
// every later write must outrank them (§8). No epoch holds 2^32 records
// (that is a 256 GiB log), so the gap covers any record a writer issued.
const nativeRecoverSeqGap = 1 << 32

// errNativeFallback marks a recovery that must give way to the full
// repair (§11.3): the log names space the checkpoint did not leave free,
// or contradicts the state, or the free record, a part or a segment
// fails.
var errNativeFallback = errors.New("recovery from the log is not possible")

// nativeRecover is §11.2 on the table loadNative has just set up from meta
// g (read-write, allocator not loaded). It returns nil when the table is
// open in the recovered, checkpointed state. It leaves the file
// byte-identical when it returns the fallback error.
func (t *Table) nativeRecover() error {
	nat := t.nat
	m := nat.meta
	s := &nat.super
	size := uint64(t.size)
	fallback := func(cause error) error { return t.nativeRecoverFallback(cause) }

	// Step 1: the log, up to its first failing record, whole groups only.
	logBuf := make([]byte, nativeLogBlockSize)
	read := func(off uint64, n int) ([]byte, error) {
		b := logBuf[:n]
		if err := readFull(t.f, b, int64(off)); err != nil {
			return nil, t.ioErr("log", int64(off), err)
		}
		return b, nil
	}
	lg, err := readNativeLog(t.path, read, s.revision, s.fileID, m.gen, m.seq, s.base, size)
	if err != nil {
		return err
	}

	// The allocator of meta g, which every write of the epoch drew from.
	fl, ok := memLen(m.freeLen)
	if !ok {
		return corrupt(t.path, "meta", t.nat.metaOff, "a free record of %d bytes, more than this platform can hold", m.freeLen)
	}
	fb := make([]byte, fl)
	if err := readFull(t.f, fb, int64(m.freeOff)); err != nil {
		return t.ioErr("freelist", int64(m.freeOff), err)
	}
	a, err := decodeNativeFree(t.path, fb, int64(m.freeOff), m.freeSum, s.base, m.dataEnd)
	if err != nil {
		return fallback(err)
	}
	a.dissolveDeadRuns()

	// Steps 2 and 3: verify each slot's last PUT, cut before a failing
	// group. A PUT naming space that was not free is a damaged log.
	st := RecoveryStats{Records: len(lg.recs)}
	var bad, ioFail error
	var bucket []byte
	verify := func(i int) bool {
		r := &lg.recs[i]
		e := nativeEntry(r.entry)
		st.Verified++
		if !a.available(e) {
			bad = corrupt(t.path, "log", 0, "record seq %d names %v, which the last checkpoint did not leave free", r.seq, e)
			return false
		}
		off := e.off()
		if off >= size {
			return false // the bucket never reached the file
		}
		n, ok := memLen(min(e.room(), size-off)) // what of it the file holds
		if !ok {
			return false
		}
		bucket = slices.Grow(bucket[:0], n)[:n]
		if err := readFull(t.f, bucket, int64(off)); err != nil {
			ioFail = t.ioErr("bucket", int64(off), err)
			return false
		}
		return verifyNativePut(t.path, s.revision, r, bucket, t.keyPos, a) == nil
	}
	n := nativeReplayLength(lg.recs, verify)
	switch {
	case ioFail != nil:
		return ioFail
	case bad != nil:
		return fallback(bad)
	}
	for _, r := range lg.recs[n:] {
		if r.endsGroup() {
			st.GroupsCut++
		}
	}

	// Step 4: apply.
	rs, err := applyNativeLog(t.path, lg.recs[:n], &m, s.maxSlots)
	if err != nil {
		return fallback(err)
	}
	st.Replayed, st.Slots = n, len(rs.entries)
	for _, r := range lg.recs[:n] {
		if r.typ == recGrow {
			st.Grown++
		}
	}

	// Step 5: the allocator. Every cell the log names and every log block
	// is taken again; what no slot keeps, and what an applied entry
	// replaced, becomes pending, so the checkpoint below writes nowhere a
	// crash of this recovery would need meta g or its log.
	// A cell may be named by more than one PUT: the epoch reuses a cell
	// it wrote once a later record superseded it (§7.3). Each is taken
	// once.
	named := make(map[nativeEntry]bool, len(lg.recs))
	for i := range lg.recs {
		if r := &lg.recs[i]; r.typ == recPut && !named[nativeEntry(r.entry)] {
			named[nativeEntry(r.entry)] = true
			if err := a.take(nativeEntry(r.entry)); err != nil {
				return fallback(err)
			}
		}
	}
	for _, blk := range lg.blocks {
		if _, err := a.takeBlock(blk, nativeLogBlockClass); err != nil {
			return fallback(err)
		}
	}
	kept := make(map[nativeEntry]bool, len(rs.entries))
	for _, e := range rs.entries {
		kept[e] = true
	}
	for e := range named {
		if !kept[e] {
			if err := a.release(e); err != nil {
				return fallback(err)
			}
		}
	}
	slots := make([]uint64, 0, len(rs.entries))
	for slot := range rs.entries {
		slots = append(slots, slot)
	}
	slices.Sort(slots)
	for _, slot := range slots {
		if slot >= m.next {
			continue // a slot the replayed growth added: no old bucket
		}
		pg, err := t.segment(slot / slotsPerSeg)
		if err != nil {
			return fallback(err)
		}
		old := nativeEntry(pg[slot%slotsPerSeg])
		if old != 0 {
			if err := a.release(old); err != nil {
				return fallback(err)
			}
		}
	}
	// The checkpoint encodes a part that replayed growth appended
	// segments to from all its children, so it reads that part if it is
	// on disk and nothing above read it (every written slot below next
	// may lie in other parts). Read it here, where a part that fails
	// still gives way to the full repair.
	if p := m.next / nativeSlotsPerPart; rs.next > m.next && p < uint64(len(nat.parts)) {
		if err := t.nativeLoadPart(p); err != nil {
			return fallback(err)
		}
	}
	// Only now, with every check passed, the in-memory state changes:
	// the segments growth added (empty, as nativeSplitWrite adds them),
	// then the entries.
	for seg := m.next / nativeSlotsPerSeg; seg < rs.next/nativeSlotsPerSeg; seg++ {
		if seg%nativeSegsPerPart == 0 {
			nat.parts = append(nat.parts, nativeChild{})
		}
		nat.segs = append(nat.segs, nativeChild{})
		t.segCache = append(t.segCache, new([slotsPerSeg]slotWord), new([slotsPerSeg]slotWord))
		nat.dirty[seg] = struct{}{}
	}
	t.h.m, t.h.n, t.h.next = rs.m, rs.n, rs.next
	for _, slot := range slots {
		pg, _ := t.segment(slot / slotsPerSeg)
		pg[slot%slotsPerSeg] = slotWord(rs.entries[slot])
		nat.dirty[slot/nativeSlotsPerSeg] = struct{}{}
	}
	t.h.noObjects, t.h.noKeys = rs.noObjects, rs.noKeys
	last := m.seq
	if len(lg.recs) > 0 {
		last = lg.recs[len(lg.recs)-1].seq
	}
	nat.seq = last + nativeRecoverSeqGap
	nat.alloc = a
	nat.logBlocks = append(nat.logBlocks[:0], lg.blocks...)

	// Step 6: the checkpoint, durable, marked as a recovery's. It runs
	// even when nothing replays, so that the log stops passing.
	nat.records = max(1, n)
	nat.metaFlags = metaFlagRecovery
	err = t.nativeSave(true)
	nat.metaFlags = 0
	if err != nil {
		return err
	}
	nat.recovered = &st
	return nil
}

// nativeRecoverFallback is where recovery gives way to the full repair
// (§11.3): the open catches the error (errNativeFallback) and repairs;
// the file has not been written.
func (t *Table) nativeRecoverFallback(cause error) error {
	return fmt.Errorf("%s: %w, so the full repair runs instead: %w", t.path, errNativeFallback, cause)
}

// nativeRecoverState is what a native table keeps for recovery.
type nativeRecoverState struct {
	metaFlags uint64         // flags the next checkpoint's meta gets besides Close's
	recovered *RecoveryStats // what the recovery at open did, or nil
}
