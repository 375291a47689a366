package dets

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// NativeImage is a native file read for inspection without opening it as
// a table (docs/format-native.md §3). Unlike Image it reads through an
// io.ReaderAt, a page or a node at a time, so that a file past otp9's
// 2 GiB is inspected without being read whole; like Image, it never
// writes, works on damaged files, and says where the bytes stop making
// sense. It shows the tree as of the last checkpoint: the log records of
// a file not closed properly (Log) are not applied. It keeps the root, the
// last part and the log it has read, so it is not safe for concurrent use.
type NativeImage struct {
	path     string // for messages
	r        io.ReaderAt
	size     int64
	head     []byte // pages 0-4: superblock, metas, log heads
	super    nativeSuper
	superErr error
	metas    [2]nativeMeta
	metaErrs [2]error
	cur      int // the current meta's index in metas, -1 when neither is

	rootParts []nativeChild // the current root, read at first use
	rootErr   error
	lastPart  uint64        // the part partSegs holds
	partSegs  []nativeChild // nil until a part is read

	logRead bool // lg and logErr hold the current epoch's log
	lg      nativeLog
	logErr  error

	hasLast    bool  // RegionOf answered last for last with lastRegion:
	last       int64 // dets inspect --offset asks for one offset twice
	lastRegion Region
}

// IsNativeHeader reports whether b, a file's first bytes, carries the
// native version word at offset 16 (§4.1).
func IsNativeHeader(b []byte) bool {
	return len(b) >= nsOffVersion+4 && be.Uint32(b[nsOffVersion:]) == nativeVersionBE
}

// NewNativeImage reads the header pages of the native file of size bytes
// behind r; path names it in messages. A file shorter than the header
// pages is ErrImageTooShort; any other damage is reported by the methods.
func NewNativeImage(path string, r io.ReaderAt, size int64) (*NativeImage, error) {
	if size < nativeBase {
		return nil, fmt.Errorf("%w (%d bytes; a native file's header pages take %d)", ErrImageTooShort, size, nativeBase)
	}
	im := &NativeImage{path: path, r: r, size: size, head: make([]byte, nativeBase), cur: -1}
	if _, err := r.ReadAt(im.head, 0); err != nil {
		return nil, err
	}
	im.super, im.superErr = decodeNativeSuper(path, im.head, size)
	if im.superErr != nil {
		return im, nil
	}
	for i, off := range [2]int64{nativeMetaAOff, nativeMetaBOff} {
		im.metas[i], im.metaErrs[i] = decodeNativeMeta(path, im.head[off:], off, &im.super, size)
	}
	if _, page, _, ok := chooseNativeMeta(im.metas[0], im.metaErrs[0], im.metas[1], im.metaErrs[1]); ok {
		im.cur = int(page/nativePageSize) - 1
	}
	return im, nil
}

// Size is the file's length in bytes.
func (im *NativeImage) Size() int64 { return im.size }

