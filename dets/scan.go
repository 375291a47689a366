package dets

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/godets/godets/etf"
)

// Full traversal (Table.All) reads the file in address order.
//
// A table built by single inserts has its buckets scattered over the file,
// so reading them in slot order costs about one pread per bucket. All
// instead takes the file a window of addresses at a time: under the lock
// it collects the slot entries that point into the window, packed one per
// uint64 as
//
//	 63               32 31 30     25 24            0
//	+-------------------+--+---------+--------------+
//	|  bucket pointer   |0 |  class  |     slot     |
//	+-------------------+--+---------+--------------+
//
// (class: log2 of the bucket's buddy block, which bounds the bucket even
// after an in-place rewrite), each with its exact bucket size beside it,
// sorts them by pointer and reads the buckets with few large preads: a
// bucket starting at most scanGap bytes after the previous one joins its
// read, up to scanRead bytes. A window spans about
// tune.scanWindowKeys buckets' worth of the file, so that its reads cover
// little besides its own buckets. Each read holds the lock and looks at
// the slot entries again if the table changed since the window was
// collected, so a moved bucket is read from where it is now (the slots of
// a sorted window are in random order: at 1M slots these reads were a
// third of a traversal), and marks its slots visited. A slot is
// read once: after the address windows, a pass over the slots, scanSlots
// of them at a time, picks up those not visited (their buckets moved into
// a window already read, the window was full, or the table grew).
// The caller's loop body runs without the lock. So does decoding, except
// for a set's buckets in a mapped file: those are decoded from the map
// while the stretch is read (a copy of each read cost a sixth of the
// traversal), so a writer may wait for one stretch's decoding, about
// 50 µs.
//
// Memory is bounded whatever the table size: the packed entries, their
// sizes and the sort's scratch take 24 bytes an entry of one window, and
// placing a dense window (placeByPtr) up to 8 more (at most scanMax
// entries, 16 MiB), the visited set a bit a slot (4 MiB at the largest
// table), the read buffer scanRead plus the largest bucket of a read.
const (
	scanSlots = 1 << 18       // slots per window of the slot pass
	scanMax   = 2 * scanSlots // entries per window at most
	scanGap   = 4 << 10       // largest hole one read spans
	scanRead  = 128 << 10     // bytes one read covers, unless one bucket is larger

	scanSlotBits  = 25 // slot numbers are below maxSlotsLimit = 1<<25
	scanSlotMask  = 1<<scanSlotBits - 1
	scanClassBits = 6 // classes 0..32
	scanClassMask = 1<<scanClassBits - 1
	scanSortDigit = 11 // bits per radix-sort pass (3 passes for 32 bits)
)

// scanPack packs an otp9 slot entry: its pointer is below 2^31 and its
// slot below maxSlotsLimit, which the packing relies on. A format with
// wider offsets or more slots needs entries of its own.
func scanPack(slot uint64, e slotEntry) uint64 {
	return uint64(e.ptr)<<32 | uint64(bits.Len64(uint64(e.size-1)))<<scanSlotBits | slot
}

func scanPtr(x uint64) int64   { return int64(x >> 32) }
func scanSlot(x uint64) uint64 { return x & scanSlotMask }
func scanBlock(x uint64) int64 { return 1 << (x >> scanSlotBits & scanClassMask) }
func scanEnd(x uint64) int64   { return scanPtr(x) + scanBlock(x) }
func plausibleEntry(e slotEntry, fileEnd int64) bool {
	return e.size >= bucketHeaderSize+5 && e.ptr >= baseAddr && int64(e.ptr)+int64(e.size) <= fileEnd
}

// scanState is the reusable state of one traversal (see scanPool).
type scanState struct {
	ents, tmp []uint64    // the window's packed entries; sort scratch
	sizes     []uint32    // the bucket size of each of ents (otp9's fit in 32 bits)
	tmpSizes  []uint32    // sort scratch
	at32      []uint32    // placeByPtr's entry at each block
	at        uint64      // t.changes when ents were collected
	visited   []uint64    // a bit per slot read (or found empty)
	cur       []slotEntry // the current entries of a stretch
	buf       []byte      // the current read
	extra     []byte      // buckets read on their own (moved, or suspect)
	refs      []scanRef
	objs      []etf.Term // scanDecode's objects of one bucket
	out       []etf.Term // objects decoded from the map (inOut), or of one bucket
	bd        etf.RawBatch
	raw       bool // RawAll's: copy bodies out, never decode (raw.go)

	// Copied under the lock: InitTable may rewrite kind and keyPos.
	kind   Kind
	keyPos int
}

