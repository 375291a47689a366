package dets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Image is a table file's bytes, read whole for inspection without
// opening the file as a table: it works on damaged files too, and never
// writes. Its methods interpret the otp9 layout as far as the bytes allow
// and say where they stop making sense. An Image holds the whole file in
// memory (otp9 files stay below 2 GiB).
type Image struct {
	b []byte
	h header
}

// ErrImageTooShort: a file shorter than the otp9 header and part table.
var ErrImageTooShort = errors.New("dets: file too short for an otp9 header")

// ReadImage reads the file at path whole.
func ReadImage(path string) (*Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<31+1))
	if err != nil {
		return nil, err
	}
	return NewImage(b)
}

// NewImage interprets b as a table file's bytes; b is not copied.
func NewImage(b []byte) (*Image, error) {
	if len(b) < baseAddr {
		return nil, fmt.Errorf("%w (%d bytes)", ErrImageTooShort, len(b))
	}
	return &Image{b: b, h: decodeHeader(b)}, nil
}

// Bytes returns the image's bytes (not a copy).
func (im *Image) Bytes() []byte { return im.b }

// Field is one header field: its offset, name, value and what the value
// means (empty when it speaks for itself).
type Field struct {
	Offset int64
	Size   int
	Name   string
	Value  uint64
	Note   string
}

// HeaderFields returns the header's fields in file order, with the
// trailer (the file's last four bytes) last.
func (im *Image) HeaderFields() []Field {
	h := im.h
	yes := func(ok bool, good, bad string) string {
		if ok {
			return good
		}
		return bad
	}
	typeNames := map[uint32]string{typeSet: "set", typeBag: "bag", typeDuplicateBag: "duplicate_bag"}
	closed := map[uint32]string{closedProperly: "closed properly", notProperlyClosed: "not closed properly"}
	hashes := map[uint32]string{hashPhash: "phash (legacy, refused)", hashPhash2: "phash2"}
	orUnknown := func(m map[uint32]string, v uint32) string {
		if s, ok := m[v]; ok {
			return s
		}
		return "unknown value"
	}
	md5 := "zero: not checked"
	if h.hasMD5 {
		md5 = yes(md5OK(im.b), "matches bytes 12..167", "does NOT match bytes 12..167")
	}
	fs := []Field{
		{offFreelistsPtr, 4, "free-list pointer", uint64(h.freelistsPtr), ""},
		{offCookie, 4, "cookie", uint64(h.cookie), yes(h.cookie == cookie, "ok", "wrong: not a DETS file")},
		{offClosed, 4, "closed flag", uint64(h.closed), orUnknown(closed, h.closed)},
		{offType, 4, "type", uint64(h.typ), orUnknown(typeNames, h.typ)},
		{offVersion, 4, "version", uint64(h.version), yes(h.version == formatVersion, "otp9", "unsupported")},
		{offM, 4, "M", uint64(h.m), "linear hashing: slots below 2M"},
		{offNext, 4, "next", uint64(h.next), "slots in use"},
		{offKeyPos, 4, "keypos", uint64(h.keyPos), ""},
		{offNoObjects, 4, "objects", uint64(h.noObjects), ""},
		{offNoKeys, 4, "keys", uint64(h.noKeys), ""},
		{offMinSlots, 4, "min slots", uint64(h.minSlots), ""},
		{offMaxSlots, 4, "max slots", uint64(h.maxSlots), ""},
		{offHashMethod, 4, "hash method", uint64(h.hashMethod), orUnknown(hashes, h.hashMethod)},
		{offN, 4, "N", uint64(h.n), "next slot to split"},
	}
	for i, c := range h.counters {
		if c != 0 {
			fs = append(fs, Field{int64(offCounters + 4*i), 4, fmt.Sprintf("counter[%d]", i), uint64(c),
				fmt.Sprintf("buckets in %d-byte blocks", 1<<(i+4))})
		}
	}
	fs = append(fs,
		Field{offMD5, 16, "md5", 0, fmt.Sprintf("%x, %s", h.md5, md5)},
		Field{offFlBase, 4, "free-list base", uint64(h.flBase), ""})
	size := int64(len(im.b))
	trailer := uint64(be.Uint32(im.b[size-trailerSize:]))
	fs = append(fs, Field{size - trailerSize, 4, "trailer", trailer,
		yes(int64(trailer)+int64(h.flBase) == size, "+ free-list base = file size", "+ free-list base != file size: not closed properly")})
	return fs
}