// read returns n bytes at off, fewer where the file ends.
func (im *NativeImage) read(off uint64, n int) ([]byte, error) {
	if off >= uint64(im.size) {
		return nil, fmt.Errorf("offset %d is past the end of the file (%d bytes)", off, im.size)
	}
	b := make([]byte, min(uint64(n), uint64(im.size)-off))
	if _, err := im.r.ReadAt(b, int64(off)); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// current returns the current meta, or an error that says why there is none.
func (im *NativeImage) current() (*nativeMeta, error) {
	switch {
	case im.superErr != nil:
		return nil, fmt.Errorf("superblock: %v", im.superErr)
	case im.cur < 0:
		return nil, fmt.Errorf("no current meta: A: %v; B: %v", im.metaErrs[0], im.metaErrs[1])
	}
	return &im.metas[im.cur], nil
}

// Fields returns the superblock's fields, then each meta's, in file order.
// A meta's first field says whether it is valid and which one is current.
func (im *NativeImage) Fields() []Field {
	h := im.head
	u32 := func(o int) uint64 { return uint64(le.Uint32(h[o:])) }
	u64 := func(o int) uint64 { return le.Uint64(h[o:]) }
	verdict := "sound"
	if im.superErr != nil {
		verdict = im.superErr.Error()
	}
	kinds := map[uint64]string{typeSet: "set", typeBag: "bag", typeDuplicateBag: "duplicate_bag"}
	fs := []Field{
		{0, 8, "magic", u64(0), fmt.Sprintf("%q", h[:8])},
		{nsOffKind, 4, "kind", u32(nsOffKind), kinds[u32(nsOffKind)]},
		{nsOffVersion, 4, "version word", uint64(be.Uint32(h[nsOffVersion:])), fmt.Sprintf("%q (big-endian, as OTP reads it): native", h[nsOffVersion:nsOffVersion+4])},
		{nsOffRevision, 4, "revision", u32(nsOffRevision), ""},
		{nsOffKeyPos, 4, "keypos", u32(nsOffKeyPos), ""},
		{nsOffKeyHash, 4, "key hash", u32(nsOffKeyHash), map[uint64]string{keyHashFarm64: "farm Fingerprint64"}[u32(nsOffKeyHash)]},
		{nsOffChecksum, 4, "checksum", u32(nsOffChecksum), map[uint64]string{sumXXH64: "xxhash64"}[u32(nsOffChecksum)]},
		{nsOffPageSize, 4, "page size", u32(nsOffPageSize), ""},
		{nsOffBase, 8, "base", u64(nsOffBase), "start of the buddy area"},
		{nsOffFileID, 8, "file id", u64(nsOffFileID), ""},
		{nsOffMinSlots, 8, "min slots", u64(nsOffMinSlots), ""},
		{nsOffMaxSlots, 8, "max slots", u64(nsOffMaxSlots), ""},
		{nsOffSum, 8, "sxh", u64(nsOffSum), "superblock: " + verdict},
	}
	if im.superErr != nil {
		return fs
	}
	for i, off := range [2]int{nativeMetaAOff, nativeMetaBOff} {
		m, err := im.metas[i], im.metaErrs[i]
		state := "valid"
		switch {
		case err != nil:
			state = "invalid: " + err.Error()
		case i == im.cur:
			state = "valid, current"
		case im.cur >= 0:
			state = "valid, the fallback"
		}
		name := string(rune('A' + i))
		fs = append(fs, Field{int64(off), 8, "meta " + name, le.Uint64(h[off:]), state})
		if m.gen == 0 {
			continue // the checksum or magic failed: the fields mean nothing
		}
		flags := ""
		if m.flags&metaFlagClose != 0 {
			flags = "written by Close"
		}
		if m.flags&metaFlagRecovery != 0 {
			flags = "written by a recovery"
		}
		fs = append(fs,
			Field{int64(off + 24), 8, "  gen", m.gen, "checkpoint generation"},
			Field{int64(off + 32), 8, "  seq", m.seq, "last sequence number before it"},
			Field{int64(off + 40), 8, "  next", m.next, "slots in use"},
			Field{int64(off + 48), 8, "  M", m.m, "linear hashing: slots below 2M"},
			Field{int64(off + 56), 8, "  N", m.n, "next slot to split"},
			Field{int64(off + 64), 8, "  objects", m.noObjects, ""},
			Field{int64(off + 72), 8, "  keys", m.noKeys, ""},
			Field{int64(off + 80), 8, "  data end", m.dataEnd, ""},
			Field{int64(off + 88), 8, "  root", m.rootOff, fmt.Sprintf("%d bytes", m.rootLen)},
			Field{int64(off + 112), 8, "  free record", m.freeOff, fmt.Sprintf("%d bytes", m.freeLen)},
			Field{int64(off + 144), 8, "  verified gen", m.verifiedGen, "last gen a repair read whole; 0: never"},
			Field{int64(off + 152), 8, "  flags", m.flags, flags})
	}
	return fs
}

// Tree returns the current meta's parts (Index is the part number, At the
// root entry's offset) and the segments of its sound parts (Index is the
// segment number, At the part entry's offset). Bad says why a part failed;
// segments are not read here (Slot and RegionOf verify the one they use).
func (im *NativeImage) Tree() (parts, segs []Pointer, err error) {
	m, err := im.current()
	if err != nil {
		return nil, nil, err
	}
	children, err := im.root()
	if err != nil {
		return nil, nil, err
	}
	for p, c := range children {
		pt := Pointer{Index: p, At: int64(m.rootOff) + 16*int64(p), Addr: int64(c.off)}
		seg, err := im.part(uint64(p))
		if err != nil {
			pt.Bad = err.Error()
		}
		parts = append(parts, pt)
		for i, s := range seg {
			segs = append(segs, Pointer{Index: p*nativeSegsPerPart + i, At: int64(c.off) + 16*int64(i), Addr: int64(s.off)})
		}
	}
	return parts, segs, nil
}

// root reads and verifies the current meta's root, once.
func (im *NativeImage) root() ([]nativeChild, error) {
	if im.rootParts != nil || im.rootErr != nil {
		return im.rootParts, im.rootErr
	}
	m, err := im.current()
	if err != nil {
		return nil, err
	}
	rb, err := im.read(m.rootOff, int(m.rootLen))
	if err == nil {
		im.rootParts, err = decodeNativeRoot(im.path, rb, m, im.super.base, nil)
	}
	if err != nil {
		im.rootErr = fmt.Errorf("root: %v", err)
	}
	return im.rootParts, im.rootErr
}

// part reads and verifies part p of the current tree and returns its
// segments' children; the last part read is kept, since RegionOf and
// Redact go through the segments in order.
func (im *NativeImage) part(p uint64) ([]nativeChild, error) {
	if im.lastPart == p && im.partSegs != nil {
		return im.partSegs, nil
	}
	children, err := im.root()
	if err != nil {
		return nil, err
	}
	m := &im.metas[im.cur]
	if p >= uint64(len(children)) {
		return nil, fmt.Errorf("%w: part %d is beyond the table's %d slots", ErrNoSuchSlot, p, m.next)
	}
	var seg [nativeSegsPerPart]nativeChild
	n := nativeSegsInPart(m.next, p)
	b, err := im.read(children[p].off, nativePageSize)
	if err == nil {
		err = decodeNativePart(im.path, b, int64(children[p].off), children[p].sum, n, im.super.base, m.dataEnd, &seg)
	}
	if err != nil {
		return nil, err
	}
	im.lastPart, im.partSegs = p, seg[:n]
	return im.partSegs, nil
}

// segment reads and verifies segment i of the current tree.
func (im *NativeImage) segment(i int) (at int64, es *[nativeSlotsPerSeg]nativeEntry, err error) {
	m, err := im.current()
	if err != nil {
		return 0, nil, err
	}
	if uint64(i)*nativeSlotsPerSeg >= m.next {
		return 0, nil, fmt.Errorf("%w: segment %d is beyond the table's %d slots", ErrNoSuchSlot, i, m.next)
	}
	seg, err := im.part(uint64(i) / nativeSegsPerPart)
	if err != nil {
		return 0, nil, err
	}
	es = new([nativeSlotsPerSeg]nativeEntry)
	at, err = im.segmentInto(m, seg[uint64(i)%nativeSegsPerPart], make([]byte, nativePageSize), es)
	if err != nil {
		return 0, nil, err
	}
	return at, es, nil
}

// segmentInto reads the segment c names into page and decodes it into es,
// so that a walk over every segment reuses one buffer of each.
func (im *NativeImage) segmentInto(m *nativeMeta, c nativeChild, page []byte, es *[nativeSlotsPerSeg]nativeEntry) (int64, error) {
	if c.off >= uint64(im.size) {
		return 0, fmt.Errorf("offset %d is past the end of the file (%d bytes)", c.off, im.size)
	}
	page = page[:min(nativePageSize, uint64(im.size)-c.off)]
	if _, err := im.r.ReadAt(page, int64(c.off)); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if err := decodeNativeSegment(im.path, page, int64(c.off), c.sum, im.super.base, m.dataEnd, es); err != nil {
		return 0, err
	}
	return int64(c.off), nil
}

// eachSegment calls fn with each of segs and its entries, or the error
// that kept them from being read, through one page buffer and one entry
// array, until fn returns false.
func (im *NativeImage) eachSegment(m *nativeMeta, segs []Pointer, fn func(s Pointer, es *[nativeSlotsPerSeg]nativeEntry, err error) bool) {
	page := make([]byte, nativePageSize)
	var es [nativeSlotsPerSeg]nativeEntry
	for _, s := range segs {
		seg, err := im.part(uint64(s.Index) / nativeSegsPerPart)
		if err == nil {
			_, err = im.segmentInto(m, seg[s.Index%nativeSegsPerPart], page, &es)
		}
		if !fn(s, &es, err) {
			return
		}
	}
}

// Slot returns slot n's entry as of the last checkpoint: Ptr is its cell
// or block and Size that cell's or block's room (0: an empty slot). The
// bucket's own size is in its header (AnnotateBucket).
func (im *NativeImage) Slot(n int64) (SlotEntry, error) {
	if n < 0 || n >= nativeMaxSlots {
		return SlotEntry{}, fmt.Errorf("%w: %d", ErrNoSuchSlot, n)
	}
	at, es, err := im.segment(int(n / nativeSlotsPerSeg))
	if err != nil {
		return SlotEntry{}, err
	}
	e := es[n%nativeSlotsPerSeg]
	se := SlotEntry{Slot: n, At: at + 8*(n%nativeSlotsPerSeg)}
	if e != 0 {
		se.Size, se.Ptr = int64(e.room()), int64(e.off())
	}
	return se, nil
}

// NativeFree summarizes the free record of the current meta (§7.5).
type NativeFree struct {
	At, Len     int64
	Buddy, Quar uint64 // free and quarantined buddy blocks
	Runs        uint64 // runs with free or quarantined cells
	FreeBytes   uint64 // below the data end, in blocks and cells
	QuarBytes   uint64 // quarantined until the next checkpoint
	PastDataEnd int64  // the file's bytes past the data end
}

// Free decodes the current meta's free record.
func (im *NativeImage) Free() (NativeFree, error) {
	m, err := im.current()
	if err != nil {
		return NativeFree{}, err
	}
	nf := NativeFree{At: int64(m.freeOff), Len: int64(m.freeLen), PastDataEnd: im.size - int64(m.dataEnd)}
	b, err := im.read(m.freeOff, int(m.freeLen))
	if err != nil {
		return nf, err
	}
	a, err := decodeNativeFree(im.path, b, int64(m.freeOff), m.freeSum, im.super.base, m.dataEnd)
	if err != nil {
		return nf, err
	}
	nf.Buddy, nf.Quar, nf.Runs = le.Uint64(b[nfOffNBuddy:]), le.Uint64(b[nfOffNQuar:]), le.Uint64(b[nfOffNRuns:])
	nf.FreeBytes, nf.QuarBytes = a.spaceBelow(m.dataEnd)
	return nf, nil
}

// spaceBelow sums the free and the quarantined bytes below end: whole
// buddy blocks and the cells of the runs.
func (a *nativeAlloc) spaceBelow(end uint64) (free, quar uint64) {
	for k, offs := range a.free {
		for _, off := range offs {
			if off < end {
				free += min(uint64(1)<<k, end-off)
			}
		}
	}
	for _, b := range a.quar {
		quar += uint64(1) << b.k
	}
	for _, r := range a.runs {
		size := cellSize(int(r.class))
		for i := range r.words() {
			free += uint64(bits.OnesCount64(r.free[i])) * size
			quar += uint64(bits.OnesCount64(r.quar[i])) * size
		}
	}
	return free, quar
}

// NativeLogSummary is what the current epoch's log holds (§10.2).
type NativeLogSummary struct {
	Head       int64 // the epoch's head page
	Closed     bool  // the head's first record does not pass: closed properly (§11.1)
	Records    int   // whole groups, LINKs left out
	Puts       int
	Empties    int
	Grows      int
	Groups     int
	Blocks     []int64 // log blocks past the head page, in order
	FirstSeq   uint64
	LastSeq    uint64
	ReadFailed string // an I/O error that stopped the read
}

// Log reads the current epoch's log.
func (im *NativeImage) Log() (NativeLogSummary, error) {
	m, err := im.current()
	if err != nil {
		return NativeLogSummary{}, err
	}
	head := nativeLogHead(m.gen)
	ls := NativeLogSummary{Head: int64(head), Closed: true}
	lb := im.head[head : head+2*nativeLogRecord]
	if h, why := parseNativeLogBlock(lb); why == "" && h.fileID == im.super.fileID && h.epoch == m.gen && h.index == 0 {
		if r, err := decodeNativeLogRec(im.path, lb[nativeLogHeader:], int64(head)+nativeLogHeader); err == nil && nativeLogFollows(&r, m.gen, m.seq) {
			ls.Closed = false
		}
	}
	lg, err := im.log(m)
	if err != nil {
		ls.ReadFailed = err.Error()
	}
	for _, r := range lg.recs {
		switch r.typ {
		case recPut:
			ls.Puts++
		case recEmpty:
			ls.Empties++
		case recGrow:
			ls.Grows++
		}
		if r.endsGroup() {
			ls.Groups++
		}
	}
	ls.Records = len(lg.recs)
	if ls.Records > 0 {
		ls.FirstSeq, ls.LastSeq = lg.recs[0].seq, lg.recs[ls.Records-1].seq
	}
	for _, b := range lg.blocks {
		ls.Blocks = append(ls.Blocks, int64(b))
	}
	return ls, nil
}

// log reads the log of the epoch that follows meta m, the current one,
// once.
func (im *NativeImage) log(m *nativeMeta) (nativeLog, error) {
	if !im.logRead {
		im.lg, im.logErr = readNativeLog(im.path, im.read, im.super.revision, im.super.fileID, m.gen, m.seq, im.super.base, uint64(im.size))
		im.logRead = true
	}
	return im.lg, im.logErr
}

// RegionOf returns the region of the current tree that holds offset off:
// a header page, the root, a part, a segment, the free record, a log
// block, or a bucket's cell or block (Index: its slot). Bytes in no
// structure the current meta names are "free or unreferenced", a region
// that runs from the end of the structure below to the start of the one
// above, so that a walk over the file asks once per region. It reads
// every segment for an offset that no header, node or log names, so the
// last answer is kept.
func (im *NativeImage) RegionOf(off int64) Region {
	if im.hasLast && im.last == off {
		return im.lastRegion
	}
	r := im.regionOf(off)
	im.hasLast, im.last, im.lastRegion = true, off, r
	return r
}

func (im *NativeImage) regionOf(off int64) Region {
	pages := []string{"superblock", "meta A", "meta B", "log head (even epochs)", "log head (odd epochs)"}
	if off < 0 || off >= im.size {
		return outsideFile(off)
	}
	if off < nativeBase {
		p := off / nativePageSize
		return Region{pages[p], p * nativePageSize, (p + 1) * nativePageSize, -1}
	}
	const unref = "free or unreferenced"
	m, err := im.current()
	if err != nil {
		return Region{unref, off, off + 1, -1}
	}
	g := newGapAround(off, unref, nativeBase, im.size)
	in := func(start, n uint64) bool { return g.holds(int64(start), int64(n)) }
	switch {
	case in(m.rootOff, m.rootLen):
		return Region{"root", int64(m.rootOff), int64(m.rootOff + m.rootLen), -1}
	case in(m.freeOff, m.freeLen):
		return Region{"free record", int64(m.freeOff), int64(m.freeOff + m.freeLen), -1}
	case uint64(off) >= m.dataEnd:
		return Region{"past the data end", int64(m.dataEnd), im.size, -1}
	}
	in(m.dataEnd, 0)
	lg, _ := im.log(m)
	for _, b := range lg.blocks {
		if in(b, nativeLogBlockSize) {
			return Region{"log block", int64(b), int64(b + nativeLogBlockSize), -1}
		}
	}
	// The buckets written since the checkpoint, newest first: the tree
	// does not name them yet.
	for i := len(lg.recs) - 1; i >= 0; i-- {
		if r := &lg.recs[i]; r.typ == recPut {
			if e := nativeEntry(r.entry); in(e.off(), e.room()) {
				return Region{"bucket", int64(e.off()), int64(e.off() + e.room()), int64(r.slot)}
			}
		}
	}
	parts, segs, err := im.Tree()
	if err != nil {
		return Region{unref, off, off + 1, -1}
	}
	for _, p := range parts {
		if in(uint64(p.Addr), nativePageSize) {
			return Region{"part", p.Addr, p.Addr + nativePageSize, int64(p.Index)}
		}
		g.blind = g.blind || p.Bad != "" // it names buckets nobody can see
	}
	for _, s := range segs {
		if in(uint64(s.Addr), nativePageSize) {
			return Region{"segment", s.Addr, s.Addr + nativePageSize, int64(s.Index)}
		}
	}
	var bucket Region
	im.eachSegment(m, segs, func(s Pointer, es *[nativeSlotsPerSeg]nativeEntry, err error) bool {
		if err != nil {
			g.blind = true
			return true
		}
		for i, e := range es {
			if e != 0 && in(e.off(), e.room()) {
				bucket = Region{"bucket", int64(e.off()), int64(e.off() + e.room()), int64(s.Index)*nativeSlotsPerSeg + int64(i)}
				return false
			}
		}
		return true
	})
	if bucket.Name != "" {
		return bucket
	}
	return g.region()
}

// AnnotateBucket annotates the bucket in the cell or block of room bytes
// at ptr: its header fields, then each object record's checksum, length
// and, inside the object, every tag, length and content run. Where the
// bytes stop making sense, the rest is one row that says why.
func (im *NativeImage) AnnotateBucket(ptr, room int64) []Annotation {
	b, err := im.read(uint64(max(ptr, 0)), int(min(room, nativeMaxCell*1024)))
	if err != nil || len(b) < nativeBucketHeader {
		return nil
	}
	var rows []Annotation
	row := func(off, n int64, depth int, format string, args ...any) {
		rows = append(rows, Annotation{Offset: ptr + off, Bytes: b[off : off+n], Depth: depth, Label: fmt.Sprintf(format, args...)})
	}
	h, herr := decodeNativeBucketHeader(im.path, b, ptr, uint64(room))
	sum := "checksum ok"
	if herr != nil {
		sum = herr.Error()
	}
	row(0, 8, 0, "hxh: %s", sum)
	row(nbOffSeq, 8, 0, "seq %d", le.Uint64(b[nbOffSeq:]))
	row(nbOffSlot, 4, 0, "slot %d", le.Uint32(b[nbOffSlot:]))
	row(nbOffLevel, 1, 0, "level %d", b[nbOffLevel])
	row(nbOffLevel+1, 1, 0, "reserved")
	row(nbOffMagic, 2, 0, "magic %q", b[nbOffMagic:nbOffMagic+2])
	row(nbOffSize, 8, 0, "bucket size %d (room %d)", le.Uint64(b[nbOffSize:]), room)
	end := int64(len(b))
	if herr == nil {
		end = int64(h.size)
	}
	for pos := int64(nativeBucketHeader); pos < end; {
		enc, n, err := decodeNativeObject(im.path, b[pos:end], ptr+pos)
		if err != nil {
			row(pos, end-pos, 1, "rest of the bucket, not an object record: %v", err)
			break
		}
		v := n - 8 - len(enc)
		row(pos, 8, 1, "oxh: checksum ok")
		row(pos+8, int64(v), 1, "object length %d", len(enc))
		start := pos + 8 + int64(v)
		w := etfWalker{b: enc, fn: func(it etfItem) {
			row(start+int64(it.off), int64(it.n), 2+it.depth, "%s", it.label)
		}}
		before := len(rows)
		if err := w.object(); err != nil {
			done := int64(0)
			if len(rows) > before {
				last := rows[len(rows)-1]
				done = last.Offset + int64(len(last.Bytes)) - (ptr + start)
			}
			if done >= 0 && done < int64(len(enc)) {
				row(start+done, int64(len(enc))-done, 2, "not a term: %v", err)
			}
		}
		pos += int64(n)
	}
	return rows
}

// HexRows annotates n bytes from off (at most HexRowsMax) in rows of up
// to 16 bytes named by their region; in a segment each row is one slot entry, in a part or the
// root one child pointer and its checksum.
func (im *NativeImage) HexRows(off, n int64) []Annotation {
	off, n = hexRange(off, n)
	b, err := im.read(uint64(off), int(n))
	if err != nil {
		return nil
	}
	var rows []Annotation
	r := im.RegionOf(off)
	for o := int64(0); o < int64(len(b)); {
		at := off + o
		if at >= r.End || at < r.Start {
			r = im.RegionOf(at)
		}
		step := min(16, int64(len(b))-o, max(r.End-at, 1))
		label := r.String()
		switch r.Name {
		case "free or unreferenced":
			label = r.Name
		case "log head (even epochs)", "log head (odd epochs)", "log block":
			label = r.Name + ": block header"
			if i := (at - r.Start) / nativeLogRecord; i > 0 {
				label = fmt.Sprintf("%s: record slot %d", r.Name, i-1)
			}
		case "segment":
			step = min(8-(at-r.Start)%8, int64(len(b))-o)
			slot := r.Index*nativeSlotsPerSeg + (at-r.Start)/8
			label = fmt.Sprintf("slot %d entry", slot)
			if e0 := at - (at-r.Start)%8; e0 >= off && e0+8 <= off+int64(len(b)) {
				label = fmt.Sprintf("slot %d: %v", slot, nativeEntry(le.Uint64(b[e0-off:])))
			}
		case "part", "root":
			step = min(8-(at-r.Start)%8, int64(len(b))-o)
			what := map[string]string{"part": "segment", "root": "part"}[r.Name]
			i, field := (at-r.Start)/16, "offset"
			if (at-r.Start)%16 >= 8 {
				field = "checksum"
			}
			if r.Name == "part" {
				i += r.Index * nativeSegsPerPart
			}
			label = fmt.Sprintf("%s %d %s", what, i, field)
		}
		rows = append(rows, Annotation{Offset: at, Bytes: b[o : o+step], Label: label})
		o += step
	}
	return rows
}
