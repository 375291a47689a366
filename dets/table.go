package dets

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sync"
)

// Table is an open DETS table. It is safe for concurrent use by goroutines
// of one process; operations are serialized by a mutex. Open refuses a
// second Table of this process on a file when either could write to it
// (ErrAlreadyOpen); across processes (or with an OTP node) nothing in the
// file format keeps two writers apart: see package exclusive. The zero
// Table is closed: its methods return ErrClosed.
type Table struct {
	mu       sync.Mutex
	path     string
	fsys     FS
	f        File
	readOnly bool
	live     bool // set once an open succeeds, cleared by Close: the zero Table is closed

	durability  Durability
	err         error        // sticky error mode (see fail)
	writeFailed bool         // a write, fsync or truncation failed: the file may hold part of a change
	lay         layout       // the file format's constants and operations (layout.go)
	nat         *nativeState // a native table's own state (native_table.go), or nil

	kind   Kind
	keyPos int
	h      header // in-memory header; counts and counters are kept exact

	bud        *buddy
	fileFree   fileFree                 // otp9: the free space the file's lists named at open (freeguard.go)
	parts      [numParts]uint32         // otp9's part table (32-bit like its file; a format of its own keeps its own)
	segs       []int64                  // otp9's segment addresses (native's are nat.segs)
	segCache   []*[slotsPerSeg]slotWord // lazily read slot entries, in pages of 256 (see segment)
	entryReads int                      // slot entries read one by one (entry)
	fileEnd    int64                    // end of data (EOF while dirty)
	dirty      bool                     // on-disk flag is "not closed"
	hdrKeys    uint64                   // noKeys at the last header write

	freedSinceSave int // buckets freed since the last save: compactTail's budget

	head, tail []byte // file head and free-list area, only during load

	reg claim // the hold on the file in openTables (registry.go)

	// The memory map (mmap.go).
	mm         []byte       // shared map of the file, or nil
	unmap      func() error // releases mm
	mmWritable bool         // stores go through mm
	mapOps     int          // bucket I/O before mapping
	noMap      bool         // the file cannot be mapped
	size       int64        // file size, as our own writes and truncations left it
	extended   bool         // the file reaches past its data (an extension, or stale free lists)

	small   [slotEntrySize]byte // scratch for slot entries and status words, under mu
	touched byte                // touchBuckets' loads end here, so that they are not dropped
	changes uint64              // writes of buckets and slot entries (see All)
	fixed   int                 // traversals under way; growth waits for them (fixTraversal)
	kbuf    []byte              // the encoding of the key of the operation under way
	rbuf    []byte              // bucket read buffer, reused under mu
	wbuf    []byte              // bucket write buffer, reused under mu

	tune tuning // thresholds in force (tuning.go)
}

// slotEntry is a decoded slot entry: the bucket's size and offset (both
// zero for an empty slot). otp9's entries hold them in 32 bits each.
type slotEntry struct{ size, ptr int64 }

// Open opens the DETS table in path, creating it unless opts.ReadOnly is
// set. The file's header decides, with opts, whether it opens as it is,
// is repaired first (a file not closed properly, with AutoRepair; any file,
// with ForceRepair) or is refused; each refusal is a typed error
// (ErrNotDETS, ErrNeedsRepair, ErrKindMismatch, ...) and leaves the file
// byte-for-byte unchanged.
//
// A file already open in this process (by any path to it) is refused with
// ErrAlreadyOpen when either handle could write to it: two writers would
// each trust a free list and a slot table that the other changes. Two
// read-only handles may share a file.
func Open(path string, opts Options) (*Table, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = OSFS{}
	}
	return open(fsys, path, nil, opts)
}

// OpenFile is Open for a table file the caller has already opened: read
// and write, or read-only with opts.ReadOnly. It saves the open of a path
// a caller has just resolved and checked (OpenDescriptor saves more, for a
// bare descriptor). The table owns f from then on and closes it, also when
// OpenFile fails; f.Name() is its path, used for messages and by a repair,
// which replaces the file and opens the new one by that path. opts.FS is
// not used for f itself.
func OpenFile(f *os.File, opts Options) (*Table, error) {
	if err := opts.validate(); err != nil {
		f.Close()
		return nil, err
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = OSFS{}
	}
	return open(fsys, f.Name(), osFile{f}, opts)
}