// scanRef locates the body of one bucket of the current read, or its
// objects already decoded.
type scanRef struct {
	slot   uint64 // for error messages
	ptr    int64
	where  uint8 // inBuf, inExtra or inOut
	off, n int   // bytes of buf or extra, or objects of out
}

const (
	inBuf = iota
	inExtra
	inOut
)

var scanPool = sync.Pool{New: func() any { return new(scanState) }}

func (st *scanState) release() {
	clear(st.objs)
	st.objs = st.objs[:0]
	clear(st.out)
	st.out = st.out[:0]
	st.bd = etf.RawBatch{} // let the decoded terms' chunks go
	if cap(st.buf) > 2*scanRead {
		st.buf = nil
	}
	if cap(st.extra) > 2*scanRead {
		st.extra = nil
	}
	if cap(st.visited) > 1<<14 { // a table of 1Mi slots
		st.visited = nil
	} else {
		clear(st.visited)
	}
	scanPool.Put(st)
}

// All iterates over every object in file order: the buckets in address
// order (unless the table changes meanwhile: then the buckets moved behind
// the scan come last), within a bucket the keys in key order and each
// key's objects oldest first. Like OTP's foldl, this is not slot order;
// First, Next and Keys go in slot order.
//
// The table is locked only while a window's slot entries are collected and
// while a stretch of buckets is read, never while the loop body runs, so
// the body may use the table. Objects added or removed during the loop may
// or may not be seen; an object that stays in the table throughout is seen
// exactly once: the table does not grow until the loop ends (a split would
// move objects to slots not yet visited), as OTP's foldl fixes its table.
// An iteration ends when its loop does (break too); one held open, such as
// an iter.Pull that is never stopped, keeps the table from growing. An
// error ends the iteration.
func (t *Table) All() iter.Seq2[etf.Term, error] {
	return func(yield func(etf.Term, error) bool) {
		if t != nil {
			t.fixTraversal()
			defer t.unfixTraversal()
		}
		if t != nil && t.lay.tag == tagNative { // t.lay is fixed from the open on
			t.nativeAll(yield)
			return
		}
		st := scanPool.Get().(*scanState)
		defer st.release()
		err := t.scanStretches(st, func() error {
			for _, r := range st.refs {
				var objs []etf.Term
				switch a := len(st.out); {
				case r.where == inOut:
					objs = st.out[r.off : r.off+r.n]
				case st.decodeSet(st.body(r)):
					objs = st.out[a:]
				default:
					var err error
					if objs, err = t.scanDecode(st, r); err != nil {
						return err
					}
				}
				for _, o := range objs {
					if !yield(o, nil) {
						return errStopped
					}
				}
			}
			clear(st.out) // the caller may keep what it was given, not st
			st.out = st.out[:0]
			return nil
		})
		if err != nil && err != errStopped {
			yield(nil, err)
		}
	}
}

// scanStretches runs an otp9 traversal's steps: it collects each address
// window's slot entries, sorts them into file order and reads them a
// stretch at a time, calling visit with each stretch's buckets in
// st.refs. An error of the steps or of visit ends it and is returned.
func (t *Table) scanStretches(st *scanState, visit func() error) error {
	var w scanWindow
	for {
		done, err := t.scanCollect(st, &w)
		if err != nil || done {
			return err
		}
		st.sortByPtr()
		for i := 0; i < len(st.ents); {
			j := scanStretch(st.ents, i)
			if err := t.scanRead(st, st.ents[i:j], st.sizes[i:j]); err != nil {
				return err
			}
			if err := visit(); err != nil {
				return err
			}
			i = j
		}
	}
}

// scanWindow is where a traversal is: in the address windows (the file
// from lo on, width bytes at a time), then in the pass over the slots not
// visited (from slot from on).
type scanWindow struct {
	slots     bool
	lo, width int64
	from      uint64
	full      bool   // a window left entries out: the slot pass must run
	changes   uint64 // t.changes at the first window
}

