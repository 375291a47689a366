package dets

import (
	"math/bits"
	"slices"
	"sync"

	"github.com/godets/godets/etf"
)

// Full traversal of native tables (All, RawAll and the queries that scan),
// docs/format-native.md §15.1. It keeps the idea of otp9's (scan.go):
// windows of slot entries sorted by address, buckets read with few large
// preads under the lock, objects checked, decoded and handed out without
// it. The windows here go by slot (scanSlots at a time) and hold whole
// entries (slot and 64-bit entry, 16 bytes): otp9's packed 32-bit
// pointers do not reach native offsets, and its path stays as it is.
//
// A slot is read once: a window is collected once, and a stretch read
// after a change looks at its slots' entries again, so a moved bucket is
// read where it is now. As with otp9, an object that stays in the table
// throughout is seen exactly once: the table does not grow during a
// traversal (fixTraversal).

// nativeScanEnt is one collected slot entry.
type nativeScanEnt struct {
	slot uint64
	e    nativeEntry
}

// nativeScanRef locates one bucket of the current stretch in buf or extra.
type nativeScanRef struct {
	slot   uint64
	ptr    int64
	extra  bool
	off, n int
}

// nativeScanState is the reusable state of one native traversal.
type nativeScanState struct {
	ents   []nativeScanEnt
	sorted []nativeScanEnt // sortByOffset's other buffer
	at     uint64          // t.changes when ents were collected
	buf    []byte          // the stretch's read
	extra  []byte          // buckets read on their own (moved, or suspect)
	refs   []nativeScanRef
	out    []etf.Term // the objects of one bucket
	encs   [][]byte   // the encodings of one bucket (RawAll)
	bd     etf.RawBatch
	keyPos int
}

var nativeScanPool = sync.Pool{New: func() any { return new(nativeScanState) }}

func (st *nativeScanState) release() {
	clear(st.out)
	clear(st.encs)
	st.out, st.encs = st.out[:0], st.encs[:0]
	st.bd = etf.RawBatch{}
	if cap(st.buf) > 2*scanRead {
		st.buf = nil
	}
	if cap(st.extra) > 2*scanRead {
		st.extra = nil
	}
	if cap(st.ents) > scanSlots {
		st.ents, st.sorted = nil, nil
	}
	nativeScanPool.Put(st)
}

func (st *nativeScanState) body(r nativeScanRef) []byte {
	if r.extra {
		return st.extra[r.off : r.off+r.n]
	}
	return st.buf[r.off : r.off+r.n]
}

// nativeAll is All on a native table.
func (t *Table) nativeAll(yield func(etf.Term, error) bool) {
	st := nativeScanPool.Get().(*nativeScanState)
	defer st.release()
	err := t.nativeScan(st, func(r nativeScanRef) error {
		out := st.out[:0]
		_, err := walkNativeDecoding(t.path, st.body(r), r.ptr, uint64(r.n), st.keyPos, func(recOff int64, enc, _ []byte) error {
			o, err := st.bd.Decode(enc)
			if err != nil {
				return decodeFailure(t.path, recOff, err, "slot %d: undecodable object: %v", r.slot, err)
			}
			out = append(out, o)
			return nil
		})
		st.out = out
		if err != nil {
			clear(out)
			return t.failLocked(err)
		}
		for _, o := range out {
			if !yield(o, nil) {
				return errStopped
			}
		}
		clear(out) // the caller may keep what it was given, not st
		return nil
	})
	if err != nil && err != errStopped {
		yield(nil, err)
	}
}

// nativeRawAll is RawAll on a native table: a bucket's records are all
// verified before the first of them is yielded.
func (t *Table) nativeRawAll(yield func([]byte, error) bool) {
	st := nativeScanPool.Get().(*nativeScanState)
	defer st.release()
	err := t.nativeScan(st, func(r nativeScanRef) error {
		encs := st.encs[:0]
		_, err := walkNativeBucket(t.path, st.body(r), r.ptr, uint64(r.n), st.keyPos, func(_ int64, enc, _ []byte) error {
			encs = append(encs, enc)
			return nil
		})
		st.encs = encs
		if err != nil {
			return t.failLocked(err)
		}
		for _, enc := range encs {
			if !yield(enc, nil) {
				return errStopped
			}
		}
		return nil
	})
	if err != nil && err != errStopped {
		yield(nil, err)
	}
}

// failLocked is fail for code that runs without the lock.
func (t *Table) failLocked(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fail(err)
}

// nativeScan reads every non-empty slot's bucket, window by window and in
// address order within a window, and calls bucket with each (its header
// checked against the slot, its objects not yet: bucket walks them)
// without the lock. An error of bucket ends the scan and is returned.
func (t *Table) nativeScan(st *nativeScanState, bucket func(nativeScanRef) error) error {
	for from := uint64(0); ; {
		to, done, err := t.nativeScanCollect(st, from)
		if err != nil || done {
			return err
		}
		st.sortByOffset()
		for i := 0; i < len(st.ents); {
			j := nativeScanStretch(st.ents, i)
			if err := t.nativeScanRead(st, st.ents[i:j]); err != nil {
				return err
			}
			for _, r := range st.refs {
				if err := bucket(r); err != nil {
					return err
				}
			}
			i = j
		}
		from = to
	}
}