// Pointer is an address in the file, with its index in its table and the
// offset where the pointer itself is stored.
type Pointer struct {
	Index int
	At    int64 // where the pointer is stored
	Addr  int64 // what it points to
	Bad   string
}

// inBlock reports whether a block of n bytes at addr lies inside the file
// above the part table.
func (im *Image) inBlock(addr, n int64) bool {
	return addr >= baseAddr && addr+n <= int64(len(im.b))
}

// Parts returns the non-zero pointers of the part table.
func (im *Image) Parts() []Pointer {
	var ps []Pointer
	im.eachPart(func(p Pointer) bool { ps = append(ps, p); return true })
	return ps
}

// eachPart calls fn with each non-zero pointer of the part table, until
// fn returns false.
func (im *Image) eachPart(fn func(Pointer) bool) {
	for p := range numParts {
		at := int64(partTableOff + 4*p)
		a := int64(be.Uint32(im.b[at:]))
		if a == 0 {
			continue
		}
		pt := Pointer{Index: p, At: at, Addr: a}
		if !im.inBlock(a, partSize) {
			pt.Bad = "outside the file"
		}
		if !fn(pt) {
			return
		}
	}
}

// Segments returns the non-zero segment pointers of the sound parts.
func (im *Image) Segments() []Pointer {
	var ss []Pointer
	im.eachSegment(func(s Pointer) bool { ss = append(ss, s); return true })
	return ss
}

// eachSegment calls fn with each non-zero segment pointer of the sound
// parts, until fn returns false. Walks over the slots go through it, so
// that they allocate nothing whatever the part table claims.
func (im *Image) eachSegment(fn func(Pointer) bool) {
	im.eachPart(func(p Pointer) bool {
		if p.Bad != "" {
			return true
		}
		for i := range segsPerPart {
			at := p.Addr + int64(4*i)
			a := int64(be.Uint32(im.b[at:]))
			if a == 0 {
				continue
			}
			s := Pointer{Index: p.Index*segsPerPart + i, At: at, Addr: a}
			if !im.inBlock(a, segmentSize) {
				s.Bad = "outside the file"
			}
			if !fn(s) {
				return false
			}
		}
		return true
	})
}

// SlotEntry is one slot's entry: where it is stored and the bucket it
// points to (Size 0: an empty slot).
type SlotEntry struct {
	Slot      int64
	At        int64
	Size, Ptr int64
}

// ErrNoSuchSlot: a slot beyond the slot table, or in a segment the file
// does not have.
var ErrNoSuchSlot = errors.New("dets: no such slot")

// Slot returns slot n's entry.
func (im *Image) Slot(n int64) (SlotEntry, error) {
	if n < 0 || n >= maxSlotsLimit {
		return SlotEntry{}, fmt.Errorf("%w: %d", ErrNoSuchSlot, n)
	}
	seg := int(n / slotsPerSeg)
	var e SlotEntry
	im.eachSegment(func(s Pointer) bool {
		if s.Index == seg && s.Bad == "" {
			at := s.Addr + slotEntrySize*(n%slotsPerSeg)
			e = SlotEntry{Slot: n, At: at, Size: int64(be.Uint32(im.b[at:])), Ptr: int64(be.Uint32(im.b[at+4:]))}
			return false
		}
		return true
	})
	if e.At == 0 {
		return SlotEntry{}, fmt.Errorf("%w: %d (segment %d is not in the file)", ErrNoSuchSlot, n, seg)
	}
	return e, nil
}

