package dets

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godets/godets/etf"
)

// slotBuilder turns the sorted index into buckets, applying the kind's
// insert rule to each slot's objects in file order (docs/repair.md §3):
//   - set: the object latest in the file wins (OTP's rule). A crash can
//     leave two ACTIVE copies of a bucket; the later one is usually, but not
//     necessarily, the newer.
//   - bag: identical objects (=:=) collapse to one, at the position of the
//     last copy, as a re-insert would.
//   - duplicate_bag: every copy is kept. When a crash interrupts the move of
//     a bucket to another block, both copies can still be ACTIVE, and the
//     slot's objects come back doubled (OTP has the same caveat): otp9
//     objects carry no sequence number to tell the stale copy from a real
//     duplicate.
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

// tableWriter lays out a fresh closed table: header, parts at 1336, all
// segments after them, then the buckets, each in a block of its
// power-of-two size aligned relative to 1336 (so the buddy base is 1336 and
// FlBase is 0):
//
//	| header | parts | segments | buckets ... | free lists | trailer |
//	0        1336               start         pos
//
// Buckets are laid out in one of two ways.
//
// Planned (small tables, see planExact): a first pass over the slots only
// sizes the buckets; every block is then allocated up front, largest class
// first, from the lowest free space after the segments (planBlocks).
// Blocks of one class end up side by side and the smaller classes fill
// the alignment gaps the larger ones leave, so no holes are left below
// the data beyond gaps no remaining block fits (OTP's repair also packs
// classes largest first). The data ends right after the bytes of the top
// bucket, which is chosen for the most unused bytes in its block.
//
// Chunked (large tables, one pass): buckets are grouped by size class, so
// that blocks pack without alignment gaps: each class below the chunk size
// fills a chunk of its own, taken from the end of the file when the
// class's current one is full; a chunk holds whole blocks of any such
// class, so chunks and larger blocks keep each other aligned. Only the
// unused tails of the last chunks, and the space after the last block, go
// into the free lists, decomposed into maximal buddy blocks.
//
// The slots are divided among placers, each a contiguous range of whole
// segments that one goroutine builds in slot order: a placer fills chunks
// of its own and writes its own segments, and only taking space at the end
// of the file (a chunk, or a block of its own) is shared. Chunks and
// segments are assembled in buffers that an asyncWriter writes out, so the
// file system's copying overlaps with the building. A planned layout has
// one placer, whose buffers each cover a run of adjacent blocks of a class.
type tableWriter struct {
	f                  File
	aw                 *asyncWriter
	kind               Kind
	keyPos             int
	m, n, next         uint32
	minSlots, maxSlots uint32
	nParts, nSegs      int64
	bucketsStart       int64
	chunk              int64 // chunk size, a power of two
	placers            []*placer

	mu sync.Mutex // guards dataEnd while placers run
	// dataEnd: pos is the next free byte (chunk-aligned once buckets
	// begin); free holds the gaps below it.
	dataEnd
	planned bool // the layout is planned (planExact): free is complete

	// Totals, set by finish.
	counters      [numCounters]uint32
	objects, keys int64
}

// placer places the buckets of the slots [lo, hi).
type placer struct {
	w             *tableWriter
	hi            uint32
	lastSlot      int64
	open          [maxBuddyClass + 1]classChunk
	big           []byte // a bucket of a block >= chunk, written at the next call
	bigAt         int64
	segBuf        []byte // segments segFirst.. (segBatch of them)
	segFirst      int64
	segEnd        int64 // the placer's segments end here
	counters      [numCounters]uint32
	objects, keys int64

	// plan is the planned layout (nil: chunked); placed counts the
	// buckets placed per class, and the data ends at topEnd.
	plan   *blockPlan
	placed [maxBuddyClass + 1]int64
	topEnd int64
	// sizes, in the sizing pass of planExact, collects the buckets'
	// classes; they are encoded into scratch and dropped.
	sizes   *classSizes
	scratch []byte
}

// classChunk is the chunk a size class is filling: buf holds its blocks so
// far, from file address at.
type classChunk struct {
	buf []byte
	at  int64
}