// nativeScanCollect puts the non-empty entries of slots [from, from +
// scanSlots) into st.ents and returns the window's end; done when from is
// past the table.
func (t *Table) nativeScanCollect(st *nativeScanState, from uint64) (uint64, bool, error) {
	if err := t.begin(false); err != nil {
		return 0, false, err
	}
	defer t.mu.Unlock()
	st.keyPos = t.keyPos
	if from >= t.h.next {
		return 0, true, nil
	}
	to := min(from+scanSlots, t.h.next)
	ents := st.ents[:0]
	for s := from; s < to; {
		pg, err := t.segment(s / slotsPerSeg)
		if err != nil {
			return 0, false, t.fail(err)
		}
		for i := s % slotsPerSeg; i < slotsPerSeg && s < to; i, s = i+1, s+1 {
			if w := pg[i]; w != 0 {
				ents = append(ents, nativeScanEnt{s, nativeEntry(w)})
			}
		}
	}
	st.ents, st.at = ents, t.changes
	return to, false, nil
}

// sortByOffset puts st.ents in the order of their buckets' offsets, with
// an LSD radix sort on the bits of the offsets that vary (scan.go's sort
// of otp9 pointers, on 16-byte entries). At 100k objects the comparison
// sort it replaces was a quarter of the traversal, and a sort of packed
// integer keys still a sixth.
func (st *nativeScanState) sortByOffset() {
	a := st.ents
	key := func(x nativeScanEnt) uint64 { return uint64(x.e) >> 8 } // offset / 16
	if len(a) < 256 {
		for i := 1; i < len(a); i++ {
			x, j := a[i], i
			for ; j > 0 && key(a[j-1]) > key(x); j-- {
				a[j] = a[j-1]
			}
			a[j] = x
		}
		return
	}
	or, and := uint64(0), ^uint64(0)
	sorted, prev := true, uint64(0)
	for _, x := range a {
		k := key(x)
		or, and = or|k, and&k
		sorted = sorted && prev <= k
		prev = k
	}
	if sorted {
		return
	}
	diff := or ^ and
	st.sorted = slices.Grow(st.sorted[:0], len(a))[:len(a)]
	src, dst := a, st.sorted
	var cnt [1 << scanSortDigit]int
	for shift := bits.TrailingZeros64(diff); shift < 64 && diff>>shift != 0; shift += scanSortDigit {
		if diff>>shift&(1<<scanSortDigit-1) == 0 {
			continue
		}
		clear(cnt[:])
		for _, x := range src {
			cnt[key(x)>>shift&(1<<scanSortDigit-1)]++
		}
		sum := 0
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		for _, x := range src {
			d := key(x) >> shift & (1<<scanSortDigit - 1)
			dst[cnt[d]] = x
			cnt[d]++
		}
		src, dst = dst, src
	}
	st.ents, st.sorted = src, dst
}

// nativeScanStretch returns the end of the stretch of sorted entries from
// i that one read covers.
func nativeScanStretch(ents []nativeScanEnt, i int) int {
	lo := ents[i].e.off()
	hi := lo + ents[i].e.room()
	j := i + 1
	for ; j < len(ents); j++ {
		p := ents[j].e.off()
		end := max(hi, p+ents[j].e.room())
		if p > hi+scanGap || end-lo > scanRead {
			break
		}
		hi = end
	}
	return j
}

// nativeScanRead reads the buckets of a stretch under the lock: with one
// pread for those still where the window saw them, on their own (through
// readBucket, which reports what is wrong) for the others. It records
// where each body is in st.refs.
func (t *Table) nativeScanRead(st *nativeScanState, ents []nativeScanEnt) error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	st.refs, st.extra = st.refs[:0], st.extra[:0]
	unchanged := t.changes == st.at
	lo, hi := int64(-1), int64(0)
	for k := range ents {
		x := &ents[k]
		if !unchanged {
			if x.slot >= t.h.next { // the table was emptied meanwhile
				x.e = 0
				continue
			}
			e, err := t.entry(x.slot)
			if err != nil {
				return t.fail(err)
			}
			if w := nativeEntry(t.wordOf(e)); w != x.e {
				x.e, x.slot = w, x.slot|1<<63 // moved: read on its own
				continue
			}
		}
		if p, end := int64(x.e.off()), int64(x.e.off()+x.e.room()); t.nativePlausible(x.e) {
			if lo < 0 {
				lo = p
			}
			hi = max(hi, end)
		}
	}
	var w []byte
	if lo >= 0 {
		if int64(cap(st.buf)) < hi-lo {
			st.buf = make([]byte, hi-lo)
		}
		w = st.buf[:hi-lo]
		if t.readAt(w, lo) != nil {
			w = nil // readBucket reports it
		}
	}
	for k := range ents {
		x := &ents[k]
		moved := x.slot&(1<<63) != 0
		slot := x.slot &^ (1 << 63)
		x.slot = slot
		if x.e == 0 {
			continue
		}
		e := t.entryOf(slotWord(x.e))
		if !moved && w != nil && t.nativePlausible(x.e) {
			at := int(e.ptr - lo)
			b, err := t.nativeBucketBody(slot, e, w[at:at+int(e.size)])
			if err != nil {
				return t.fail(err)
			}
			st.refs = append(st.refs, nativeScanRef{slot, e.ptr, false, at, len(b)})
			continue
		}
		b, err := t.readBucket(slot, e)
		if err != nil {
			return t.fail(err)
		}
		st.refs = append(st.refs, nativeScanRef{slot, e.ptr, true, len(st.extra), len(b)})
		st.extra = append(st.extra, b...)
	}
	return nil
}

// nativePlausible reports whether e names a cell or block inside the data
// that can hold a bucket; readBucket explains those that cannot.
func (t *Table) nativePlausible(e nativeEntry) bool {
	off, room := e.off(), e.room()
	return room >= nativeBucketHeader && off >= t.nat.super.base && int64(off+room) <= t.fileEnd
}
