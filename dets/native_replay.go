package dets

import (
	"fmt"
	"slices"
)

// Reading and replaying the log of a file not closed properly
// (docs/format-native.md §11.2), as pure functions over what the caller
// reads: the engine (step 4) supplies the reads and the bucket checks.

// nativeLog is the readable part of one epoch's log.
type nativeLog struct {
	// recs are the records up to the first that fails (§10.2), without
	// LINKs and without a trailing incomplete group.
	recs []nativeLogRec
	// blocks are the log blocks the LINKs name, in order: all of them are
	// the epoch's, so a recovery keeps them pending.
	blocks []uint64
}

// readNativeLog reads the log of epoch gen, which follows a meta whose seq
// is metaSeq, in a file of revision rev with fileID whose buddy area is
// [base, size). The log is one write session's: its first record's nonce
// is the session's, and a record of another session (stale, in a page or
// block the session reused) ends it.
// read returns n bytes at off, or an error for a read that failed (an
// I/O error, not damage: damage ends the log). A log whose head page does
// not pass is empty: the file was closed properly (§11.1).
func readNativeLog(path string, read func(off uint64, n int) ([]byte, error), rev uint32, fileID, gen, metaSeq, base, size uint64) (nativeLog, error) {
	var lg nativeLog
	var nonce uint64 // the session's, from its first record
	page, slots := nativeLogHead(gen), nativeHeadRecords
	prev, index := metaSeq, uint64(0)
	lastGroupEnd := 0 // len(recs) after the last record that ended a group
	for {
		b, err := read(page, nativeLogHeader+slots*nativeLogRecord)
		if err != nil {
			return lg, err
		}
		h, err := decodeNativeLogBlock(path, b, int64(page))
		if err != nil || h.fileID != fileID || h.epoch != gen || h.index != index {
			break
		}
		next := uint64(0)
		for i := range slots {
			at := nativeLogHeader + i*nativeLogRecord
			r, err := decodeNativeLogRec(path, b[at:], int64(page)+int64(at))
			if err != nil || !nativeLogFollows(&r, gen, prev) || (r.typ == recLink) != (i == slots-1) {
				break
			}
			if prev == metaSeq {
				nonce = r.nonce
			}
			if !nativeSessionOf(&r, rev, nonce) {
				break
			}
			prev = r.seq
			if r.typ == recLink {
				next = r.entry
				break
			}
			lg.recs = append(lg.recs, r)
			if r.endsGroup() {
				lastGroupEnd = len(lg.recs)
			}
		}
		if next == 0 || next < base || (next-base)%nativeLogBlockSize != 0 || size < nativeLogBlockSize || next > size-nativeLogBlockSize {
			break
		}
		lg.blocks = append(lg.blocks, next)
		page, slots, index = next, nativeBlockRecords, index+1
	}
	lg.recs = lg.recs[:lastGroupEnd]
	return lg, nil
}

// nativeGroupStart is the index of the first record of recs[i]'s group.
func nativeGroupStart(recs []nativeLogRec, i int) int {
	for i > 0 && !recs[i-1].endsGroup() {
		i--
	}
	return i
}

// nativeReplayLength decides how much of a log replays (§11.2 steps 2-3):
// the longest prefix of whole groups in which each slot's last PUT passes
// verify. verify(i) checks the bucket recs[i] names (its header, bsum,
// seq, slot and objects, and that it lies in space meta g did not give to
// anything else); it is called at most once per record.
func nativeReplayLength(recs []nativeLogRec, verify func(i int) bool) int {
	n := len(recs)
	checked := map[int]bool{}
	for {
		last := map[uint64]int{} // slot -> index of its last PUT or EMPTY in recs[:n]
		for i, r := range recs[:n] {
			if r.typ == recPut || r.typ == recEmpty {
				last[r.slot] = i
			}
		}
		cut := n
		for _, i := range last {
			if recs[i].typ != recPut {
				continue
			}
			ok, seen := checked[i]
			if !seen {
				ok = verify(i)
				checked[i] = ok
			}
			if !ok {
				cut = min(cut, nativeGroupStart(recs, i))
			}
		}
		if cut == n {
			return n
		}
		n = cut
	}
}

// nativeReplayed is the state a replayed log gives (§11.2 step 4).
type nativeReplayed struct {
	entries           map[uint64]nativeEntry // slot -> its new entry; 0: emptied
	next, m, n        uint64
	noObjects, noKeys uint64
	seq               uint64 // the last sequence number applied
}