const (
	segBatch     = 64 // segments per write (128 KiB)
	minChunk     = 4 << 10
	maxChunk     = 256 << 10
	chunkSpare   = 4 // chunk buffers in flight beyond one per class and placer
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

// newTableWriter prepares the layout of the table that plan p decided, in
// f. bounds are the placers' first slots, each a multiple of slotsPerSeg,
// the first 0 and all below p.next.
func newTableWriter(f File, p *repairPlan, bounds []uint32) (*tableWriter, error) {
	kind, keyPos, m, n := p.kind, p.keyPos, p.m, p.n
	minS, maxS, chunk := p.minSlots, p.maxSlots, chunkFor(p.size)
	next := int64(m) + int64(n)
	nSegs := next / slotsPerSeg
	nParts := (nSegs + segsPerPart - 1) / segsPerPart
	start := int64(baseAddr) + (nParts+nSegs)*segmentSize
	w := &tableWriter{
		f: f, kind: kind, keyPos: keyPos, m: m, n: n, next: uint32(next),
		minSlots: minS, maxSlots: maxS, nParts: nParts, nSegs: nSegs,
		bucketsStart: start, chunk: chunk,
	}
	if len(bounds) == 0 || bounds[0] != 0 {
		return nil, fmt.Errorf("dets: repair: placer bounds %v do not start at slot 0", bounds)
	}
	for i, lo := range bounds {
		hi := uint32(next)
		if i+1 < len(bounds) {
			hi = bounds[i+1]
		}
		if lo%slotsPerSeg != 0 || lo >= hi {
			return nil, fmt.Errorf("dets: repair: placer bounds %v do not divide %d slots", bounds, next)
		}
		w.placers = append(w.placers, &placer{w: w, hi: hi, lastSlot: int64(lo) - 1,
			segFirst: int64(lo) / slotsPerSeg, segEnd: int64(hi) / slotsPerSeg})
	}
	w.startData(start, chunk)
	// One buffer per class that uses chunks (blocks of 1 byte up to
	// chunk/2) and placer, plus a few in flight, so take never waits for
	// ever; two segment buffers per placer.
	np := len(w.placers)
	w.aw = newAsyncWriter(f, np*log2ceil(chunk)+chunkSpare, int(chunk), 2*np, segBatch*segmentSize, p.tune.earlySyncBytes)
	for _, p := range w.placers {
		p.segBuf = w.aw.take(segStream)[:segBatch*segmentSize]
		clear(p.segBuf)
	}
	return w, nil
}

func (w *tableWriter) segAddr(j int64) int64 { return baseAddr + (w.nParts+j)*segmentSize }

// Planned layouts are made for tables below these bounds, where a second
// pass over the objects costs little. Larger tables keep the one-pass
// chunked layout (their benchmarks run it unchanged), where the unused
// chunk tails are a small part of the file.
const (
	planMaxEntries = 1 << 16
	planMaxBytes   = 64 << 20 // of the old file
)

// planExact switches w to the planned layout when the table is small: it
// runs b's kind rules over a replay of the only iterator, collecting the
// buckets' classes, then plans every block. It leaves the chunked layout
// in place when there are several placers, the table is large, the
// iterator cannot be replayed, or the pass fails (the real pass then meets
// the same error). It must run before the placers start.
func (w *tableWriter) planExact(its []entryIter, b *slotBuilder, oldSize int64) {
	if len(its) != 1 || len(w.placers) != 1 || oldSize > planMaxBytes {
		return
	}
	it, n, ok := replay(its[0])
	if !ok || n >= planMaxEntries {
		return
	}
	p := w.placers[0]
	sp := &placer{w: w, hi: p.hi, lastSlot: p.lastSlot, sizes: new(classSizes)}
	sb := &slotBuilder{data: b.data, kind: b.kind, keyPos: b.keyPos, w: sp, done: new(atomic.Int64)}
	if sb.run(it) != nil {
		return
	}
	best, ok := bestPlan(w.bucketsStart, sp.sizes)
	if !ok {
		return
	}
	w.free, w.pos, w.planned = best.free, best.end, true
	p.plan, p.topEnd = best, best.end
}

// bestPlan plans the blocks of cs after segments that end at start.
// Whichever block ends the data is left short: the free lists start right
// after its bucket's bytes. So each class in turn offers its bucket with
// the most unused bytes for the top, and the plan with the smallest file
// wins.
func bestPlan(start int64, cs *classSizes) (*blockPlan, bool) {
	var best *blockPlan
	for c := 1; c <= maxBuddyClass; c++ {
		if cs.count[c] == 0 {
			continue
		}
		if pl, ok := planBlocks(start, cs, c); ok && (best == nil || pl.fileEnd < best.fileEnd) {
			best = pl
		}
	}
	if best != nil {
		return best, true
	}
	return planBlocks(start, cs, 0)
}

// classSizes is what the sizing pass learns: the buckets per class, and
// per class the bucket (by its ordinal within the class) with the most
// unused bytes in its block.
type classSizes struct {
	count      [maxBuddyClass + 1]int64
	roomiest   [maxBuddyClass + 1]int64 // ordinal
	roomiestSz [maxBuddyClass + 1]int64 // its size
}

// add counts the next bucket, size bytes long (at most allocLimit).
func (cs *classSizes) add(size int64) {
	c := buddyClass(size)
	if k := cs.count[c]; k == 0 || size < cs.roomiestSz[c] {
		cs.roomiest[c], cs.roomiestSz[c] = k, size
	}
	cs.count[c]++
}

// blockPlan is a planned layout: per class, runs of adjacent blocks for
// the class's buckets in slot order, except the bucket with ordinal topK
// of class topC, which goes at topAt.
type blockPlan struct {
	runs    [maxBuddyClass + 1][]planRun
	topC    int
	topK    int64
	topAt   int64
	trim    bool  // the top bucket ends the data
	end     int64 // the end of the data
	fileEnd int64 // the end of the file (with free lists and trailer)
	free    buddy
}

type planRun struct{ at, n int64 }

// planBlocks allocates the blocks of cs from a buddy allocator holding
// [start, 2 GiB): largest class first, each run in the smallest free block
// that fits (lowest address first), as many blocks as it holds. The free
// blocks then grow with their address, so a class's blocks come out
// adjacent, and only gaps below start's alignment are left for smaller
// classes to fill. The roomiest bucket of class topC (if not 0) is
// allocated last, so that it lands on top.
func planBlocks(start int64, cs *classSizes, topC int) (*blockPlan, bool) {
	pl := &blockPlan{topC: topC, topAt: -1, end: start, free: buddy{base: baseAddr}}
	freeRangeTo(&pl.free, start, baseAddr+1<<31)
	for c := maxBuddyClass; c >= 1; c-- {
		k, sz := cs.count[c], blockSize(c)
		if c == topC {
			k--
		}
		for k > 0 {
			p := c
			for p <= maxBuddyClass && len(pl.free.free[p]) == 0 {
				p++
			}
			if p > maxBuddyClass {
				return nil, false
			}
			a := int64(pl.free.free[p][0])
			n := min(k, blockSize(p)/sz)
			if a+n*sz > allocLimit {
				return nil, false
			}
			pl.free.free[p] = pl.free.free[p][1:]
			pl.runs[c] = append(pl.runs[c], planRun{a, n})
			freeRangeTo(&pl.free, a+n*sz, a+blockSize(p)) // the rest of the block
			pl.end = max(pl.end, a+n*sz)
			k -= n
		}
	}
	if topC > 0 {
		a, err := pl.free.alloc(blockSize(topC))
		if err != nil {
			return nil, false
		}
		pl.topK, pl.topAt = cs.roomiest[topC], a
		if a+blockSize(topC) > pl.end {
			pl.end, pl.trim = a+cs.roomiestSz[topC], true
		}
	}
	pl.fileEnd = pl.end + int64(len(pl.free.appendFreeLists(nil))) + trailerSize
	return pl, true
}

// replay returns a copy of it, which must not have started, and its entry
// count.
func replay(it entryIter) (entryIter, int, bool) {
	switch x := it.(type) {
	case *orderIter:
		if !x.started {
			c := *x
			return &c, x.end - x.i, true
		}
	case *memIter:
		if x.i == 0 {
			c := *x
			return &c, len(x.es), true
		}
	}
	return nil, 0, false
}

// flushSegs writes the segment batches that end at or before segment upto.
func (p *placer) flushSegs(upto int64) error {
	for p.segFirst+segBatch <= upto {
		if err := p.w.aw.submit(segStream, p.segBuf, p.w.segAddr(p.segFirst)); err != nil {
			return err
		}
		p.segFirst += segBatch
		p.segBuf = p.w.aw.take(segStream)[:segBatch*segmentSize]
		clear(p.segBuf)
	}
	return nil
}

// flushBig queues the large bucket encoded since the last call, if any.
func (p *placer) flushBig() error {
	if p.big == nil {
		return nil
	}
	// The caller encoded into p.big's capacity.
	b := p.big[:cap(p.big)]
	p.big = nil
	return p.w.aw.submit(noStream, b, p.bigAt)
}

// takeSpace reserves n bytes at the end of the file, starting at a multiple
// of align (relative to the buddy base); the skipped gap is freed. Past
// allocLimit the build fails, so what it took does not matter.
func (w *tableWriter) takeSpace(n, align int64) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.take(n, align)
	if a+n > allocLimit {
		return 0, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
	}
	return a, nil
}