// open is Open; a non-nil first is the already-open file for the first
// attempt.
func open(fsys FS, path string, first File, opts Options) (*Table, error) {
	for attempt := 0; ; attempt++ {
		t, needRepair, err := openExisting(fsys, path, first, &opts)
		first = nil
		if errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly {
			t, err = create(fsys, path, &opts)
			if errors.Is(err, fs.ErrExist) {
				// Another opener created it meanwhile: open that one
				// (or be refused as its second handle).
				t, needRepair, err = openExisting(fsys, path, nil, &opts)
			}
		}
		if err != nil || needRepair == nil {
			if t != nil {
				t.live = true
			}
			return t, err
		}
		// The hold on the file lasts through the repair, so that no
		// other open of this process uses the file it replaces.
		if attempt > 0 {
			needRepair.reg.release()
			return nil, fmt.Errorf("%w: %s still needs repair after repairing", ErrCorrupt, path)
		}
		err = repairFile(path, opts, needRepair.hdr)
		needRepair.reg.release()
		if err != nil {
			return nil, err
		}
		opts.Repair = NoRepair
	}
}

// repairRequest asks Open to run repairFile before opening again; reg is
// the hold on the file to release after it.
type repairRequest struct {
	hdr *header
	reg claim
}

// openExisting opens an existing file and loads it, or reports that it must
// be repaired first. It never writes to the file. The file is registered
// before its bytes are read, so that of two concurrent opens that cannot
// share it one is refused before it relies on what it read.
func openExisting(fsys FS, path string, f File, opts *Options) (*Table, *repairRequest, error) {
	if f == nil {
		flag := os.O_RDWR
		if opts.ReadOnly {
			flag = os.O_RDONLY
		}
		var err error
		if f, err = fsys.OpenFile(path, flag, 0); err != nil {
			return nil, nil, err
		}
	}
	t := &Table{path: path, fsys: fsys, f: f, lay: layoutOf(opts.Format), readOnly: opts.ReadOnly, durability: opts.Durability, tune: opts.tuned()}
	released := writerReleases.Load()
	size, fi, err := t.fileSize()
	if err == nil {
		err = t.register(fi)
	}
	if err == nil && writerReleases.Load() != released {
		size, _, err = t.fileSize() // see writerReleases
	}
	var rr *repairRequest
	if err == nil {
		rr, err = t.load(opts, size)
	}
	if err != nil || rr != nil {
		f.Close()
		if rr != nil {
			rr.reg = t.reg
		} else {
			t.reg.release()
		}
		return nil, rr, err
	}
	return t, nil, nil
}

// Open's read sizes: choices of this implementation, not of the file
// format (which is in format.go).
const (
	headReadSize = baseAddr + partSize // open reads this much at once: header, part table, part 0
	maxTailRead  = 64 << 10            // free-list areas up to this size are read with the trailer
)

// readBufs holds buffers for open's first read and for segment reads, both
// decoded before the buffer goes back.
var readBufs = sync.Pool{New: func() any { return new([headReadSize]byte) }}