// slots calls fn for every entry of every sound segment.
func (im *Image) slots(fn func(SlotEntry)) {
	im.eachSegment(func(s Pointer) bool {
		if s.Bad != "" {
			return true
		}
		for i := range int64(slotsPerSeg) {
			at := s.Addr + slotEntrySize*i
			fn(SlotEntry{Slot: int64(s.Index)*slotsPerSeg + i, At: at,
				Size: int64(be.Uint32(im.b[at:])), Ptr: int64(be.Uint32(im.b[at+4:]))})
		}
		return true
	})
}

// FreeList is one free-list record: the blocks of one buddy class.
type FreeList struct {
	At        int64 // the record's offset
	BlockSize int64
	Addrs     []int64
}

// FreeLists parses the free-list records from the free-list pointer to the
// terminator. The error says where parsing stopped.
func (im *Image) FreeLists() ([]FreeList, error) {
	var ls []FreeList
	off := int64(im.h.freelistsPtr)
	size := int64(len(im.b))
	for {
		if off < baseAddr || off+12 > size {
			return ls, fmt.Errorf("free-list record at %d outside the file", off)
		}
		n, st, class := int64(be.Uint32(im.b[off:])), be.Uint32(im.b[off+4:]), be.Uint32(im.b[off+8:])
		if st != statusFree {
			return ls, fmt.Errorf("free-list record at %d has status %#x, not FREE", off, st)
		}
		if n == 12 && class == endFree {
			return ls, nil
		}
		if n < 12 || n > maxFreeRecord || n%4 != 0 || off+n > size || class < 1 || class > maxBuddyClass {
			return ls, fmt.Errorf("free-list record at %d: size %d, class %d", off, n, class)
		}
		l := FreeList{At: off, BlockSize: blockSize(int(class))}
		for a := off + 12; a < off+n; a += 4 {
			l.Addrs = append(l.Addrs, int64(be.Uint32(im.b[a:])))
		}
		ls = append(ls, l)
		off += n
	}
}

// Region names the part of the file an offset falls in.
type Region struct {
	Name       string // "header", "part table", "part", "segment", "bucket", "free lists", "trailer", "unknown"
	Start, End int64
	Index      int64 // part or segment index, or the bucket's slot; -1 if none
}

func (r Region) String() string {
	if r.Index >= 0 {
		what := map[string]string{"part": "part %d", "segment": "segment %d", "bucket": "bucket of slot %d"}[r.Name]
		return fmt.Sprintf(what+" [%d, %d)", r.Index, r.Start, r.End)
	}
	return fmt.Sprintf("%s [%d, %d)", r.Name, r.Start, r.End)
}

// RegionOf returns the region that holds offset off.
func (im *Image) RegionOf(off int64) Region {
	size := int64(len(im.b))
	switch {
	case off < 0 || off >= size:
		return outsideFile(off)
	case off < headerEnd:
		return Region{"header", 0, headerEnd, -1}
	case off < baseAddr:
		return Region{"part table", partTableOff, baseAddr, -1}
	case off >= size-trailerSize:
		return Region{"trailer", size - trailerSize, size, -1}
	}
	g := newGapAround(off, "unknown", baseAddr, size-trailerSize)
	var node Region
	im.eachPart(func(p Pointer) bool {
		if g.holds(p.Addr, partSize) {
			node = Region{"part", p.Addr, p.Addr + partSize, int64(p.Index)}
		}
		g.blind = g.blind || p.Bad != "" // its buckets are unknown
		return node.Name == ""
	})
	im.eachSegment(func(s Pointer) bool {
		if node.Name == "" && g.holds(s.Addr, segmentSize) {
			node = Region{"segment", s.Addr, s.Addr + segmentSize, int64(s.Index)}
		}
		g.blind = g.blind || s.Bad != ""
		return node.Name == ""
	})
	if node.Name != "" {
		return node
	}
	var bucket Region
	im.slots(func(e SlotEntry) {
		if bucket.Name == "" && e.Size > 0 && g.holds(e.Ptr, e.Size) {
			bucket = Region{"bucket", e.Ptr, e.Ptr + e.Size, e.Slot}
		}
	})
	if bucket.Name != "" {
		return bucket
	}
	if fl := int64(im.h.freelistsPtr); fl >= baseAddr {
		if off >= fl {
			return Region{"free lists", fl, size - trailerSize, -1}
		}
		g.holds(fl, size-trailerSize-fl)
	}
	return g.region()
}