// addBucket places the bucket of slot, size bytes long, and returns the
// empty slice (with capacity size) to encode it into before the next call.
func (p *placer) addBucket(slot uint32, size int64, keys, objects int) ([]byte, error) {
	if int64(slot) <= p.lastSlot || slot >= p.hi {
		return nil, fmt.Errorf("dets: repair: slot %d out of order", slot)
	}
	p.lastSlot = int64(slot)
	if p.sizes != nil {
		if size > allocLimit {
			return nil, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
		}
		p.sizes.add(size)
		p.scratch = slices.Grow(p.scratch[:0], int(size))
		return p.scratch[:0:size], nil
	}
	if err := p.flushBig(); err != nil {
		return nil, err
	}
	if err := p.flushSegs(int64(slot) / slotsPerSeg); err != nil {
		return nil, err
	}
	w := p.w
	block := pow2ceil(size)
	a, used := int64(-1), block // used: the bytes written at a
	if pl := p.plan; pl != nil {
		c := buddyClass(size)
		if c > maxBuddyClass {
			return nil, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
		}
		k := p.placed[c]
		p.placed[c]++
		switch {
		case c == pl.topC && k == pl.topK:
			a = pl.topAt
			if pl.trim {
				used, p.topEnd = size, a+size
			}
		case len(pl.runs[c]) > 0:
			r := &pl.runs[c][0]
			a = r.at
			r.at, r.n = r.at+block, r.n-1
			if r.n == 0 {
				pl.runs[c] = pl.runs[c][1:]
			}
		default:
			return nil, fmt.Errorf("dets: repair: slot %d has a bucket of %d bytes that the layout plan lacks", slot, size)
		}
	}
	var dst []byte
	if block >= w.chunk {
		// A block of its own; unplanned, it goes at the end of the file,
		// which is chunk-aligned, so any gap before it is whole chunks.
		if a < 0 {
			var err error
			if a, err = w.takeSpace(block, block); err != nil {
				return nil, err
			}
		}
		p.big, p.bigAt = make([]byte, 0, size), a
		dst = p.big
	} else {
		ch := &p.open[buddyClass(size)]
		// A planned block extends the buffer only if it is adjacent.
		if ch.buf != nil && (chunkFull(int64(len(ch.buf)), block, w.chunk) || a >= 0 && a != ch.at+int64(len(ch.buf))) {
			if err := w.aw.submit(bucketStream, ch.buf, ch.at); err != nil {
				return nil, err
			}
			ch.buf = nil
		}
		if ch.buf == nil {
			at := a
			if at < 0 {
				var err error
				if at, err = w.takeSpace(w.chunk, w.chunk); err != nil {
					return nil, err
				}
			}
			ch.buf, ch.at = w.aw.take(bucketStream), at
		}
		at := int64(len(ch.buf))
		a = ch.at + at
		if a+block > allocLimit {
			return nil, fmt.Errorf("%w: %s", ErrFileTooLarge, "the repaired table does not fit")
		}
		ch.buf = ch.buf[:at+used]
		clear(ch.buf[at+size:])
		dst = ch.buf[at : at : at+size]
	}
	p.counters[counterIndex(size)]++
	e := p.segBuf[(int64(slot)/slotsPerSeg-p.segFirst)*segmentSize+int64(slot%slotsPerSeg)*slotEntrySize:]
	be.PutUint32(e, uint32(size))
	be.PutUint32(e[4:], uint32(a))
	p.objects += int64(objects)
	p.keys += int64(keys)
	return dst, nil
}