// scanCollect puts the unvisited non-empty slot entries of w's next window
// into st.ents and moves w past it; done reports the end of the traversal.
func (t *Table) scanCollect(st *scanState, w *scanWindow) (bool, error) {
	if err := t.begin(false); err != nil {
		return false, err
	}
	defer t.mu.Unlock()
	st.kind, st.keyPos = t.kind, t.keyPos
	if n := int((t.h.next + 63) / 64); len(st.visited) < n {
		st.visited = append(st.visited, make([]uint64, n-len(st.visited))...)
	}
	next := t.h.next
	from, to := uint64(0), next
	lo, hi := int64(0), int64(math.MaxInt64)
	if !w.slots {
		if w.width == 0 {
			keys := max(int64(t.h.noKeys), 1)
			w.lo, w.width = baseAddr, max(scanRead, (t.fileEnd-baseAddr+keys-1)/keys*t.tune.scanWindowKeys)
			w.changes = t.changes
		}
		if w.lo >= t.fileEnd {
			w.slots = true
			if !w.full && t.changes == w.changes {
				return true, nil // every slot was collected, and read where it was
			}
		} else {
			lo, hi = w.lo, w.lo+w.width
			if hi >= t.fileEnd {
				hi = math.MaxInt64
			}
			w.lo += w.width
		}
	}
	if w.slots {
		if w.from >= next {
			return true, nil
		}
		from, to = w.from, w.from+min(scanSlots, next-w.from)
		w.from = to
	}
	ents := slices.Grow(st.ents[:0], int(min(to-from, t.h.noKeys+slotsPerSeg, scanMax)))
	sizes := slices.Grow(st.sizes[:0], cap(ents))
	// Every entry is written and kept or not by its length, without a
	// branch: whether an entry falls in the window is a coin toss, and
	// the mispredicted branch was two thirds of this loop.
	n, width := 0, uint64(hi-lo)
	for s := from; s < to && n < scanMax; {
		seg, err := t.segment(s / slotsPerSeg)
		if err != nil {
			return false, t.fail(err)
		}
		i, m := s%slotsPerSeg, min(slotsPerSeg-s%slotsPerSeg, to-s)
		if cap(ents)-n < int(m) {
			ents = slices.Grow(ents[:n], int(m))
			sizes = slices.Grow(sizes[:n], cap(ents)-n)
		}
		ents, sizes = ents[:cap(ents)], sizes[:cap(ents)]
		for end := s + m; s < end; i, s = i+1, s+1 {
			e := t.entryOf(seg[i])
			ents[n], sizes[n] = scanPack(s, e), uint32(e.size)
			n += b2i(e.size != 0) & b2i(uint64(int64(e.ptr)-lo) < width) & int(^st.visited[s/64]>>(s%64))
		}
	}
	ents, sizes = ents[:n], sizes[:n]
	w.full = w.full || n >= scanMax
	st.ents, st.sizes, st.at = ents, sizes, t.changes
	return false, nil
}

// b2i is 1 for true and 0 for false; the compiler makes it a SETcc.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortByPtr sorts st.ents, and st.sizes with them, by bucket pointer:
// placeByPtr when the window is dense, else an LSD radix sort on the bits
// of the pointers that vary.
func (st *scanState) sortByPtr() {
	a, sz := st.ents, st.sizes
	if len(a) < 256 {
		// Insertion sort; the pointer is the most significant part.
		for i := 1; i < len(a); i++ {
			x, n, j := a[i], sz[i], i
			for ; j > 0 && a[j-1] > x; j-- {
				a[j], sz[j] = a[j-1], sz[j-1]
			}
			a[j], sz[j] = x, n
		}
		return
	}
	or, and := uint64(0), ^uint64(0)
	lo, hi := uint64(math.MaxUint32), uint64(0)
	sorted, prev := true, uint64(0)
	for _, x := range a {
		or |= x
		and &= x
		lo, hi = min(lo, x>>32), max(hi, x>>32)
		sorted = sorted && prev <= x
		prev = x
	}
	if sorted { // a bulk-built table, or one rewritten by repair
		return
	}
	diff := (or ^ and) >> 32
	if st.placeByPtr(lo, hi, bits.TrailingZeros64(diff)) {
		return
	}
	st.tmp = slices.Grow(st.tmp[:0], len(a))[:len(a)]
	st.tmpSizes = slices.Grow(st.tmpSizes[:0], len(a))[:len(a)]
	src, dst := a, st.tmp
	srcSz, dstSz := sz, st.tmpSizes
	var cnt [1 << scanSortDigit]int
	// Digits start at the lowest bit that varies: buddy blocks lie at
	// multiples of their size from the base, so a window of 256-byte
	// blocks takes one pass fewer.
	for shift := bits.TrailingZeros64(diff); shift < 32 && diff>>shift != 0; shift += scanSortDigit {
		if diff>>shift&(1<<scanSortDigit-1) == 0 {
			continue
		}
		clear(cnt[:])
		for _, x := range src {
			cnt[x>>(32+shift)&(1<<scanSortDigit-1)]++
		}
		sum := 0
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		for i, x := range src {
			d := x >> (32 + shift) & (1<<scanSortDigit - 1)
			dst[cnt[d]], dstSz[cnt[d]] = x, srcSz[i]
			cnt[d]++
		}
		src, dst = dst, src
		srcSz, dstSz = dstSz, srcSz
	}
	st.ents, st.tmp = src, dst
	st.sizes, st.tmpSizes = srcSz, dstSz
}