// applyNativeLog applies whole groups of records to meta m's table shape
// and counts. A record that passed its checksum but contradicts the state
// (a slot at or past next, a GROW that is not the next step, counts that
// leave their range) is a *CorruptionError: a correct writer never writes
// it, so the caller falls back to a full repair.
func applyNativeLog(path string, recs []nativeLogRec, m *nativeMeta, maxSlots uint64) (nativeReplayed, error) {
	st := nativeReplayed{entries: map[uint64]nativeEntry{}, next: m.next, m: m.m, n: m.n,
		noObjects: m.noObjects, noKeys: m.noKeys, seq: m.seq}
	bad := func(r *nativeLogRec, format string, args ...any) (nativeReplayed, error) {
		return st, corrupt(path, "log", 0, "record seq %d: %s", r.seq, fmt.Sprintf(format, args...))
	}
	for i := range recs {
		r := &recs[i]
		switch r.typ {
		case recPut, recEmpty:
			if r.slot >= st.next {
				return bad(r, "slot %d at or past next %d", r.slot, st.next)
			}
			st.entries[r.slot] = nativeEntry(r.entry)
		case recGrow:
			wantM, wantN := st.m, st.n+nativeSlotsPerSeg
			if wantN == st.m {
				wantM, wantN = 2*st.m, 0
			}
			if r.slot != st.next+nativeSlotsPerSeg || r.entry != wantM || r.slot > maxSlots {
				return bad(r, "GROW to %d slots with M %d after %d slots with M %d", r.slot, r.entry, st.next, st.m)
			}
			st.next, st.m, st.n = r.slot, wantM, wantN
		default:
			return bad(r, "type %d in a replay", r.typ)
		}
		objs, okO := addCount(st.noObjects, r.dObj)
		keys, okK := addCount(st.noKeys, r.dKeys)
		if !okO || !okK || keys > objs {
			return bad(r, "counts leave their range")
		}
		st.noObjects, st.noKeys, st.seq = objs, keys, r.seq
	}
	return st, nil
}

// addCount adds a signed change to a count, reporting under- or overflow.
func addCount(c uint64, d int32) (uint64, bool) {
	if d < 0 {
		return c - uint64(-int64(d)), c >= uint64(-int64(d))
	}
	s := c + uint64(d)
	return s, s >= c
}

// available reports whether the cell or block e names lies wholly in
// space that is free or quarantined: where a write of the epoch after the
// allocator's free record could have put a bucket (§11.2 step 2). Use it
// on an allocator just built from that record, whose held blocks are its
// quarantine.
func (a *nativeAlloc) available(e nativeEntry) bool {
	if c := e.cellClass(); c != 0 {
		off := e.off()
		if off < a.base {
			return false
		}
		run := a.base + (off-a.base)&^(nativeRunSize-1)
		if a.coveredFree(run, nativeRunClass) {
			return true
		}
		r := a.runs[run]
		if r == nil || int(r.class) != c {
			return false
		}
		i := (off - run) / cellSize(c)
		w, bit := i/64, uint64(1)<<(i%64)
		return (off-run)%cellSize(c) == 0 && i < uint64(r.cells) && (r.free[w]|r.quar[w])&bit != 0
	}
	k := e.blockClass()
	return k != 0 && e.off() >= a.base && (e.off()-a.base)%(1<<k) == 0 && a.coveredFree(e.off(), k)
}

// coveredFree reports whether the aligned block [off, off+2^k) is covered
// by free and held blocks. One block may not hold it: two quarantined
// buddies, or a quarantined block and its free buddy, merge when a Sync
// releases the quarantine, and the epoch after it may allocate the whole.
func (a *nativeAlloc) coveredFree(off uint64, k int) bool {
	if a.containedInFree(off, k) {
		return true
	}
	return k > nativeMinBuddyClass && a.coveredFree(off, k-1) && a.coveredFree(off+1<<(k-1), k-1)
}

// containedInFree reports whether the aligned block [off, off+2^k) lies
// inside one free or held block: buddy blocks contain each other or are
// disjoint, so only the blocks at its aligned ancestors' addresses can.
func (a *nativeAlloc) containedInFree(off uint64, k int) bool {
	rel := off - a.base
	for j := k; j <= nativeMaxBuddyClass; j++ {
		at := a.base + rel&^(1<<j-1)
		if _, ok := slices.BinarySearch(a.free[j], at); ok {
			return true
		}
		if hk, ok := a.held[at]; ok && int(hk) == j {
			return true
		}
	}
	return false
}

// verifyNativePut is the check of one replay candidate (§11.2 step 2): the
// bucket b read at the PUT's entry has the header the record binds (bsum,
// seq, slot), sound objects that hash to its slot, and it lies in space
// that meta g's free record, loaded as a, left free or quarantined.
func verifyNativePut(path string, rev uint32, r *nativeLogRec, b []byte, keyPos int, a *nativeAlloc) error {
	e := nativeEntry(r.entry)
	off := int64(e.off())
	if !a.available(e) {
		return corrupt(path, "log", off, "record seq %d names %v, which the last checkpoint did not leave free", r.seq, e)
	}
	h, err := walkNativeBucket(path, b, off, e.room(), keyPos, nil)
	if err != nil {
		return err
	}
	if h.seq != r.seq || uint64(h.slot) != r.slot || nativeBucketSum(rev, b[:h.size]) != r.bsum {
		return corrupt(path, "bucket", off, "not the bucket of record seq %d (seq %d, slot %d)", r.seq, h.seq, h.slot)
	}
	return nil
}