// finish queues the placer's remaining segments and large bucket.
func (p *placer) finish() error {
	if pl := p.plan; pl != nil {
		for c, rs := range pl.runs {
			if len(rs) > 0 || c > 0 && c == pl.topC && p.placed[c] <= pl.topK {
				return fmt.Errorf("dets: repair: the layout plan has more blocks of %d bytes than the buckets", blockSize(c))
			}
		}
	}
	err := p.flushSegs(p.segEnd)
	if err == nil && p.segFirst < p.segEnd {
		err = p.w.aw.submit(segStream, p.segBuf[:(p.segEnd-p.segFirst)*segmentSize], p.w.segAddr(p.segFirst))
	}
	if err == nil {
		err = p.flushBig()
	}
	return err
}

// flushChunks queues the partly filled chunks and frees their unused
// tails; the chunk at the end of the file is cut short instead. Planned
// buffers hold only planned blocks, so nothing is freed.
func (w *tableWriter) flushChunks() error {
	var err error
	for _, p := range w.placers {
		for c := maxBuddyClass; c >= 1; c-- {
			ch := &p.open[c]
			if ch.buf == nil {
				continue
			}
			used := ch.at + int64(len(ch.buf))
			if err == nil {
				err = w.aw.submit(bucketStream, ch.buf, ch.at)
			}
			ch.buf = nil
			if w.planned {
				continue
			}
			w.endChunk(ch.at, used, w.chunk)
		}
	}
	return err
}

