package dets

import (
	"fmt"
	"math/bits"

	"github.com/godets/godets/etf"
)

// Stats is what (*Table).Stats measures in one pass over the slot table,
// the buckets and the free lists: the numbers behind `dets stats`.
type Stats struct {
	Objects int64 // objects found in the buckets
	Keys    int64 // distinct keys found in the buckets
	Slots   Slots // as Info reports them
	// Buckets is the number of slots that hold a bucket (non-empty).
	Buckets int64

	// LoadFactor is Keys / Slots.Next. OTP grows a table by one segment
	// of 256 slots while it has more keys than slots and the maximum
	// allows, so a sound table has a load factor of at most 1 unless it
	// is at Slots.Max (GrowthDue tells the exception). A native table
	// grows at two keys a slot, so its bound is 2.
	LoadFactor float64
	// GrowthDue: more keys than slots (native: twice the slots) below
	// the maximum, so the next write by OTP (or by this package) adds
	// segments.
	GrowthDue bool

	// BucketObjects is a histogram of buckets by objects per bucket,
	// empty slots included (the first bin counts them).
	BucketObjects []Bin
	// BucketClasses are the buckets per buddy size class (block size a
	// power of two), ascending; only classes that have buckets. A native
	// bucket in a cell counts in the smallest class that holds the cell.
	BucketClasses []SizeClass
	// FreeClasses are the free blocks per buddy size class, ascending;
	// only classes that have blocks.
	FreeClasses []SizeClass

	FileSize  int64 // the file's length in bytes
	FreeBytes int64 // bytes in free blocks below the end of the data
	// Fragmentation is FreeBytes / FileSize: the share of the file held
	// by free blocks that a compaction would give back.
	Fragmentation float64
	// BlockBytes is the bytes of the blocks that hold buckets (each a
	// power of two; native: cells and blocks, §7.2 of
	// docs/format-native.md); BucketBytes the bytes the buckets use of
	// them.
	BlockBytes, BucketBytes int64

	// LargestObject is the size in bytes of the largest object's
	// encoding (term_to_binary), and LargestObjectSlot its slot.
	LargestObject     int64
	LargestObjectSlot int64
	// KeyBytes and ValueBytes split the objects' encodings into the key
	// element's bytes and the rest (tags and the other elements).
	KeyBytes, ValueBytes int64

	// nativeCompacted is CompactedSize for a native table, which the walk
	// works out (stats_native.go); 0 for otp9.
	nativeCompacted int64
}

// Bin is one bar of a histogram: Count items with a value in [Min, Max].
type Bin struct{ Min, Max, Count int64 }

// SizeClass counts the blocks of one buddy size class.
type SizeClass struct {
	BlockSize int64 // bytes, a power of two
	Count     int64
	Bytes     int64 // Count * BlockSize
}

// Stats walks the slot table, every bucket and the free lists once and
// reports their shape. It reads objects' encodings without decoding them
// (a compressed object is decoded to find its key). A bucket that cannot
// be parsed ends the walk with an error matching ErrCorrupt.
func (t *Table) Stats() (Stats, error) {
	if err := t.begin(false); err != nil {
		return Stats{}, err
	}
	defer t.mu.Unlock()
	w := statsWalk{t: t}
	if t.lay.tag == tagNative {
		w.rebuild = newRebuildEstimate(t)
	}
	if err := w.buckets(); err != nil {
		return Stats{}, err
	}
	if t.lay.tag == tagNative {
		if err := w.nativeFree(); err != nil {
			return Stats{}, err
		}
		w.st.nativeCompacted = w.rebuild.size()
	} else {
		w.freeBlocks()
	}
	return w.result(), nil
}

// statsWalk accumulates Stats. Its access to the engine's layout is in
// buckets and freeBlocks only.
type statsWalk struct {
	t       *Table
	st      Stats
	perSize map[int64]int64  // objects per bucket -> buckets
	classes [64]int64        // buckets per log2(block size)
	free    [64]int64        // free blocks per log2(block size)
	rebuild *rebuildEstimate // native: CompactedSize's layout
}