// placeByPtr sorts st.ents (pointers lo to hi, multiples of 1<<shift
// apart) by putting each entry at the index of its block among the
// window's blocks. Buddy blocks do not overlap, so in a sound table no two
// buckets start at one address; a window of single inserts fills most of
// its blocks. Where the radix sort takes two passes of counting and
// scattering, this is one scattered write and one ordered read an entry.
// It gives up (false, st.ents as they were) when the window has over
// twice as many blocks as entries, or two entries share a block.
func (st *scanState) placeByPtr(lo, hi uint64, shift int) bool {
	a, sz := st.ents, st.sizes
	n := (hi-lo)>>shift + 1
	if n > 2*uint64(len(a)) {
		return false
	}
	at := slices.Grow(st.at32[:0], int(n))[:n] // 1 + the entry at each block
	st.at32 = at
	clear(at)
	for i, x := range a {
		k := (x>>32 - lo) >> shift
		if at[k] != 0 {
			return false
		}
		at[k] = uint32(i + 1)
	}
	// One spare element: an empty block is written past the last entry,
	// without a branch, and overwritten by the next.
	dst := slices.Grow(st.tmp[:0], len(a)+1)[:len(a)+1]
	dstSz := slices.Grow(st.tmpSizes[:0], len(a)+1)[:len(a)+1]
	j := 0
	for _, p := range at {
		i := max(int(p)-1, 0)
		dst[j], dstSz[j] = a[i], sz[i]
		j += b2i(p != 0)
	}
	st.ents, st.tmp = dst[:len(a)], a
	st.sizes, st.tmpSizes = dstSz[:len(a)], sz
	return true
}

// scanStretch returns the end of the stretch of sorted entries from i that
// one read covers.
func scanStretch(ents []uint64, i int) int {
	lo, hi := scanPtr(ents[i]), scanEnd(ents[i])
	j := i + 1
	for ; j < len(ents); j++ {
		p, end := scanPtr(ents[j]), max(hi, scanEnd(ents[j]))
		if p > hi+scanGap || end-lo > scanRead {
			break
		}
		hi = end
	}
	return j
}

// scanRead reads the buckets of a stretch of sorted entries (sizes: their
// bucket sizes), with one pread for those still where the window saw them,
// and records their bodies in st.refs. Anything that looks wrong goes
// through readBucket, which reports it with the usual errors.
func (t *Table) scanRead(st *scanState, ents []uint64, sizes []uint32) error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	st.refs, st.extra = st.refs[:0], st.extra[:0]
	// The current entries (cur), and the extent of the buckets still in
	// place, from their current sizes.
	cur := slices.Grow(st.cur[:0], len(ents))[:len(ents)]
	st.cur = cur
	lo, hi := int64(-1), int64(0)
	unchanged := t.changes == st.at // the entries are as collected
	for k, x := range ents {
		s := scanSlot(x)
		if s >= t.h.next {
			cur[k] = slotEntry{} // DeleteAllObjects shrank the table
			continue
		}
		st.visited[s/64] |= 1 << (s % 64)
		e := slotEntry{size: int64(sizes[k]), ptr: scanPtr(x)}
		if !unchanged {
			var err error
			if e, err = t.entry(s); err != nil {
				return t.fail(err)
			}
		}
		cur[k] = e
		if p := scanPtr(x); e.ptr == p && plausibleEntry(e, t.fileEnd) {
			if lo < 0 {
				lo = p
			}
			hi = max(hi, p+e.size)
		}
	}
	if lo >= 0 && st.kind == Set && !st.raw && t.mm != nil && hi <= t.size && hi <= int64(len(t.mm)) {
		var err error
		if mapCopyFunc(func() { err = t.scanRefs(st, ents, t.mm[lo:hi], lo, true) }) {
			return err
		}
		// A page of the map vanished: read as below, which reports why.
		clear(st.out)
		st.refs, st.extra, st.out = st.refs[:0], st.extra[:0], st.out[:0]
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
	return t.scanRefs(st, ents, w, lo, false)
}

