package dets

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/godets/godets/etf"
)

// Repair rebuilds a table from the ACTIVE buckets that a scan of the old file
// finds (otp-dets-format.md §7), and atomically replaces the old file.
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
// time.
//
// Speed: on a large file the scan runs on two goroutines (runSplit); the
// build encodes buckets straight into write buffers that a second goroutine
// writes, asking the kernel to start writeback of each (Linux), so the fsync
// before the rename has little left; the replaced file is closed after the
// rename, off the caller's path.
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
var repairMemEntries = 2 << 20

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

	kind, keyPos, minS, maxS, maxSz, trusted, err := repairShape(data, p)
	if err != nil {
		return st, err
	}
	var hint int64
	if trusted && len(data) >= headerSize {
		hint = min(int64(be.Uint32(data[offNoObjects:])), size/16)
	}

	// Scan into the index.
	idx := &entryIndex{fs: p.fs, path: sortPath(p.path), limit: repairMemEntries}
	if hint > 0 {
		// The header's object count (possibly stale) sizes the index.
		idx.mem = make([]repairEntry, 0, min(hint+hint/8+1024, int64(idx.limit)))
	}
	defer idx.cleanup()
	var sketch hll
	sc := &scanner{data: data, kind: kind, keyPos: keyPos, maxSz: maxSz,
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
	if err := sc.run(); err != nil {
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

	it, err := idx.sorted(func(e repairEntry) uint32 { return slotOf(e.hash, m, n) }, uint32(next))
	if err != nil {
		return st, err
	}
	st.ExternalSort = idx.spilled
	if oi, ok := it.(*orderIter); ok {
		oi.data = data
	}

	// Build PATH.TMP.
	tmp := tmpPath(p.path)
	out, err := p.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return st, err
	}
	w := newTableWriter(out, kind, keyPos, m, n, minS, maxS, chunkFor(size))
	var written int64
	b := &slotBuilder{data: data, kind: kind, keyPos: keyPos, w: w}
	if p.progress != nil {
		b.report = func(o int64) {
			p.progress(RepairProgress{Phase: "write", BytesScanned: size, BytesTotal: size, Objects: o})
		}
	}
	err = b.run(it, func(e repairEntry) uint32 { return slotOf(e.hash, m, n) })
	if err == nil {
		err = w.finish()
	} else {
		w.abort()
	}
	written = w.objects
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
	w      *tableWriter
	report func(objects int64)

	groups []group
	slab   []object // objects of the current slot's groups
	buf    []byte
}