func (w *statsWalk) buckets() error {
	t := w.t
	w.perSize = map[int64]int64{}
	for s := range t.h.next / slotsPerSeg { // cache pages: a native segment is two
		seg, err := t.segment(s)
		if err != nil {
			return err
		}
		for i, word := range seg {
			slot := s*slotsPerSeg + uint64(i)
			if slot >= t.h.next {
				break
			}
			e := t.entryOf(word)
			if e.size == 0 {
				w.perSize[0]++
				continue
			}
			body, err := t.readBucket(slot, e)
			if err != nil {
				return err
			}
			var n int64
			used, block := e.size, pow2ceil(e.size)
			if t.lay.tag == tagNative {
				// A native entry's size is its cell's or block's; the
				// bucket's own size is in its header.
				n, err = w.nativeBucket(int64(slot), e, body)
				used, block = int64(len(body)), e.size
				w.rebuild.current(slot, t.h.next, uint64(used))
			} else {
				n, err = w.bucket(int64(slot), body)
			}
			if err != nil {
				return corrupt(t.path, "bucket", int64(e.ptr), "slot %d: %v", slot, err)
			}
			w.perSize[n]++
			w.st.Buckets++
			w.st.BucketBytes += used
			w.st.BlockBytes += block
			w.classes[log2ceil(block)]++
		}
	}
	w.st.Slots = t.slots()
	w.st.FileSize = t.size
	if t.dirty {
		w.st.FileSize = t.fileEnd
	}
	return nil
}

// bucket adds the objects of one bucket body and returns their number.
func (w *statsWalk) bucket(slot int64, body []byte) (int64, error) {
	var objects int64
	object := func(enc []byte) error {
		ks, err := w.keySize(enc)
		if err != nil {
			return err
		}
		n := int64(len(enc))
		w.st.KeyBytes += ks
		w.st.ValueBytes += n - ks
		if n > w.st.LargestObject {
			w.st.LargestObject, w.st.LargestObjectSlot = n, slot
		}
		objects++
		return nil
	}
	if w.t.kind == Set {
		if err := eachRecord(body, 5, object); err != nil {
			return 0, err
		}
		w.st.Keys += objects
	} else {
		err := eachRecord(body, 9, func(group []byte) error {
			w.st.Keys++
			return eachRecord(group, 5, object)
		})
		if err != nil {
			return 0, err
		}
	}
	w.st.Objects += objects
	return objects, nil
}

// eachRecord calls fn for the payload of each <<Size:32, Payload>> record
// that tiles b; Size counts its own four bytes and is at least min.
func eachRecord(b []byte, min int, fn func([]byte) error) error {
	for off := 0; off < len(b); {
		if len(b)-off < 4 {
			return fmt.Errorf("truncated record size at %d", off)
		}
		sz := int(be.Uint32(b[off:]))
		if sz < min || sz > len(b)-off {
			return fmt.Errorf("record size %d out of range at %d", sz, off)
		}
		if err := fn(b[off+4 : off+sz]); err != nil {
			return err
		}
		off += sz
	}
	return nil
}

// keySize is the size of the key element's encoding in an object's
// encoding; a compressed object is decoded to measure it.
func (w *statsWalk) keySize(enc []byte) (int64, error) {
	if k := keySpan(enc, w.t.keyPos); k != nil {
		return int64(len(k)), nil
	}
	obj, err := decodeTerm(enc)
	if err != nil {
		return 0, fmt.Errorf("undecodable object: %v", err)
	}
	key, ok := keyOf(obj, w.t.keyPos)
	if !ok {
		return 0, fmt.Errorf("object is not a tuple with at least %d elements", w.t.keyPos)
	}
	n, err := etf.EncodedSize(key)
	return int64(n - 1), err // without the version byte, as keySpan
}

// nativeBucket is bucket for a native bucket (b: header included), whose
// objects walkNativeBucket verifies; a key's objects are adjacent.
func (w *statsWalk) nativeBucket(slot int64, e slotEntry, b []byte) (int64, error) {
	var objects int64
	var last []byte
	_, err := walkNativeBucket(w.t.path, b, e.ptr, uint64(len(b)), w.t.keyPos, func(_ int64, enc, kenc []byte) error {
		if objects == 0 || !sameStoredKey(kenc, last) {
			w.st.Keys++
			w.rebuild.key(kenc)
		}
		w.rebuild.object(len(enc))
		last = kenc
		n := int64(len(enc))
		w.st.KeyBytes += int64(len(kenc))
		w.st.ValueBytes += n - int64(len(kenc))
		if n > w.st.LargestObject {
			w.st.LargestObject, w.st.LargestObjectSlot = n, slot
		}
		objects++
		return nil
	})
	w.st.Objects += objects
	return objects, err
}