// scanRefs records in st.refs where the bodies of the buckets of ents are:
// in w (the file from lo) if they are still there, else in st.extra. With
// decode, w is the map, and the buckets in it are decoded now, under the
// lock, into st.out; those that decodeSet leaves go to st.extra too. That
// saves copying the read, a sixth of the time of a traversal.
func (t *Table) scanRefs(st *scanState, ents []uint64, w []byte, lo int64, decode bool) error {
	for k, x := range ents {
		s, e := scanSlot(x), st.cur[k]
		if e.size == 0 {
			continue
		}
		if p := scanPtr(x); w != nil && e.ptr == p && plausibleEntry(e, t.fileEnd) {
			b := w[p-lo : p-lo+e.size]
			if int64(be.Uint32(b)) == e.size && be.Uint32(b[4:]) == statusActive {
				body := b[bucketHeaderSize:]
				switch a := len(st.out); {
				case !decode:
					st.refs = append(st.refs, scanRef{s, e.ptr, inBuf, int(p-lo) + bucketHeaderSize, len(body)})
				case st.decodeSet(body):
					st.refs = append(st.refs, scanRef{s, e.ptr, inOut, a, len(st.out) - a})
				default:
					st.refs = append(st.refs, scanRef{s, e.ptr, inExtra, len(st.extra), len(body)})
					st.extra = append(st.extra, body...)
				}
				continue
			}
		}
		body, err := t.readBucket(s, e)
		if err != nil {
			return t.fail(err)
		}
		st.refs = append(st.refs, scanRef{s, e.ptr, inExtra, len(st.extra), len(body)})
		st.extra = append(st.extra, body...)
	}
	return nil
}

// body returns the bytes of the bucket of r, which is not inOut.
func (st *scanState) body(r scanRef) []byte {
	b := st.buf
	if r.where == inExtra {
		b = st.extra
	}
	return b[r.off : r.off+r.n]
}

// decodeSet appends to st.out the objects of a set's bucket body when every
// one of them is valid (nearly always), and reports whether it did;
// otherwise st.out is as it was, and the bucket is left to scanDecode,
// errors included. It saves scanDecode's generality, a noticeable part of
// the cost of a small object.
func (st *scanState) decodeSet(body []byte) bool {
	if st.kind != Set || len(body) == 0 || st.raw {
		return false // an empty bucket, which scanDecode checks
	}
	a := len(st.out)
	for len(body) > 0 {
		n := uint32(0)
		if len(body) >= 4 {
			n = be.Uint32(body)
		}
		if n < 5 || n > uint32(len(body)) {
			break
		}
		o, err := st.bd.Decode(body[4:n])
		if err != nil {
			break
		}
		if _, ok := keyOf(o, st.keyPos); !ok {
			break
		}
		st.out = append(st.out, o)
		body = body[n:]
	}
	if len(body) > 0 {
		clear(st.out[a:])
		st.out = st.out[:a]
		return false
	}
	return true
}

// scanDecode decodes the objects of one bucket read by scanRead into
// st.objs. It runs without the lock: the body is st's own copy.
func (t *Table) scanDecode(st *scanState, r scanRef) ([]etf.Term, error) {
	body := st.body(r)
	objs := st.objs[:0]
	var bErr *bucketError
	if st.kind == Set {
		// Decoding validates; a set's bucket needs no more checks than
		// parseRaw's (each object a tuple holding the key).
		bErr = parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
			o, err := st.bd.Decode(enc)
			if err != nil {
				return undecodable(off, err)
			}
			if _, ok := keyOf(o, st.keyPos); !ok {
				return &bucketError{off: off, reason: fmt.Sprintf("object is not a tuple with at least %d elements", st.keyPos)}
			}
			objs = append(objs, o)
			return nil
		})
	} else {
		var gs []group
		if gs, bErr = parseRaw(st.kind, st.keyPos, body); bErr == nil {
		decode:
			for i := range gs {
				for j := range gs[i].objs {
					o := gs[i].objs[j].term
					if o == nil {
						var err error
						if o, err = st.bd.Decode(gs[i].objs[j].enc); err != nil {
							bErr = undecodable(0, err)
							break decode
						}
					}
					objs = append(objs, o)
				}
			}
		}
	}
	st.objs = objs
	if bErr != nil {
		clear(objs)
		err := objectError(t.path, r.ptr+int64(bErr.off), r.slot, bErr)
		t.mu.Lock()
		t.fail(err)
		t.mu.Unlock()
		return nil, err
	}
	return objs, nil
}