// freeRangeTo adds [a, b) to bd's free lists (base 1336) as maximal
// aligned blocks, each in address order.
func freeRangeTo(bd *buddy, a, b int64) {
	for a < b {
		sz := int64(1) << (maxBuddyClass - 1)
		for (a-baseAddr)%sz != 0 || a+sz > b {
			sz >>= 1
		}
		bd.insert(buddyClass(sz), a)
		a += sz
	}
}

// abort stops the background writes of a failed build.
func (w *tableWriter) abort() { w.aw.close() }

// finish writes the remaining segments, the parts, the free lists, the
// trailer and the header. The placers must be done.
func (w *tableWriter) finish() error {
	var err error
	for _, p := range w.placers {
		if err == nil {
			err = p.finish()
		}
		for i, c := range p.counters {
			w.counters[i] += c
		}
		w.objects += p.objects
		w.keys += p.keys
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
	if w.planned {
		w.pos = w.placers[0].topEnd
	} else {
		w.freeTail()
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
		shape: shape{
			m: uint64(w.m), next: uint64(w.next), n: uint64(w.n),
			noObjects: uint64(w.objects), noKeys: uint64(w.keys),
			minSlots: uint64(w.minSlots), maxSlots: uint64(w.maxSlots),
		},
		freelistsPtr: uint32(flp), closed: closedProperly, typ: uint32(w.kind),
		keyPos: uint32(w.keyPos), hashMethod: hashPhash2,
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
// is back from the writer, so the memory in flight is bounded. take and
// submit may be called from several goroutines; close from one, once they
// are done.
//
// After every syncEvery bytes written (tune.earlySyncBytes), a third goroutine fsyncs the file
// while the writes go on. The caller's fsync at the end is what makes the
// file durable, but its cost is the data still to be flushed (on a virtual
// disk, the host's cache too, which writeback alone does not empty): the
// early fsyncs flush most of it while the build runs. Repair of dirty
// OTP files, interleaved runs: 100k objects 95-124 -> 99-113 ms (medians
// of eight pairs 111 -> 103), 1M 1003-1022 -> 792-858 ms. A failed early
// fsync fails the writer: the kernel reports a write-back error once per
// descriptor, so the final fsync might not see it again.
type asyncWriter struct {
	f         File
	syncEvery int64
	jobs      chan writeJob
	free      [numStreams]chan []byte // capacity: the stream's buffer limit
	mu        sync.Mutex              // guards made
	made      [numStreams]int         // buffers made so far
	size      [numStreams]int         // their capacity
	done      chan struct{}
	errMu     sync.Mutex
	err       error // the first failure, of a write or an early fsync
	failed    atomic.Bool
	closed    bool
	kick      chan struct{} // asks for an early fsync; closed by loop when it ends
	synced    chan struct{} // closed when the early fsyncs are over
}

type writeJob struct {
	b      []byte
	off    int64
	stream int
}

func newAsyncWriter(f File, nBuf, bufSize, nSeg, segSize int, syncEvery int64) *asyncWriter {
	aw := &asyncWriter{f: f, syncEvery: syncEvery, jobs: make(chan writeJob, nBuf+nSeg), done: make(chan struct{}),
		kick: make(chan struct{}, 1), synced: make(chan struct{})}
	aw.free[bucketStream] = make(chan []byte, nBuf)
	aw.free[segStream] = make(chan []byte, nSeg)
	aw.size = [numStreams]int{bufSize, segSize}
	go aw.syncLoop()
	go aw.loop()
	return aw
}

func (aw *asyncWriter) loop() {
	defer close(aw.done)
	defer close(aw.kick)
	var unsynced int64
	for j := range aw.jobs {
		if !aw.failed.Load() {
			if _, err := aw.f.WriteAt(j.b, j.off); err != nil {
				aw.fail(err)
			}
			startWriteback(aw.f, j.off, int64(len(j.b)))
			if unsynced += int64(len(j.b)); unsynced >= aw.syncEvery {
				unsynced = 0
				select {
				case aw.kick <- struct{}{}:
				default: // one is pending: it will cover these writes too
				}
			}
		}
		if j.stream != noStream {
			aw.free[j.stream] <- j.b[:0]
		}
	}
}

// syncLoop runs the early fsyncs that loop asks for.
func (aw *asyncWriter) syncLoop() {
	defer close(aw.synced)
	for range aw.kick {
		if aw.failed.Load() {
			continue
		}
		if err := aw.f.Sync(); err != nil {
			aw.fail(err)
		}
	}
}

// fail records the writer's first failure; later writes are skipped.
func (aw *asyncWriter) fail(err error) {
	aw.errMu.Lock()
	defer aw.errMu.Unlock()
	if aw.err == nil {
		aw.err = err
		aw.failed.Store(true)
	}
}

func (aw *asyncWriter) firstErr() error {
	aw.errMu.Lock()
	defer aw.errMu.Unlock()
	return aw.err
}

// take returns an empty buffer of stream s, making one while the stream
// has fewer than its limit.
func (aw *asyncWriter) take(s int) []byte {
	select {
	case b := <-aw.free[s]:
		return b
	default:
	}
	aw.mu.Lock()
	mk := aw.made[s] < cap(aw.free[s])
	if mk {
		aw.made[s]++
	}
	aw.mu.Unlock()
	if mk {
		return make([]byte, 0, aw.size[s])
	}
	return <-aw.free[s]
}

// submit queues b for writing at off; b belongs to the writer until a later
// take returns it. After a write failed it queues nothing and returns that
// failure.
func (aw *asyncWriter) submit(s int, b []byte, off int64) error {
	if aw.failed.Load() {
		if s != noStream {
			aw.free[s] <- b[:0]
		}
		return aw.firstErr()
	}
	aw.jobs <- writeJob{b: b, off: off, stream: s}
	return nil
}

// close waits for the queued writes and the early fsyncs, and returns the
// first error.
func (aw *asyncWriter) close() error {
	if !aw.closed {
		aw.closed = true
		close(aw.jobs)
	}
	<-aw.done
	<-aw.synced
	return aw.firstErr()
}