// load reads and validates the header, the segment array and the free lists
// of a closed file of size bytes, and decides with opts whether it opens,
// needs a repair first, or is refused (see Open).
func (t *Table) load(opts *Options, size int64) (*repairRequest, error) {
	t.size = size
	if size < offVersion+4 {
		return nil, openError(ErrNotDETS, t.path)
	}
	// One read covers the version, the header, the part table and, in
	// most files, part 0: opening a closed file costs few syscalls.
	hp := readBufs.Get().(*[headReadSize]byte)
	defer readBufs.Put(hp)
	head := hp[:min(size, headReadSize)]
	if err := readFull(t.f, head, 0); err != nil {
		return nil, err
	}
	switch v := be.Uint32(head[offVersion:]); {
	case v < formatVersion:
		return nil, openError(ErrUnsupportedVersion, t.path)
	case v == nativeVersionBE:
		return t.loadNative(opts, size)
	case v > formatVersion:
		return nil, openError(ErrNotDETS, t.path)
	case opts.Format == Native:
		return nil, fmt.Errorf("%w: %s is an otp9 file, not native", ErrFormatMismatch, t.path)
	}
	if size < headerEnd {
		return nil, openError(ErrNotDETS, t.path)
	}
	t.head = head
	defer func() { t.head = nil }()
	hb := head[:headerSize]
	// The free lists run from FreelistsPointer to the trailer; read them
	// with the trailer when the pointer is plausible and the area small.
	var tail []byte
	flp := int64(be.Uint32(hb[offFreelistsPtr:]))
	if flp >= baseAddr && flp <= size-trailerSize && size-flp <= maxTailRead {
		if size-flp <= headReadSize { // the usual few records: no allocation
			tp := readBufs.Get().(*[headReadSize]byte)
			defer readBufs.Put(tp)
			tail = tp[:size-flp]
		} else {
			tail = make([]byte, size-flp)
		}
		if err := readFull(t.f, tail, flp); err != nil {
			return nil, err
		}
	} else {
		tail = make([]byte, trailerSize)
		if err := readFull(t.f, tail, size-trailerSize); err != nil {
			return nil, err
		}
	}
	t.tail = tail
	defer func() { t.tail = nil }()
	trailer := be.Uint32(tail[len(tail)-trailerSize:])
	h, state, err := checkHeader(hb, size, trailer)
	if err != nil {
		return nil, openError(err, t.path)
	}
	var reason error
	if state == hdrOK {
		if msg := h.validate(size); msg != "" {
			return nil, corrupt(t.path, "header", 0, "%s", msg)
		}
		if uint64(h.keyPos) > math.MaxInt { // OTP allows any 32-bit key position
			return nil, fmt.Errorf("%w: %s: key position %d does not fit an int here", ErrNotSupported, t.path, h.keyPos)
		}
		t.h = h
		t.kind = Kind(h.typ)
		t.keyPos = int(h.keyPos)
		t.fileEnd = int64(h.freelistsPtr)
		if h.hashMethod == hashPhash2 {
			reason = t.loadFreeLists(size)
		}
	} else {
		reason = errors.New("not closed properly")
	}
	if reason != nil {
		switch {
		case opts.Repair == NoRepair:
			return nil, fmt.Errorf("%w: %s: %w", ErrNeedsRepair, t.path, reason)
		case opts.ReadOnly:
			return nil, fmt.Errorf("%w: %s: %w", ErrNotClosed, t.path, reason)
		}
	}
	if opts.Kind != 0 && Kind(h.typ) != opts.Kind {
		return nil, fmt.Errorf("%w: %s is a %s, not a %s", ErrKindMismatch, t.path, Kind(h.typ), opts.Kind)
	}
	if opts.KeyPos != 0 && int(h.keyPos) != opts.KeyPos {
		return nil, fmt.Errorf("%w: %s has key position %d, not %d", ErrKeyPosMismatch, t.path, h.keyPos, opts.KeyPos)
	}
	if reason != nil {
		return &repairRequest{hdr: &h}, nil
	}
	if opts.Repair == ForceRepair {
		if opts.ReadOnly {
			return nil, fmt.Errorf("%w: forced repair of %s needs read-write access", ErrReadOnly, t.path)
		}
		return &repairRequest{hdr: &h}, nil
	}
	if h.hashMethod == hashPhash {
		return nil, openError(ErrUnsupportedHash, t.path)
	}
	if err := t.loadSegments(); err != nil {
		return nil, err
	}
	if msg := t.freeOverlapsTables(); msg != "" {
		// The free lists are wrong, as when they do not parse: a repair
		// decision, the file unchanged until then.
		reason := corrupt(t.path, "freelist", int64(h.freelistsPtr), "%s", msg)
		switch {
		case opts.Repair == NoRepair:
			return nil, fmt.Errorf("%w: %s: %w", ErrNeedsRepair, t.path, reason)
		case opts.ReadOnly:
			return nil, fmt.Errorf("%w: %s: %w", ErrNotClosed, t.path, reason)
		}
		return &repairRequest{hdr: &h}, nil
	}
	t.hdrKeys = h.noKeys
	if t.h.counters == ([numCounters]uint32{}) && t.h.noObjects > 0 {
		// A 9(a) file has no size-class counters. Count the buckets now:
		// the first save writes them, and OTP bounds bucket reads by them.
		if err := t.recountBuckets(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// maxFreeListArea bounds the free lists an open reads: a table of 2 GiB
// has at most 2^26 free blocks that do not merge (half of its smallest
// blocks), 256 MiB of addresses.
const maxFreeListArea = 256 << 20

// freeListArea is the length of a closed file's free-list area, from flp
// to the trailer, or false where no table could have written one that
// long: more than the addresses of the free blocks of flp bytes of data
// take (one 16-byte record an address at most), or than maxFreeListArea.
// So a hostile file (a sparse one, say) cannot make an open allocate and
// read gigabytes, nor, on a 32-bit build, panic on the length.
func freeListArea(size, flp int64) (int, bool) {
	n := size - trailerSize - flp
	if n < 0 || n > maxFreeListArea || n > flp+maxFreeRecord {
		return 0, false
	}
	return int(n), true
}

// loadFreeLists parses the free lists of a closed file into t.bud. A
// malformed list is returned as a *CorruptionError (the caller turns it into
// a repair decision, as OTP does).
func (t *Table) loadFreeLists(size int64) error {
	flp := int64(t.h.freelistsPtr)
	n, ok := freeListArea(size, flp)
	if !ok {
		return corrupt(t.path, "freelist", flp, "%d bytes of free lists after %d bytes of data", size-trailerSize-flp, flp)
	}
	var area []byte
	if int64(len(t.tail)) == size-flp {
		area = t.tail[:len(t.tail)-trailerSize]
	} else {
		area = make([]byte, n)
		if err := readFull(t.f, area, flp); err != nil {
			return err
		}
	}
	base := int64(baseAddr)
	if t.h.flBase != 0 {
		base = int64(t.h.flBase)
	}
	b, off, msg := parseFreeLists(area, base)
	if msg != "" {
		return corrupt(t.path, "freelist", flp+int64(off), "%s", msg)
	}
	t.bud = b
	t.fileFree = newFileFree(b.read, flp)
	b.read = nil
	return nil
}

// loadSegments reads the segment-array parts (docs/format-otp9.md §5) and checks that every
// part and segment lies inside the data area.
func (t *Table) loadSegments() error {
	nsegs := int(t.h.next / slotsPerSeg)
	nparts := (nsegs + segsPerPart - 1) / segsPerPart
	if len(t.head) < partTableOff+4*numParts {
		return corrupt(t.path, "segment", int64(len(t.head)), "file ends inside the segment-array table")
	}
	pt := t.head[partTableOff : partTableOff+4*numParts]
	inData := func(a int64, n int64) bool { return a >= baseAddr && a+n <= t.fileEnd }
	t.segs = make([]int64, 0, nsegs)
	var pb []byte
	for p := range numParts {
		t.parts[p] = be.Uint32(pt[4*p:])
		if p >= nparts {
			continue
		}
		if !inData(int64(t.parts[p]), partSize) {
			return corrupt(t.path, "segment", partTableOff+4*int64(p), "part %d pointer %d outside the data area", p, t.parts[p])
		}
		if a := int64(t.parts[p]); a+partSize <= int64(len(t.head)) {
			pb = t.head[a : a+partSize]
		} else {
			pb = make([]byte, partSize)
			if err := readFull(t.f, pb, a); err != nil {
				return err
			}
		}
		for s := 0; s < segsPerPart && len(t.segs) < nsegs; s++ {
			a := int64(be.Uint32(pb[4*s:]))
			if !inData(a, segmentSize) {
				return corrupt(t.path, "segment", int64(t.parts[p])+4*int64(s), "segment %d pointer %d outside the data area", len(t.segs), a)
			}
			t.segs = append(t.segs, a)
		}
	}
	t.segCache = make([]*[slotsPerSeg]slotWord, nsegs)
	return nil
}

// create makes a new empty table file (docs/format-otp9.md §9.1): the header marked not
// closed, the segment-array parts and zeroed segments, then the buddy area.
func create(fsys FS, path string, opts *Options) (*Table, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	lo, hi, _ := opts.slotBounds()
	kind := opts.Kind
	if kind == 0 {
		kind = Set
	}
	keyPos := opts.KeyPos
	if keyPos == 0 {
		keyPos = 1
	}
	t := &Table{path: path, fsys: fsys, f: f, lay: layoutOf(opts.Format), kind: kind, keyPos: keyPos, durability: opts.Durability, tune: opts.tuned()}
	err = t.register(nil)
	if err == nil && opts.Format == Native {
		err = t.createNative(opts)
	} else if err == nil {
		err = t.initFile(uint64(lo), uint64(hi))
	}
	if err != nil {
		f.Close()
		fsys.Remove(path)
		t.reg.release()
		return nil, err
	}
	return t, nil
}

// initFile lays out an empty table with min slots in the (empty or
// truncated) file, as OTP's init_file does: parts from 1336, then segments,
// and the buddy base right after them. The table is left marked not closed.
func (t *Table) initFile(minSlots, maxSlots uint64) error {
	return t.initLayout(minSlots, maxSlots, minSlots)
}

// initLayout is initFile with next slots (a multiple of 256, minSlots <=
// next <= maxSlots) in use from the start. It replaces the state in memory
// first, so any failure counts as a failed write (see fail).
func (t *Table) initLayout(minSlots, maxSlots, next uint64) error {
	return t.wrote(t.layOut(minSlots, maxSlots, next))
}

func (t *Table) layOut(minSlots, maxSlots, next uint64) error {
	t.unmapFile() // the old layout's reads and writes are over
	t.changes++
	m, n := hashParamsFor(next)
	nsegs := int(next / slotsPerSeg)
	nparts := (nsegs + segsPerPart - 1) / segsPerPart
	base := int64(baseAddr) + int64(partSize)*int64(nparts+nsegs)
	t.h = header{
		shape:  shape{m: m, n: n, next: next, minSlots: minSlots, maxSlots: maxSlots},
		cookie: cookie, version: formatVersion, closed: notProperlyClosed, typ: uint32(t.kind),
		keyPos: uint32(t.keyPos), hashMethod: hashPhash2, hasMD5: true, flBase: uint32(base),
	}
	buf := make([]byte, baseAddr+partSize*nparts)
	t.h.encode(buf)
	t.parts = [numParts]uint32{}
	t.segs = make([]int64, nsegs)
	for p := range nparts {
		t.parts[p] = uint32(baseAddr + partSize*p)
		be.PutUint32(buf[partTableOff+4*p:], t.parts[p])
	}
	for s := range nsegs {
		t.segs[s] = int64(baseAddr + partSize*(nparts+s))
		be.PutUint32(buf[int(t.parts[s/segsPerPart])+4*(s%segsPerPart):], uint32(t.segs[s]))
	}
	// Drop everything past the part table first, so that no old bucket
	// survives for a repair scan to find, yet the file always starts with
	// a whole header: a crash at any step leaves a dirty DETS file whose
	// repair gives an empty table. The final Truncate extends with zeros,
	// so the segments start empty.
	if size, err := t.f.Size(); err != nil {
		return err
	} else if size > baseAddr {
		if err := t.f.Truncate(baseAddr); err != nil {
			return err
		}
	}
	if _, err := t.f.WriteAt(buf, 0); err != nil {
		return err
	}
	if err := t.truncate(base); err != nil {
		return err
	}
	t.extended = false
	t.segCache = make([]*[slotsPerSeg]slotWord, nsegs)
	t.bud = newBuddy(base)
	t.fileEnd = base
	t.dirty = true
	t.hdrKeys = 0
	return nil
}

// Path returns the file name the table was opened with ("" for a nil
// Table).
func (t *Table) Path() string {
	if t == nil {
		return ""
	}
	return t.path
}

// ---- low-level I/O helpers; all run with t.mu held ----

func (t *Table) writeAt(b []byte, off int64) error {
	t.changes++
	if err := t.storeAt(b, off); err != nil {
		return t.wrote(err)
	}
	if end := off + int64(len(b)); end > t.fileEnd {
		t.fileEnd = end
	}
	return nil
}

// markDirty runs before the first change after an open or a save (docs/format-otp9.md §9.3):
// clear the closed flag and fsync. OTP also cuts off the free lists and
// trailer here; we leave them. Once the flag is durable nothing reads them,
// a repair scan skips them (every record carries the FREE status word), and
// the next save overwrites or trims them. An unchanged size spares that
// save's fsync a metadata commit.
func (t *Table) markDirty() error {
	if t.dirty {
		return nil
	}
	var z [4]byte
	if err := t.pwrite(z[:], offClosed); err != nil {
		return t.wrote(err)
	}
	if err := t.f.Sync(); err != nil {
		return t.wrote(err)
	}
	if t.size > t.fileEnd {
		t.extended = true
	}
	t.dirty = true
	return nil
}

// writeHeader writes the 188-byte header from the in-memory state.
func (t *Table) writeHeader(closed bool, flp uint32) error {
	t.h.closed = notProperlyClosed
	if closed {
		t.h.closed = closedProperly
	}
	t.h.freelistsPtr = flp
	t.h.flBase = 0
	if t.bud.base != baseAddr {
		t.h.flBase = uint32(t.bud.base)
	}
	var b [headerSize]byte
	t.h.encode(b[:])
	_, err := t.f.WriteAt(b[:], 0)
	return t.wrote(err)
}

// wrote returns err, the result of a write, fsync or truncation, and
// records a failure: the file may now hold part of a change (see fail).
func (t *Table) wrote(err error) error {
	if err != nil {
		t.writeFailed = true
	}
	return err
}

// save writes the free lists and trailer at the end of the data, fsyncs,
// then writes a closed header (docs/format-otp9.md §9.6). The first fsync orders
// the data before the closed flag, so even a power loss never leaves a
// "closed properly" header over data that did not reach the disk; with
// Durability LikeOTP it is skipped, as OTP does. With durable set (Sync) a
// second fsync makes the closed header itself durable; Close skips it, as
// OTP's close does: after a power loss the file may need repair, which then
// finds every object Close had written.
func (t *Table) saveOTP9(durable bool) error {
	if err := t.compactTail(); err != nil {
		return err
	}
	flp := t.fileEnd
	buf := t.bud.appendFreeLists(nil)
	flBase := int64(0)
	if t.bud.base != baseAddr {
		flBase = t.bud.base
	}
	buf = be.AppendUint32(buf, uint32(flp+int64(len(buf))+trailerSize-flBase))
	if err := t.pwrite(buf, flp); err != nil {
		return t.wrote(err)
	}
	if err := t.trimExtension(flp + int64(len(buf))); err != nil {
		return t.wrote(err)
	}
	if t.durability == Ordered {
		if err := t.f.Sync(); err != nil {
			return t.wrote(err)
		}
	}
	if err := t.writeHeader(true, uint32(flp)); err != nil {
		return err
	}
	if durable {
		if err := t.f.Sync(); err != nil {
			return t.wrote(err)
		}
	}
	t.dirty = false
	t.hdrKeys = t.h.noKeys
	return nil
}

// entry returns the slot entry of slot. The first few entries a table
// needs are read on their own (8 bytes, no decoding), so that a short
// open-lookup-close cycle never reads and decodes a whole segment; after
// that a segment is read and cached whole on first use.
func (t *Table) entry(slot uint64) (slotEntry, error) {
	s := slot / slotsPerSeg
	if seg := t.segCache[s]; seg != nil {
		return t.entryOf(seg[slot%slotsPerSeg]), nil
	}
	if t.entryReads < singleEntryReads {
		t.entryReads++
		b := t.small[:t.lay.entrySize]
		off := t.entryOff(slot)
		if err := t.readAt(b, off); err != nil {
			return slotEntry{}, t.ioErr("segment", off, err)
		}
		return t.readEntry(b), nil
	}
	seg, err := t.segment(s)
	if err != nil {
		return slotEntry{}, err
	}
	return t.entryOf(seg[slot%slotsPerSeg]), nil
}

// singleEntryReads is how many slot entries a table reads one by one
// before it caches whole segments.
const singleEntryReads = 8

// segment returns the slot entries of page s of the cache (slots 256*s to
// 256*s+255; entryOf decodes them), reading them on first use. A page is
// an otp9 segment; a format with larger segments holds several pages in
// each.
func (t *Table) segment(s uint64) (*[slotsPerSeg]slotWord, error) {
	if seg := t.segCache[s]; seg != nil {
		return seg, nil
	}
	if t.lay.tag == tagNative {
		return t.nativeSegment(s)
	}
	hp := readBufs.Get().(*[headReadSize]byte)
	defer readBufs.Put(hp)
	es := int64(t.lay.entrySize)
	b := hp[:slotsPerSeg*es]
	off := t.entryOff(s * slotsPerSeg)
	if err := readFull(t.f, b, off); err != nil {
		return nil, t.ioErr("segment", off, err)
	}
	seg := new([slotsPerSeg]slotWord)
	for i := range seg {
		seg[i] = t.wordAt(b[es*int64(i):])
	}
	t.segCache[s] = seg
	return seg, nil
}

func (t *Table) setEntry(slot uint64, e slotEntry) error {
	s := slot / slotsPerSeg
	b := t.small[:t.lay.entrySize]
	t.putEntry(b, e)
	if err := t.writeAt(b, t.entryOff(slot)); err != nil {
		return err
	}
	if seg := t.segCache[s]; seg != nil {
		seg[slot%slotsPerSeg] = t.wordOf(e)
	}
	return nil
}

// entryOff returns the file offset of slot's entry in its segment.
func (t *Table) entryOff(slot uint64) int64 {
	sh := t.lay.segShift
	return t.segs[slot>>sh] + int64(t.lay.entrySize)*int64(slot&(1<<sh-1))
}

// ioErr converts a short read into a corruption error; other errors pass.
func (t *Table) ioErr(section string, off int64, err error) error {
	if errors.Is(err, errShortRead) {
		return corrupt(t.path, section, off, "unexpected end of file")
	}
	return err
}

// readBucket reads the bucket of e into t.rbuf and returns its body.
func (t *Table) readBucket(slot uint64, e slotEntry) ([]byte, error) {
	size, ptr := e.size, e.ptr
	if size < bucketHeaderSize+5 || ptr < baseAddr || ptr+size > t.fileEnd {
		return nil, corrupt(t.path, "bucket", ptr, "slot %d entry (size %d, pointer %d) outside the data area", slot, size, ptr)
	}
	if int64(cap(t.rbuf)) < size {
		t.rbuf = make([]byte, size)
	}
	b := t.rbuf[:size]
	if err := t.readAt(b, ptr); err != nil {
		return nil, t.ioErr("bucket", ptr, err)
	}
	switch t.lay.tag { // the format's bucket header
	case tagNative:
		return t.nativeBucketBody(slot, e, b)
	default:
		if int64(be.Uint32(b)) == e.size && be.Uint32(b[4:]) == statusActive {
			return b[bucketHeaderSize:], nil
		}
		return nil, t.badBucketOTP9(slot, e, b)
	}
}

// readGroups reads and fully decodes the bucket of slot. The encodings are
// copied, so they stay valid after t.rbuf is reused.
func (t *Table) readGroups(slot uint64) ([]group, slotEntry, error) {
	e, err := t.entry(slot)
	if err != nil || e.size == 0 {
		return nil, e, err
	}
	body, err := t.readBucket(slot, e)
	if err != nil {
		return nil, e, err
	}
	own := make([]byte, len(body))
	copy(own, body)
	if t.lay.tag == tagNative {
		return t.nativeGroups(own, e)
	}
	gs, be := parseGroups(t.kind, t.keyPos, own)
	if be != nil {
		return nil, e, objectError(t.path, e.ptr+int64(be.off), slot, be)
	}
	return gs, e, nil
}

// writeGroups stores gs as the new content of slot, whose old entry is old.
// It never overwrites a live bucket (docs/format-otp9.md §9.4 lets OTP rewrite a bucket in
// place when its size class stays): it writes the new bucket into a newly
// allocated block, marks the old one FREE, then repoints the slot. A killed
// process (or a torn write) can then never leave a half-rewritten bucket,
// and a repair finds each object in exactly one ACTIVE bucket except
// between the first two writes, where a duplicate_bag's objects would come
// back twice. Allocating before freeing keeps the two blocks apart.
func (t *Table) writeGroups(slot uint64, old slotEntry, gs []group) error {
	if len(gs) == 0 {
		if old.size == 0 {
			return nil
		}
		if err := t.setEntry(slot, slotEntry{}); err != nil {
			return err
		}
		return t.freeBucket(old)
	}
	t.wbuf = t.encodeBucket(t.wbuf[:0], slot, gs)
	size := int64(len(t.wbuf))
	if size > 1<<31 {
		return ErrFileTooLarge
	}
	ptr, err := t.bud.alloc(size)
	if err != nil {
		return fmt.Errorf("%w: %s", err, t.path)
	}
	if err := t.vetFileFree(ptr, blockSize(buddyClass(size))); err != nil {
		return err
	}
	if err := t.writeBucket(t.wbuf, ptr); err != nil {
		return err
	}
	t.h.counters[counterIndex(size)]++
	if old.size != 0 {
		if err := t.freeBucket(old); err != nil {
			return err
		}
	}
	return t.setEntry(slot, slotEntry{size, ptr})
}

// tearPage is the granularity at which a write of a killed process can
// stop: Linux ends a buffered write at a page boundary once a fatal signal
// is pending. 4096 is the smallest page; larger pages tear on multiples.
const tearPage = 4096

// tearable reports whether a write of n bytes at off can be cut short by
// a kill of this process, leaving its first bytes on disk and old bytes
// (zeros in a freshly extended file) after them: a pwrite that crosses a
// page boundary, or any store through the map (a copy stops at whatever
// instruction the kill finds it on).
func (t *Table) tearable(off, n int64) bool {
	return t.mmWritable || off/tearPage != (off+n-1)/tearPage
}

// writeBucket writes the complete bucket b (header and body) at ptr, a
// block no slot points to yet, so that a write cut short by a kill leaves
// no ACTIVE header in front of a partial body: a repair scan finds buckets
// by that header, and a torn last object whose lost tail falls inside a
// binary still frames and decodes exactly (docs/reliability.md §3). When
// the write can tear, the bucket goes out first with the FREE status word
// and its ACTIVE word follows in a 4-byte write of its own, which cannot
// tear (a block starts 8 mod 16, so the word never crosses a page). The
// bytes on disk end identical to a single write.
func (t *Table) writeBucket(b []byte, ptr int64) error {
	if !t.tearable(ptr, int64(len(b))) {
		return t.writeAt(b, ptr)
	}
	be.PutUint32(b[4:], statusFree)
	err := t.writeAt(b, ptr)
	be.PutUint32(b[4:], statusActive)
	if err != nil {
		return err
	}
	return t.writeAt(b[4:bucketHeaderSize], ptr+4)
}

// freeBucket marks a bucket FREE on disk and returns its block.
func (t *Table) freeBucket(e slotEntry) error {
	b := t.small[:4]
	be.PutUint32(b, statusFree)
	if err := t.writeAt(b, e.ptr+4); err != nil {
		return err
	}
	if i := counterIndex(e.size); i >= 0 && t.h.counters[i] > 0 {
		t.h.counters[i]--
	}
	t.bud.freeBlock(e.ptr, e.size)
	t.freedSinceSave++
	return nil
}

// slotFor returns the slot of a key with hash hv.
func (t *Table) slotFor(hv uint64) uint64 { return slotOf(hv, t.h.m, t.h.n) }

// recountBuckets rebuilds the size-class counters from the slot entries.
func (t *Table) recountBuckets() error {
	var c [numCounters]uint32
	for slot := uint64(0); slot < t.h.next; slot++ {
		e, err := t.entry(slot)
		if err != nil {
			return err
		}
		if e.size == 0 {
			continue
		}
		i := counterIndex(e.size)
		if i < 0 {
			return corrupt(t.path, "segment", t.segs[slot/slotsPerSeg], "slot %d: bucket size %d", slot, e.size)
		}
		c[i]++
	}
	t.h.counters = c
	return nil
}