func (b *slotBuilder) run(it entryIter, slotFn func(repairEntry) uint32) error {
	cur := int64(-1)
	var done int64
	for {
		e, ok, err := it.next()
		if err != nil {
			return err
		}
		s := int64(-1)
		if ok {
			s = int64(slotFn(e))
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
		if int64(e.off)+int64(e.n) > int64(len(b.data)) {
			return fmt.Errorf("dets: repair index entry beyond the file")
		}
		// The scan proved the object; it is copied as raw bytes, and its
		// key is compared through its encoding (decoded only when the
		// encodings alone cannot decide).
		enc := b.data[e.off : e.off+uint64(e.n)]
		o := object{enc: enc, kenc: keySpan(enc, b.keyPos)}
		var k etf.Term
		if o.kenc == nil {
			t, err := decodeTerm(enc)
			if err != nil {
				return fmt.Errorf("dets: repair: object at %d no longer decodes: %w", e.off, err)
			}
			o.term = t
			k, _ = keyOf(t, b.keyPos)
		}
		b.groups, _, _ = applyInsertSlab(b.kind, b.groups, k, o, b.keyPos, &b.slab)
		done++
		if b.report != nil && done%(1<<16) == 0 {
			b.report(done)
		}
	}
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
	return err
}

// tableWriter lays out a fresh closed table: header, parts at 1336, all
// segments after them, then the buckets, each in a block of its
// power-of-two size aligned relative to 1336 (so the buddy base is 1336 and
// FlBase is 0).
//
// Buckets are grouped by size class, so that blocks pack without alignment
// gaps (OTP groups them too, largest class first): each class below the
// chunk size fills a chunk of its own, taken from the end of the file when
// the class's current one is full; a chunk holds whole blocks of any such
// class, so chunks and larger blocks keep each other aligned. Only the
// unused tails of the last chunks, and the space after the last block, go
// into the free lists, decomposed into maximal buddy blocks.
//
// Chunks and segments are assembled in buffers that an asyncWriter writes
// out, so the file system's copying overlaps with the building.
type tableWriter struct {
	f                  File
	aw                 *asyncWriter
	kind               Kind
	keyPos             int
	m, n, next         uint32
	minSlots, maxSlots uint32
	nParts, nSegs      int64
	bucketsStart       int64
	pos                int64 // next free byte (chunk-aligned once buckets begin)
	chunk              int64 // chunk size, a power of two
	open               [maxBuddyClass + 1]classChunk
	big                []byte // a bucket of a block >= chunk, written at the next call
	bigAt              int64
	segBuf             []byte // segments segFirst.. (segBatch of them)
	segFirst           int64
	free               buddy
	counters           [numCounters]uint32
	objects, keys      int64
	lastSlot           int64
}

// classChunk is the chunk a size class is filling: buf holds its blocks so
// far, from file address at.
type classChunk struct {
	buf []byte
	at  int64
}

var earlySyncBytes int64 = 4194304

const (
	segBatch     = 64 // segments per write (128 KiB)
	minChunk     = 4 << 10
	maxChunk     = 256 << 10
	chunkSpare   = 4 // chunk buffers in flight beyond one per class
	chunkPerFile = 64
)

// chunkFor picks the chunk size for a table rebuilt from a file of size
// bytes: small tables get small chunks, so the unused chunk tails stay a
// small part of the file.
func chunkFor(size int64) int64 {
	c := int64(minChunk)
	for c < maxChunk && c*chunkPerFile < size {
		c <<= 1
	}
	return c
}

func newTableWriter(f File, kind Kind, keyPos int, m, n, minS, maxS uint32, chunk int64) *tableWriter {
	next := int64(m) + int64(n)
	nSegs := next / slotsPerSeg
	nParts := (nSegs + segsPerPart - 1) / segsPerPart
	start := int64(baseAddr) + (nParts+nSegs)*segmentSize
	w := &tableWriter{
		f: f, kind: kind, keyPos: keyPos, m: m, n: n, next: uint32(next),
		minSlots: minS, maxSlots: maxS, nParts: nParts, nSegs: nSegs,
		bucketsStart: start, chunk: chunk, lastSlot: -1,
	}
	w.free.base = baseAddr
	w.pos = baseAddr + (start-baseAddr+chunk-1)/chunk*chunk
	w.freeRange(start, w.pos)
	// One buffer per class that uses chunks (blocks of 1 byte up to
	// chunk/2), plus a few in flight, so take never waits for ever.
	w.aw = newAsyncWriter(f, log2ceil(chunk)+chunkSpare, int(chunk), 2, segBatch*segmentSize)
	w.segBuf = w.aw.take(segStream)[:segBatch*segmentSize]
	return w
}

func (w *tableWriter) segAddr(j int64) int64 { return baseAddr + (w.nParts+j)*segmentSize }

// flushSegs writes the segment batches that end at or before segment upto.
func (w *tableWriter) flushSegs(upto int64) error {
	for w.segFirst+segBatch <= upto {
		if err := w.aw.submit(segStream, w.segBuf, w.segAddr(w.segFirst)); err != nil {
			return err
		}
		w.segFirst += segBatch
		w.segBuf = w.aw.take(segStream)[:segBatch*segmentSize]
		clear(w.segBuf)
	}
	return nil
}

// flushBig queues the large bucket encoded since the last call, if any.
func (w *tableWriter) flushBig() error {
	if w.big == nil {
		return nil
	}
	// The caller encoded into w.big's capacity.
	b := w.big[:cap(w.big)]
	w.big = nil
	return w.aw.submit(noStream, b, w.bigAt)
}

// addBucket places the bucket of slot, size bytes long, and returns the
// empty slice (with capacity size) to encode it into before the next call.
func (w *tableWriter) addBucket(slot uint32, size int64, keys, objects int) ([]byte, error) {
	if int64(slot) <= w.lastSlot || slot >= w.next {
		return nil, fmt.Errorf("dets: repair: slot %d out of order", slot)
	}
	w.lastSlot = int64(slot)
	if err := w.flushBig(); err != nil {
		return nil, err
	}
	if err := w.flushSegs(int64(slot) / slotsPerSeg); err != nil {
		return nil, err
	}
	block := pow2ceil(size)
	var a int64
	var dst []byte
	if block >= w.chunk {
		// A block of its own; w.pos is chunk-aligned, so any gap before
		// it is whole chunks.
		a = baseAddr + (w.pos-baseAddr+block-1)/block*block
		if a+block > allocLimit {
			return nil, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
		}
		w.freeRange(w.pos, a)
		w.pos = a + block
		w.big, w.bigAt = make([]byte, 0, size), a
		dst = w.big
	} else {
		ch := &w.open[buddyClass(size)]
		if ch.buf != nil && int64(len(ch.buf))+block > w.chunk {
			if err := w.aw.submit(bucketStream, ch.buf, ch.at); err != nil {
				return nil, err
			}
			ch.buf = nil
		}
		if ch.buf == nil {
			if w.pos+block > allocLimit {
				return nil, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
			}
			ch.buf, ch.at = w.aw.take(bucketStream), w.pos
			w.pos += w.chunk
		}
		at := int64(len(ch.buf))
		a = ch.at + at
		if a+block > allocLimit {
			return nil, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
		}
		ch.buf = ch.buf[:at+block]
		clear(ch.buf[at+size:])
		dst = ch.buf[at : at : at+size]
	}
	w.counters[counterIndex(size)]++
	e := w.segBuf[(int64(slot)/slotsPerSeg-w.segFirst)*segmentSize+int64(slot%slotsPerSeg)*slotEntrySize:]
	be.PutUint32(e, uint32(size))
	be.PutUint32(e[4:], uint32(a))
	w.objects += int64(objects)
	w.keys += int64(keys)
	return dst, nil
}

// flushChunks queues the partly filled chunks and frees their unused
// tails; the chunk at the end of the file is cut short instead.
func (w *tableWriter) flushChunks() error {
	var err error
	for c := maxBuddyClass; c >= 1; c-- {
		ch := &w.open[c]
		if ch.buf == nil {
			continue
		}
		used := ch.at + int64(len(ch.buf))
		if err == nil {
			err = w.aw.submit(bucketStream, ch.buf, ch.at)
		}
		ch.buf = nil
		if ch.at+w.chunk == w.pos {
			w.pos = used
		} else {
			w.freeRange(used, ch.at+w.chunk)
		}
	}
	return err
}

// freeRange adds [a, b) to the free lists as maximal aligned buddy blocks.
func (w *tableWriter) freeRange(a, b int64) {
	for a < b {
		sz := int64(1) << (maxBuddyClass - 1)
		for (a-baseAddr)%sz != 0 || a+sz > b {
			sz >>= 1
		}
		c := buddyClass(sz)
		w.free.free[c] = append(w.free.free[c], uint32(a))
		a += sz
	}
}

// abort stops the background writes of a failed build.
func (w *tableWriter) abort() { w.aw.close() }

// finish writes the remaining segments, the parts, the free lists, the
// trailer and the header.
func (w *tableWriter) finish() error {
	err := w.flushSegs(w.nSegs)
	if err == nil && w.segFirst < w.nSegs {
		err = w.aw.submit(segStream, w.segBuf[:(w.nSegs-w.segFirst)*segmentSize], w.segAddr(w.segFirst))
	}
	if err == nil {
		err = w.flushBig()
	}
	if err == nil {
		err = w.flushChunks()
	}
	if cerr := w.aw.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	w.freeRange(w.pos, baseAddr+1<<31)
	// The chunk tails were freed out of address order.
	for c := range w.free.free {
		slices.Sort(w.free.free[c])
	}
	// Parts.
	part := make([]byte, w.nParts*partSize)
	for i := int64(0); i < w.nSegs; i++ {
		be.PutUint32(part[4*i:], uint32(w.segAddr(i)))
	}
	if _, err := w.f.WriteAt(part, baseAddr); err != nil {
		return err
	}
	// Free lists and trailer at EOF.
	flp := w.pos
	fl := w.free.appendFreeLists(nil)
	fl = be.AppendUint32(fl, uint32(flp+int64(len(fl))+trailerSize))
	if _, err := w.f.WriteAt(fl, flp); err != nil {
		return err
	}
	// Header, reserved bytes and part table.
	hb := make([]byte, baseAddr)
	h := header{
		freelistsPtr: uint32(flp), closed: closedProperly, typ: uint32(w.kind),
		m: w.m, next: w.next, n: w.n, keyPos: uint32(w.keyPos),
		noObjects: uint32(w.objects), noKeys: uint32(w.keys),
		minSlots: w.minSlots, maxSlots: w.maxSlots, hashMethod: hashPhash2,
		counters: w.counters, hasMD5: true,
	}
	h.encode(hb)
	for i := int64(0); i < w.nParts; i++ {
		be.PutUint32(hb[partTableOff+4*i:], uint32(baseAddr+i*partSize))
	}
	_, err = w.f.WriteAt(hb, 0)
	return err
}

// The asyncWriter's buffer streams.
const (
	bucketStream = iota
	segStream
	numStreams
	noStream = -1 // a buffer of its own, dropped once written
)

// asyncWriter writes buffers at offsets on a goroutine of its own. Each
// stream makes buffers as needed up to a limit, then take blocks until one
// is back from the writer, so the memory in flight is bounded.
type asyncWriter struct {
	f        File
	jobs     chan writeJob
	free     [numStreams]chan []byte // capacity: the stream's buffer limit
	made     [numStreams]int         // buffers made so far
	size     [numStreams]int         // their capacity
	done     chan struct{}
	err      error // set by the goroutine; read after done, or via failed
	failed   atomic.Bool
	closed   bool
	unsynced int64
}

type writeJob struct {
	b      []byte
	off    int64
	stream int
}

func newAsyncWriter(f File, nBuf, bufSize, nSeg, segSize int) *asyncWriter {
	aw := &asyncWriter{f: f, jobs: make(chan writeJob, nBuf+nSeg), done: make(chan struct{})}
	aw.free[bucketStream] = make(chan []byte, nBuf)
	aw.free[segStream] = make(chan []byte, nSeg)
	aw.size = [numStreams]int{bufSize, segSize}
	go aw.loop()
	return aw
}

func (aw *asyncWriter) loop() {
	defer close(aw.done)
	for j := range aw.jobs {
		if aw.err == nil {
			if _, err := aw.f.WriteAt(j.b, j.off); err != nil {
				aw.err = err
				aw.failed.Store(true)
			}
			startWriteback(aw.f, j.off, int64(len(j.b)))
		}
		if j.stream != noStream {
			aw.free[j.stream] <- j.b[:0]
		}
	}
}

// take returns an empty buffer of stream s, making one while the stream
// has fewer than its limit.
func (aw *asyncWriter) take(s int) []byte {
	select {
	case b := <-aw.free[s]:
		return b
	default:
	}
	if aw.made[s] < cap(aw.free[s]) {
		aw.made[s]++
		return make([]byte, 0, aw.size[s])
	}
	return <-aw.free[s]
}

// submit queues b for writing at off; b belongs to the writer until a later
// take returns it.
func (aw *asyncWriter) submit(s int, b []byte, off int64) error {
	if aw.failed.Load() {
		if s != noStream {
			aw.free[s] <- b[:0]
		}
		return aw.close()
	}
	aw.jobs <- writeJob{b: b, off: off, stream: s}
	return nil
}

// close waits for the queued writes and returns the first error.
func (aw *asyncWriter) close() error {
	if !aw.closed {
		aw.closed = true
		close(aw.jobs)
	}
	<-aw.done
	return aw.err
}

// entryIter yields index entries in sorted order.
type entryIter interface {
	next() (repairEntry, bool, error)
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
// below nslots.
func (x *entryIndex) sorted(slot func(repairEntry) uint32, nslots uint32) (entryIter, error) {
	if !x.spilled {
		if ord, ok := countingOrder(x.mem, slot, nslots); ok {
			return &orderIter{es: x.mem, ord: ord}, nil
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
		return &memIter{es: x.mem}, nil
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
	m := &mergeIter{runs: runs, cmp: cmp}
	for _, r := range runs {
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// countingOrder orders es by (slot, off) with a counting sort over the
// slots, which is stable: the scan emits entries in file order, so the
// result is in offset order within each slot. It returns the order as
// indexes (4 bytes per entry, not a second copy of the index), or false
// when es is not in offset order or the slot table would be much larger
// than the index.
func countingOrder(es []repairEntry, slot func(repairEntry) uint32, nslots uint32) ([]uint32, bool) {
	if len(es) == 0 || len(es) > math.MaxUint32 || uint64(nslots) > 4*uint64(len(es))+1<<16 {
		return nil, false
	}
	start := make([]uint32, nslots+1)
	for i := range es {
		if i > 0 && es[i].off <= es[i-1].off {
			return nil, false
		}
		s := slot(es[i])
		if s >= nslots {
			return nil, false
		}
		start[s+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	ord := make([]uint32, len(es))
	for i := range es {
		s := slot(es[i])
		ord[start[s]] = uint32(i)
		start[s]++
	}
	return ord, true
}

// orderIter yields es in the order ord gives.
type orderIter struct {
	es   []repairEntry
	ord  []uint32
	i    int
	data []byte // the old file, to prefetch from (may be nil)
	sink byte
}

func (o *orderIter) next() (repairEntry, bool, error) {
	if o.i >= len(o.ord) {
		return repairEntry{}, false, nil
	}
	// The objects are read in slot order, which is random in the file.
	// Touching a whole batch of them ahead, in a loop of independent
	// loads, lets their cache and TLB misses overlap with each other.
	if o.i%prefetchBatch == 0 && o.data != nil {
		if o.i == 0 {
			o.touch(0)
		}
		o.touch(o.i + prefetchBatch)
	}
	o.i++
	return o.es[o.ord[o.i-1]], true, nil
}

// touch reads one byte per cache line of the objects of batch from..
func (o *orderIter) touch(from int) {
	if from >= len(o.ord) {
		return
	}
	var s byte
	for _, j := range o.ord[from:min(from+prefetchBatch, len(o.ord))] {
		e := o.es[j]
		end := min(e.off+uint64(min(e.n, prefetchMax)), uint64(len(o.data)))
		for p := e.off; p < end; p += 64 {
			s += o.data[p]
		}
	}
	o.sink += s
}

const (
	prefetchBatch = 32
	prefetchMax   = 1024 // bytes touched per object
)

type memIter struct {
	es []repairEntry
	i  int
}

func (m *memIter) next() (repairEntry, bool, error) {
	if m.i >= len(m.es) {
		return repairEntry{}, false, nil
	}
	m.i++
	return m.es[m.i-1], true, nil
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
}

func (m *mergeIter) next() (repairEntry, bool, error) {
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
		return repairEntry{}, false, nil
	}
	r := m.runs[best]
	e := r.buf[0]
	r.buf = r.buf[1:]
	if len(r.buf) == 0 {
		if err := r.fill(); err != nil {
			return e, false, err
		}
	}
	return e, true, nil
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
// file exclusively (package exclusive).
func Repair(path string, opts Options, progress func(RepairProgress)) (RepairStats, error) {
	if err := opts.validate(); err != nil {
		return RepairStats{}, err
	}
	return repairTable(paramsFor(path, opts, progress))
}