// gapAround answers RegionOf for bytes that no structure holds. Each
// structure offered to holds that does not hold off narrows the gap to
// the bytes between the nearest structures below and above off, so that
// a walk over the file asks once per region. When some structure could
// not be listed (blind: a damaged part or segment hides its buckets) the
// answer is off's byte alone.
type gapAround struct {
	off   int64
	gap   Region
	blind bool
}

// newGapAround starts with the whole stretch [lo, hi) named name.
func newGapAround(off int64, name string, lo, hi int64) gapAround {
	return gapAround{off: off, gap: Region{name, lo, hi, -1}}
}

// holds reports whether [start, start+n) holds off. The sums are taken
// unsigned: a native offset read from a damaged file may sit near 2^64.
func (g *gapAround) holds(start, n int64) bool {
	u, s, e := uint64(g.off), uint64(start), uint64(start)+uint64(n)
	switch {
	case u >= s && u-s < uint64(n):
		return true
	case s > u:
		g.gap.End = int64(min(uint64(g.gap.End), s))
	case e > s: // below off, and no wrap
		g.gap.Start = int64(max(uint64(g.gap.Start), e))
	}
	return false
}

// region is the answer once every structure was offered.
func (g *gapAround) region() Region {
	if g.blind {
		return Region{g.gap.Name, g.off, g.off + 1, -1}
	}
	return g.gap
}

// outsideFile is the region RegionOf gives an offset that is not in the
// file: one byte, named so.
func outsideFile(off int64) Region { return Region{"outside the file", off, off + 1, -1} }

// Annotation is one row of annotated bytes.
type Annotation struct {
	Offset int64
	Bytes  []byte
	Depth  int
	Label  string
}

// kindOrGuess is the table kind from the header, or a set when the type
// field is unusable.
func (im *Image) kindOrGuess() Kind {
	switch im.h.typ {
	case typeBag:
		return Bag
	case typeDuplicateBag:
		return DuplicateBag
	}
	return Set
}

// AnnotateBucket annotates the bucket of size bytes at ptr: its header,
// the records and, inside each object, every tag, length and content run.
// Where the bytes stop making sense, the rest is one row that says why.
func (im *Image) AnnotateBucket(ptr, size int64) []Annotation {
	var rows []Annotation
	row := func(off, n int64, depth int, format string, args ...any) {
		rows = append(rows, Annotation{Offset: off, Bytes: im.b[off : off+n], Depth: depth, Label: fmt.Sprintf(format, args...)})
	}
	end := min(ptr+size, int64(len(im.b)))
	if ptr < 0 || ptr+bucketHeaderSize > end {
		return nil
	}
	row(ptr, 4, 0, "bucket size %d", be.Uint32(im.b[ptr:]))
	st := be.Uint32(im.b[ptr+4:])
	status := map[uint32]string{statusActive: "ACTIVE", statusFree: "FREE"}[st]
	if status == "" {
		status = "neither ACTIVE nor FREE"
	}
	row(ptr+4, 4, 0, "status %#x (%s)", st, status)
	object := func(off, n int64, depth int) {
		w := etfWalker{b: im.b[off : off+n], fn: func(it etfItem) {
			row(off+int64(it.off), int64(it.n), depth+it.depth, "%s", it.label)
		}}
		before := len(rows)
		if err := w.object(); err != nil {
			done := int64(0)
			if len(rows) > before {
				last := rows[len(rows)-1]
				done = last.Offset + int64(len(last.Bytes)) - off
			}
			if done >= 0 && done < n {
				row(off+done, n-done, depth, "not a term: %v", err)
			}
		}
	}
	records := func(off, end int64, depth int, minSize int64, fn func(off, n int64)) {
		for off < end {
			if end-off < 4 {
				row(off, end-off, depth, "truncated record size")
				return
			}
			n := int64(be.Uint32(im.b[off:]))
			if n < minSize || off+n > end {
				row(off, 4, depth, "record size %d: out of range", n)
				row(off+4, end-off-4, depth, "rest of the bucket, not framed")
				return
			}
			fn(off, n)
			off += n
		}
	}
	if im.kindOrGuess() == Set {
		records(ptr+bucketHeaderSize, end, 0, 5, func(off, n int64) {
			row(off, 4, 1, "object size %d", n)
			object(off+4, n-4, 2)
		})
		return rows
	}
	records(ptr+bucketHeaderSize, end, 0, 9, func(off, n int64) {
		row(off, 4, 1, "key group size %d", n)
		records(off+4, off+n, 2, 5, func(o, m int64) {
			row(o, 4, 2, "object size %d", m)
			object(o+4, m-4, 3)
		})
	})
	return rows
}