// nativeFree counts the free buddy blocks below the end of the data and
// the free cells of the runs, from the allocator, or from the current
// meta's free record when no write loaded it (read-only opens). Pending
// and quarantined space is not free: a later checkpoint frees it.
func (w *statsWalk) nativeFree() error {
	t := w.t
	a := t.nat.alloc
	if a == nil {
		m := &t.nat.meta
		b := make([]byte, m.freeLen)
		if err := readFull(t.f, b, int64(m.freeOff)); err != nil {
			return t.ioErr("freelist", int64(m.freeOff), err)
		}
		var err error
		if a, err = decodeNativeFree(t.path, b, int64(m.freeOff), m.freeSum, t.nat.super.base, m.dataEnd); err != nil {
			return err
		}
	}
	end := uint64(t.fileEnd)
	for k, offs := range a.free {
		for _, off := range offs {
			if off < end {
				w.free[k]++
				w.st.FreeBytes += int64(min(uint64(1)<<k, end-off))
			}
		}
	}
	for _, r := range a.runs {
		size := cellSize(int(r.class))
		n := int64(0)
		for _, x := range r.free[:r.words()] {
			n += int64(bits.OnesCount64(x))
		}
		w.free[log2ceil(int64(size))] += n
		w.st.FreeBytes += n * int64(size)
	}
	return nil
}

func (w *statsWalk) freeBlocks() {
	end := w.t.fileEnd
	w.t.bud.each(func(class int, a int64) {
		if a >= end {
			return // the unallocated rest of the 2 GiB buddy area
		}
		size := min(blockSize(class), end-a)
		w.free[log2ceil(blockSize(class))]++
		w.st.FreeBytes += size
	})
}

func (w *statsWalk) result() Stats {
	st := w.st
	if st.Slots.Next > 0 {
		st.LoadFactor = float64(st.Keys) / float64(st.Slots.Next)
	}
	st.GrowthDue = st.Keys > int64(w.t.lay.keysPerSlot)*int64(st.Slots.Next) && st.Slots.Next < st.Slots.Max
	if st.FileSize > 0 {
		st.Fragmentation = float64(st.FreeBytes) / float64(st.FileSize)
	}
	st.BucketObjects = histogram(w.perSize)
	st.BucketClasses = sizeClasses(w.classes[:])
	st.FreeClasses = sizeClasses(w.free[:])
	return st
}

// histogram bins counts by value: one bin per value up to 8, then bins
// of doubling width (9-16, 17-32, ...). Bins between the first and the
// last non-empty one are kept, empty or not, so bars line up.
func histogram(counts map[int64]int64) []Bin {
	var bins []Bin
	bin := func(v int64) (lo, hi int64) {
		if v <= 8 {
			return v, v
		}
		lo = 9
		for hi = 16; v > hi; hi *= 2 {
			lo = hi + 1
		}
		return lo, hi
	}
	var maxV int64 = -1
	for v := range counts {
		maxV = max(maxV, v)
	}
	for v := int64(0); v <= maxV; {
		lo, hi := bin(v)
		b := Bin{Min: lo, Max: hi}
		for x, n := range counts {
			if x >= lo && x <= hi {
				b.Count += n
			}
		}
		bins = append(bins, b)
		v = hi + 1
	}
	for len(bins) > 0 && bins[0].Count == 0 {
		bins = bins[1:]
	}
	return bins
}

func sizeClasses(byLog2 []int64) []SizeClass {
	var out []SizeClass
	for k, n := range byLog2 {
		if n > 0 {
			out = append(out, SizeClass{BlockSize: 1 << k, Count: n, Bytes: n << k})
		}
	}
	return out
}

// CompactedSize estimates the file size after a compaction (a ForceRepair
// rebuild) of the table these stats describe. otp9: the header and part
// table, the parts and segments for one slot per key (within the slot
// bounds), the buckets' blocks packed without gaps, and a short free-list
// area. Native: what the rebuild's allocator would take (nativeBuilder),
// the cells in 64 KiB runs class by class, the large buckets' blocks, a
// page per segment and part, the root and the free record. The buckets
// are counted as they are now; the rebuild spreads the keys over the new
// slot count, which changes them somewhat.
func (s Stats) CompactedSize() int64 {
	if s.Slots.Min <= 0 || s.Slots.Max <= 0 {
		return 0
	}
	if s.nativeCompacted != 0 {
		return s.nativeCompacted
	}
	next := int64(nextForKeys(s.Keys, uint64(s.Slots.Min), uint64(s.Slots.Max)))
	segs := next / slotsPerSeg
	parts := (segs + segsPerPart - 1) / segsPerPart
	used := parts*partSize + segs*segmentSize + s.BlockBytes
	// The packed blocks leave one free block per set bit of the rest of
	// the buddy area, each a 16-byte free-list record; then the
	// terminator and the trailer.
	rest := blockSize(maxBuddyClass) - used
	freeListArea := int64(16*bits.OnesCount64(uint64(max(rest, 0)))) + 12 + trailerSize
	return baseAddr + used + freeListArea
}