// HexRows annotates n bytes from off (at most HexRowsMax, and only bytes
// of the file) in rows of up to 16 bytes, naming what the rows hold where
// the layout says (slot entries in a segment, pointers in a part or the
// part table).
func (im *Image) HexRows(off, n int64) []Annotation {
	var rows []Annotation
	off, n = hexRange(off, n)
	end := min(off+n, int64(len(im.b)))
	var r Region
	for o := off; o < end; {
		if r.Name == "" || o < r.Start || o >= r.End {
			r = im.RegionOf(o)
		}
		step := min(16, end-o, max(r.End-o, 1))
		label := r.String()
		switch r.Name {
		case "segment":
			step = min(slotEntrySize-(o-r.Start)%slotEntrySize, end-o)
			slot := r.Index*slotsPerSeg + (o-r.Start)/slotEntrySize
			e := o - (o-r.Start)%slotEntrySize
			label = fmt.Sprintf("slot %d: cut short by the end of the file", slot)
			if e+slotEntrySize <= int64(len(im.b)) {
				label = fmt.Sprintf("slot %d: size %d, pointer %d", slot, be.Uint32(im.b[e:]), be.Uint32(im.b[e+4:]))
			}
		case "part", "part table":
			step = min(4-(o-r.Start)%4, end-o)
			i := (o - r.Start) / 4
			if r.Name == "part" {
				label = fmt.Sprintf("segment %d pointer", r.Index*segsPerPart+i)
			} else {
				label = fmt.Sprintf("part %d pointer", i)
			}
		}
		rows = append(rows, Annotation{Offset: o, Bytes: im.b[o : o+step], Label: label})
		o += step
	}
	return rows
}

// HexRowsMax is the most bytes one HexRows call annotates: a view of a
// few rows (dets inspect --offset shows 64 bytes), each of which may have
// to look through the whole tree to name its region.
const HexRowsMax = 4096

// hexRange clamps HexRows' range to the file's start and to HexRowsMax.
func hexRange(off, n int64) (int64, int64) {
	switch {
	case n <= 0:
		return max(off, 0), 0
	case off < 0 && n <= -off:
		return 0, 0
	case off < 0:
		n += off // the bytes before the file are not shown
		off = 0
	}
	return off, min(n, HexRowsMax)
}

// FormatRows renders annotations as "offset  hex  label" lines.
func FormatRows(rows []Annotation) string {
	var b strings.Builder
	for _, r := range rows {
		hex := r.Bytes
		more := ""
		if len(hex) > 12 {
			hex, more = hex[:12], fmt.Sprintf(" ... (%d bytes)", len(r.Bytes))
		}
		fmt.Fprintf(&b, "%10d  %-36s %s%s%s\n", r.Offset, fmt.Sprintf("% x", hex), strings.Repeat("  ", r.Depth), r.Label, more)
	}
	return b.String()
}
