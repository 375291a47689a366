package dets

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/godets/godets/etf"
)

// hx decodes a hand-written hex image; spaces, newlines and '|' (field
// separators) are ignored, and "z<n>" stands for n zero bytes.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for _, f := range strings.Fields(strings.ReplaceAll(s, "|", " ")) {
		if n, ok := strings.CutPrefix(f, "z"); ok {
			var k int
			for _, c := range n {
				k = 10*k + int(c-'0')
			}
			out = append(out, make([]byte, k)...)
			continue
		}
		b, err := hex.DecodeString(f)
		if err != nil {
			t.Fatalf("bad hex %q: %v", f, err)
		}
		out = append(out, b...)
	}
	return out
}

func golden(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	from := i &^ 15
	t.Fatalf("%s: %d bytes, golden %d; first difference at %d\ngot:  % x\nwant: % x", what, len(got), len(want), i,
		got[from:min(len(got), from+32)], want[from:min(len(want), from+32)])
}

// reseal recomputes the checksum at sumAt over b[from:to] after a test
// changed a field, so that the field's own validation is what refuses it.
func reseal(b []byte, sumAt, from, to int) []byte {
	le.PutUint64(b[sumAt:], xxhash.Sum64(b[from:to]))
	return b
}

func TestNativeXXHashVector(t *testing.T) {
	// The published xxhash64 of the empty input, seed 0: the checksum
	// every native structure uses.
	if got := xxhash.Sum64(nil); got != 0xef46db3751d8e999 {
		t.Fatalf("xxhash64(\"\") = %#x", got)
	}
}

var goldenSuper = nativeSuper{kind: typeBag, revision: 1, keyPos: 1, keyHash: 1, checksum: 1,
	pageSize: 4096, base: 20480, fileID: 0x0102030405060708, minSlots: 512, maxSlots: 1 << 32}

func TestNativeSuperGolden(t *testing.T) {
	want := hx(t, `
		67 6f 64 65 74 73 00 6e | 00000000 | 02000000 | 4e415431 | 01000000
		01000000 | 01000000 | 01000000 | 00100000 | 0050000000000000
		0807060504030201 | 0002000000000000 | 0000000001000000 | z48
		a4d8337c9ca2a9ae`)
	got := make([]byte, nativeSuperSize)
	goldenSuper.encode(got)
	golden(t, "superblock", got, want)
	s, err := decodeNativeSuper("f", want, nativeBase)
	if err != nil || s != goldenSuper {
		t.Fatalf("decode: %+v, %v", s, err)
	}
	if be.Uint32(want[16:]) != 1312904241 {
		t.Fatalf("OTP reads the version word as %d", be.Uint32(want[16:]))
	}
}

func TestNativeSuperRefusals(t *testing.T) {
	enc := func(edit func(s *nativeSuper)) []byte {
		s := goldenSuper
		edit(&s)
		b := make([]byte, nativeSuperSize)
		s.encode(b)
		return b
	}
	good := enc(func(*nativeSuper) {})
	cases := []struct {
		name string
		b    []byte
		size int64
		want error
	}{
		{"short file", good, nativeBase - 1, ErrNotDETS},
		{"short record", good[:100], nativeBase, ErrNotDETS},
		{"magic", func() []byte { b := bytes.Clone(good); b[6] = 'x'; return reseal(b, 120, 0, 120) }(), nativeBase, ErrNotDETS},
		{"revision 3", enc(func(s *nativeSuper) { s.revision = 3 }), nativeBase, ErrUnsupportedVersion},
		{"revision 3, bad kind", enc(func(s *nativeSuper) { s.revision, s.kind = 3, 9 }), nativeBase, ErrUnsupportedVersion},
		{"kind 0", enc(func(s *nativeSuper) { s.kind = 0 }), nativeBase, ErrBadTypeCode},
		{"kind 4", enc(func(s *nativeSuper) { s.kind = 4 }), nativeBase, ErrBadTypeCode},
		{"key hash", enc(func(s *nativeSuper) { s.keyHash = 2 }), nativeBase, ErrBadHashMethod},
		{"checksum method", enc(func(s *nativeSuper) { s.checksum = 2 }), nativeBase, ErrNotDETS},
		{"page size", enc(func(s *nativeSuper) { s.pageSize = 8192 }), nativeBase, ErrNotDETS},
		{"revision 0", enc(func(s *nativeSuper) { s.revision = 0 }), nativeBase, ErrCorrupt},
		{"key position 0", enc(func(s *nativeSuper) { s.keyPos = 0 }), nativeBase, ErrCorrupt},
		{"base below the pages", enc(func(s *nativeSuper) { s.base = 16384 }), nativeBase, ErrCorrupt},
		{"base off the page grid", enc(func(s *nativeSuper) { s.base = 20481 }), nativeBase, ErrCorrupt},
		{"min slots 256", enc(func(s *nativeSuper) { s.minSlots = 256 }), nativeBase, ErrCorrupt},
		{"min slots not pow2", enc(func(s *nativeSuper) { s.minSlots = 1536 }), nativeBase, ErrCorrupt},
		{"max slots 2^33", enc(func(s *nativeSuper) { s.maxSlots = 1 << 33 }), nativeBase, ErrCorrupt},
		{"max below min", enc(func(s *nativeSuper) { s.minSlots, s.maxSlots = 2048, 1024 }), nativeBase, ErrCorrupt},
		{"reserved", func() []byte { b := bytes.Clone(good); b[80] = 1; return reseal(b, 120, 0, 120) }(), nativeBase, ErrCorrupt},
	}
	for _, c := range cases {
		_, err := decodeNativeSuper("f", c.b, c.size)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	var re *NativeRevisionError
	_, err := decodeNativeSuper("f", enc(func(s *nativeSuper) { s.revision = 3 }), nativeBase)
	if !errors.As(err, &re) || re.Revision != 3 || err.Error() != "dets: f: native revision 3; this godets reads 2" {
		t.Fatalf("revision 3: %v", err)
	}
	flipEveryByte(t, "superblock", good, func(b []byte) error {
		_, err := decodeNativeSuper("f", b, nativeBase)
		return err
	})
}

// flipEveryByte changes each byte of b in three ways and requires decode
// to refuse every result.
func flipEveryByte(t *testing.T, what string, b []byte, decode func([]byte) error) {
	t.Helper()
	if err := decode(bytes.Clone(b)); err != nil {
		t.Fatalf("%s: the unchanged image is refused: %v", what, err)
	}
	for i := range b {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			c := bytes.Clone(b)
			c[i] ^= x
			if decode(c) == nil {
				t.Fatalf("%s: byte %d ^ %#x accepted", what, i, x)
			}
		}
	}
}

var goldenMeta = nativeMeta{fileID: 0x0102030405060708, gen: 3, seq: 41, next: 1536, m: 1024, n: 512,
	noObjects: 10, noKeys: 7, dataEnd: 0x9000, rootOff: 0x5000, rootLen: 16, rootSum: 0x1111111111111111,
	freeOff: 0x8000, freeLen: 40, freeSum: 0x2222222222222222, verifiedGen: 2, flags: metaFlagClose}

func TestNativeMetaGolden(t *testing.T) {
	want := hx(t, `
		8f67caf49e053ffd | 474e4d31 | 00010000 | 0807060504030201
		0300000000000000 | 2900000000000000 | 0006000000000000 | 0004000000000000
		0002000000000000 | 0a00000000000000 | 0700000000000000 | 0090000000000000
		0050000000000000 | 1000000000000000 | 1111111111111111 | 0080000000000000
		2800000000000000 | 2222222222222222 | 0000000000000000 | 0200000000000000
		0100000000000000 | z96 | z3840`)
	got := make([]byte, nativePageSize)
	for i := range got {
		got[i] = 0xee // encode writes the whole page
	}
	goldenMeta.encode(got)
	golden(t, "meta page", got, want)
	m, err := decodeNativeMeta("f", want, nativeMetaAOff, &goldenSuper, 0x9000)
	if err != nil || m != goldenMeta {
		t.Fatalf("decode: %+v, %v", m, err)
	}
	flipEveryByte(t, "meta", want[:nativeMetaSize], func(b []byte) error {
		_, err := decodeNativeMeta("f", b, nativeMetaAOff, &goldenSuper, 0x9000)
		return err
	})
}

func TestNativeMetaRefusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(m *nativeMeta)
		size int64
	}{
		{"file id", func(m *nativeMeta) { m.fileID++ }, 0x9000},
		{"gen 0", func(m *nativeMeta) { m.gen = 0 }, 0x9000},
		{"M not pow2", func(m *nativeMeta) { m.m, m.next = 768, 1280 }, 0x9000},
		{"M below min slots", func(m *nativeMeta) { m.m, m.n, m.next = 256, 0, 256 }, 0x9000},
		{"N not a segment multiple", func(m *nativeMeta) { m.n, m.next = 100, 1124 }, 0x9000},
		{"N = M", func(m *nativeMeta) { m.n, m.next = 1024, 2048 }, 0x9000},
		{"next != M+N", func(m *nativeMeta) { m.next = 1024 }, 0x9000},
		{"next above max slots", func(m *nativeMeta) { m.m, m.n, m.next = 1<<32, 0, 1<<32+512 }, 0x9000},
		{"fewer objects than keys", func(m *nativeMeta) { m.noObjects = 6 }, 0x9000},
		{"data end past the file", func(m *nativeMeta) {}, 0x8fff},
		{"data end below base", func(m *nativeMeta) { m.dataEnd = 0x4000 }, 0x9000},
		{"root length", func(m *nativeMeta) { m.rootLen = 32 }, 0x9000},
		{"root below base", func(m *nativeMeta) { m.rootOff = 0x4000 }, 0x9000},
		{"root off the grid", func(m *nativeMeta) { m.rootOff = 0x5010 }, 0x9000},
		{"root past data end", func(m *nativeMeta) { m.rootOff = 0x9000 }, 0x10000},
		{"free record past data end", func(m *nativeMeta) { m.freeLen = 0x1008 }, 0x9000},
		{"free record too short", func(m *nativeMeta) { m.freeLen = 32 }, 0x9000},
		{"free offset wraps", func(m *nativeMeta) { m.freeOff = ^uint64(0) &^ 0xfff }, 0x9000},
		{"verified above gen", func(m *nativeMeta) { m.verifiedGen = 4 }, 0x9000},
		{"flags", func(m *nativeMeta) { m.flags = 4 }, 0x9000},
	}
	for _, c := range cases {
		m := goldenMeta
		c.edit(&m)
		b := make([]byte, nativePageSize)
		m.encode(b)
		_, err := decodeNativeMeta("f", b, nativeMetaBOff, &goldenSuper, c.size)
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Section != "meta" || ce.Offset != nativeMetaBOff {
			t.Errorf("%s: got %v, want a meta *CorruptionError", c.name, err)
		}
	}
	b := make([]byte, nativePageSize)
	goldenMeta.encode(b)
	b[200] = 1
	if _, err := decodeNativeMeta("f", reseal(b, 0, 8, nativeMetaSize), 0, &goldenSuper, 0x9000); !errors.Is(err, ErrCorrupt) {
		t.Errorf("reserved byte: %v", err)
	}
}

func TestNativeChooseMeta(t *testing.T) {
	a, b := nativeMeta{gen: 7}, nativeMeta{gen: 8}
	bad := errors.New("bad")
	for _, c := range []struct {
		errA, errB error
		gen        uint64
		page       int64
		fallback   bool
		ok         bool
	}{
		{nil, nil, 8, nativeMetaBOff, true, true},
		{nil, bad, 7, nativeMetaAOff, false, true},
		{bad, nil, 8, nativeMetaBOff, false, true},
		{bad, bad, 0, 0, false, false},
	} {
		// A meta that fails its checksum decodes to zero fields.
		ma, mb := a, b
		if c.errA != nil {
			ma = nativeMeta{}
		}
		if c.errB != nil {
			mb = nativeMeta{}
		}
		cur, page, fb, ok := chooseNativeMeta(ma, c.errA, mb, c.errB)
		if cur.gen != c.gen || page != c.page || fb != c.fallback || ok != c.ok {
			t.Errorf("errs %v/%v: gen %d page %d fallback %v ok %v", c.errA, c.errB, cur.gen, page, fb, ok)
		}
	}
	if cur, page, _, _ := chooseNativeMeta(b, nil, a, nil); cur.gen != 8 || page != nativeMetaAOff {
		t.Errorf("A newer: gen %d page %d", cur.gen, page)
	}
	// A meta whose checksum held but that failed later (decodeNativeMeta
	// returns its fields) is damage when it is the newer one: the older
	// meta must not silently stand in for it. An older one is ignored (a
	// checkpoint may have left it naming space the file no longer has).
	if _, _, _, ok := chooseNativeMeta(a, nil, b, bad); ok {
		t.Error("a sealed, invalid, newer meta B: the older A was chosen")
	}
	if _, _, _, ok := chooseNativeMeta(b, bad, a, nil); ok {
		t.Error("a sealed, invalid, newer meta A: the older B was chosen")
	}
	if cur, page, _, ok := chooseNativeMeta(a, bad, b, nil); !ok || cur.gen != 8 || page != nativeMetaBOff {
		t.Errorf("a sealed, invalid, older meta A: gen %d page %d ok %v", cur.gen, page, ok)
	}
	if err := nativeMetaErr(nil, bad); err != bad {
		t.Errorf("nativeMetaErr(nil, bad) = %v", err)
	}
}

// TestNativeOpenTruncatedAfterCheckpoint: a file cut short after a
// checkpoint (its newer meta names data past the end) needs the full
// repair. Choosing the older meta instead opened it, with a recovery, as
// a table that had lost every object the newer checkpoint committed.
func TestNativeOpenTruncatedAfterCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	tab, err := Open(path, Options{Format: Native})
	must(t, err)
	const n = 1100 // enough to grow the file well past the older meta's end
	for i := range n {
		must(t, tab.Insert(etf.Tuple{etf.Int(i)}))
	}
	must(t, tab.Close())
	img, err := os.ReadFile(path)
	must(t, err)
	m := nativeCurrentMeta(t, img)
	cut := img[:m.dataEnd-nativePageSize]
	must(t, os.WriteFile(path, cut, 0o644))
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("NoRepair open of the cut file: %v, want ErrNeedsRepair", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, cut) {
		t.Fatal("a refused open changed the file")
	}
	tab, err = Open(path, Options{Repair: AutoRepair})
	must(t, err)
	t.Cleanup(func() { tab.Close() })
	if _, recovered, _ := tab.Recovery(); recovered {
		t.Fatal("the cut file was recovered from a log, not repaired")
	}
	info, err := tab.Info()
	must(t, err)
	// The cut took the file's last page; the repair keeps what the rest
	// holds.
	if info.Size < n/2 {
		t.Fatalf("the repair kept %d of %d objects", info.Size, n)
	}
	must(t, tab.Check())
}

func TestNativeTreeGolden(t *testing.T) {
	if e := nativeCellEntry(0x10030, 2); e != 0x100302 || e.off() != 0x10030 || e.room() != 48 {
		t.Fatalf("cell entry %#x", uint64(e))
	}
	if e := nativeBlockEntry(0x20000, 13); e != 0x2000_4d || e.room() != 8192 || e.blockClass() != 13 {
		t.Fatalf("block entry %#x", uint64(e))
	}
	root := make([]byte, 16)
	sum := encodeNativeRoot(root, []nativeChild{{0x6000, 0xa1a2a3a4a5a6a7a8}})
	golden(t, "root", root, hx(t, "0060000000000000 a8a7a6a5a4a3a2a1"))
	if sum != xxhash.Sum64(root) {
		t.Fatal("root sum")
	}
	part := make([]byte, nativePageSize)
	encodeNativePart(part, []nativeChild{{0x7000, 0x0102030405060708}, {0x8000, 9}})
	golden(t, "part", part, hx(t, "0070000000000000 0807060504030201 0080000000000000 0900000000000000 z4064"))
	var entries [nativeSlotsPerSeg]nativeEntry
	entries[1], entries[511] = nativeCellEntry(nativeBase+0x10030, 2), nativeBlockEntry(nativeBase+0x20000, 13)
	seg := make([]byte, nativePageSize)
	segSum := encodeNativeSegment(seg, &entries)
	golden(t, "segment", seg, hx(t, "z8 0203150000000000 z4072 4d00250000000000"))

	const base, end = nativeBase, 0x40000
	m := nativeMeta{rootLen: 16, rootSum: sum, rootOff: 0x5000, dataEnd: end}
	parts, err := decodeNativeRoot("f", root, &m, base, nil)
	if err != nil || len(parts) != 1 || parts[0] != (nativeChild{0x6000, 0xa1a2a3a4a5a6a7a8}) {
		t.Fatalf("root: %v %v", parts, err)
	}
	var pd [nativeSegsPerPart]nativeChild
	partSum := nativeNodeSum(part)
	if err := decodeNativePart("f", part, 0x6000, partSum, 2, base, end, &pd); err != nil || pd[1].off != 0x8000 {
		t.Fatalf("part: %v", err)
	}
	if err := decodeNativePart("f", part, 0x6000, partSum, 1, base, end, &pd); err == nil {
		t.Fatal("part: an entry past the table's segments is accepted")
	}
	var sd [nativeSlotsPerSeg]nativeEntry
	if err := decodeNativeSegment("f", seg, 0x7000, segSum, base, end, &sd); err != nil || sd != entries {
		t.Fatalf("segment: %v", err)
	}
	flipEveryByte(t, "root", root, func(b []byte) error { _, err := decodeNativeRoot("f", b, &m, base, nil); return err })
	flipEveryByte(t, "part", part, func(b []byte) error { return decodeNativePart("f", b, 0x6000, partSum, 2, base, end, &pd) })
	flipEveryByte(t, "segment", seg, func(b []byte) error { return decodeNativeSegment("f", b, 0x7000, segSum, base, end, &sd) })
}

func TestNativeSlotEntryValidity(t *testing.T) {
	const base, end = nativeBase, nativeBase + 4*nativeRunSize
	for _, c := range []struct {
		e  nativeEntry
		ok bool
	}{
		{0, true},
		{nativeCellEntry(base+48, 2), true},
		{nativeCellEntry(base+40, 2), false},                   // off the 48-byte grid
		{nativeCellEntry(base+nativeRunSize-32, 2), false},     // past the run's last whole cell
		{nativeCellEntry(base+3*nativeRunSize+2048, 55), true}, // last run
		{nativeCellEntry(base+4*nativeRunSize, 55), false},     // past end
		{nativeCellEntry(base-2048, 55), false},                // below base
		{nativeBlockEntry(base+8192, 13), true},                // aligned from base
		{nativeBlockEntry(base+4096, 13), false},               // misaligned
		{nativeBlockEntry(base+3*nativeRunSize, 16), true},     //
		{nativeBlockEntry(base+3*nativeRunSize, 17), false},    // past end
		{nativeEntry(base>>4<<8 | 56), false},                  // code 56: no class
		{nativeEntry(base>>4<<8 | 64 + 11), false},             // a 2 KiB block: no such class
		{nativeEntry(base>>4<<8 | 64 + 60), false},             // 2^60
		{nativeEntry(0x100), false},                            // offset without a code
	} {
		if got := c.e.validIn(base, end); got != c.ok {
			t.Errorf("%v (%#x): valid %v, want %v", c.e, uint64(c.e), got, c.ok)
		}
	}
}

func TestNativeCellClasses(t *testing.T) {
	if cellSize(1) != 32 || cellSize(31) != 512 || cellSize(32) != 576 || cellSize(55) != 2048 {
		t.Fatal("cell sizes")
	}
	for s := uint64(1); s <= 4096; s++ {
		c := cellClassFor(s)
		if s > nativeMaxCell {
			if c != 0 {
				t.Fatalf("size %d: class %d", s, c)
			}
			continue
		}
		if cellSize(c) < s || (c > 1 && cellSize(c-1) >= s) || cellSize(c)%nativeCellAlign != 0 {
			t.Fatalf("size %d: class %d of %d bytes", s, c, cellSize(c))
		}
	}
	for _, c := range []struct {
		size uint64
		k    int
	}{{1, 12}, {4096, 12}, {4097, 13}, {1 << 20, 20}, {1<<59 + 1, 0}} {
		if k := blockClassFor(c.size); k != c.k {
			t.Errorf("blockClassFor(%d) = %d, want %d", c.size, k, c.k)
		}
	}
}

func TestNativeBucketGolden(t *testing.T) {
	obj := etf.Tuple{etf.Atom("a"), etf.Int(1)}
	enc, err := etf.Encode(obj)
	must(t, err)
	golden(t, "object ETF", enc, hx(t, "83 68 02 64 00 01 61 61 01"))
	rec := appendNativeObject(nil, enc, 0)
	golden(t, "object record", rec, hx(t, "3cbb8d01baa57f90 | 09 | 83 68 02 64 00 01 61 61 01"))
	// A known checksum is copied, not computed (a rewrite of a record
	// parseNative verified moves it verbatim, §6.3).
	if r := appendNativeObject(nil, enc, le.Uint64(rec)); !bytes.Equal(r, rec) {
		t.Fatalf("record with its known checksum: % x", r)
	}
	if r := appendNativeObject(nil, enc, 42); le.Uint64(r) != 42 {
		t.Fatalf("the given checksum was not used: % x", r[:8])
	}
	long := append([]byte{131, 109, 0, 0, 0, 195}, bytes.Repeat([]byte{7}, 195)...)
	if r := appendNativeObject(nil, long, 0); !bytes.Equal(r[8:10], []byte{0xc9, 0x01}) || len(r) != nativeObjectRecordSize(len(long)) {
		t.Fatalf("201-byte object: length bytes % x, record %d bytes", r[8:10], len(r))
	}
	kenc := keySpan(enc, 1)
	h := nativeKeyHash(kenc)
	slot := uint32(h & 1023)
	hd := nativeBucketHead{seq: 0x0a0b, slot: slot, level: 10, size: uint64(nativeBucketHeader + len(rec))}
	b := make([]byte, nativeBucketHeader)
	hd.encode(b)
	wantHead := hx(t, "z8 0b0a000000000000")
	wantHead = append(wantHead, byte(slot), byte(slot>>8), 0, 0, 10, 0, 0x4e, 0x42, 50, 0, 0, 0, 0, 0, 0, 0)
	reseal(wantHead, 0, 8, 32)
	golden(t, "bucket header", b, wantHead)
	if hd.headerSum() != le.Uint64(b) {
		t.Fatal("headerSum")
	}
	bucket := append(b, rec...)
	var seen [][]byte
	got, err := walkNativeBucket("f", bucket, 0x10000, 64, 1, func(off int64, e, k []byte) error {
		if off != 0x10000+32 || !bytes.Equal(k, kenc) {
			t.Errorf("record at %d, key % x", off, k)
		}
		seen = append(seen, e)
		return nil
	})
	if err != nil || got != hd || len(seen) != 1 || !bytes.Equal(seen[0], enc) {
		t.Fatalf("walk: %+v %v %d", got, err, len(seen))
	}
	flipEveryByte(t, "bucket", bucket, func(b []byte) error {
		_, err := walkNativeBucket("f", b, 0x10000, 64, 1, nil)
		return err
	})
	flipEveryByte(t, "object record", rec, func(b []byte) error {
		_, _, err := decodeNativeObject("f", b, 0)
		return err
	})
}

func TestNativeBucketRefusals(t *testing.T) {
	enc, _ := etf.Encode(etf.Tuple{etf.Atom("a"), etf.Int(1)})
	rec := appendNativeObject(nil, enc, 0)
	slot := uint32(nativeKeyHash(keySpan(enc, 1)) & 1023)
	good := nativeBucketHead{seq: 5, slot: slot, level: 10, size: uint64(32 + len(rec))}
	bucket := func(h nativeBucketHead, body []byte) []byte {
		b := make([]byte, 32)
		h.encode(b)
		return append(b, body...)
	}
	with := func(edit func(h *nativeBucketHead)) nativeBucketHead { h := good; edit(&h); return h }
	nonMinimal := append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x00}, enc...)
	reseal(nonMinimal, 0, 8, len(nonMinimal))
	notTuple := appendNativeObject(nil, []byte{131, 97, 1}, 0)
	cases := []struct {
		name string
		b    []byte
		room uint64
	}{
		{"seq 0", bucket(with(func(h *nativeBucketHead) { h.seq = 0 }), rec), 64},
		{"level 8", bucket(with(func(h *nativeBucketHead) { h.level, h.slot = 8, slot&255 }), rec), 64},
		{"level 33", bucket(with(func(h *nativeBucketHead) { h.level = 33 }), rec), 64},
		{"slot above its level", bucket(with(func(h *nativeBucketHead) { h.slot = 1024 }), rec), 64},
		{"size past its cell", bucket(good, rec), 48},
		{"size past the bytes read", bucket(good, rec[:len(rec)-1]), 64},
		{"size below one record", bucket(with(func(h *nativeBucketHead) { h.size = 41 }), rec), 64},
		{"wrong slot", bucket(with(func(h *nativeBucketHead) { h.slot = slot ^ 1 }), rec), 64},
		{"records do not tile", bucket(with(func(h *nativeBucketHead) { h.size-- }), rec), 64},
		{"non-minimal length", bucket(with(func(h *nativeBucketHead) { h.size++ }), nonMinimal), 64},
		{"not a tuple", bucket(with(func(h *nativeBucketHead) { h.size = uint64(32 + len(notTuple)) }), notTuple), 64},
		{"magic", func() []byte {
			b := bucket(good, rec)
			b[22] = 'X'
			return reseal(b, 0, 8, 32)
		}(), 64},
	}
	for _, c := range cases {
		_, err := walkNativeBucket("f", c.b, 0x10000, c.room, 1, nil)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
	if _, err := walkNativeBucket("f", bucket(good, rec), 0x10000, 64, 1, nil); err != nil {
		t.Fatalf("good bucket: %v", err)
	}
}

func TestNativeLogGolden(t *testing.T) {
	blk := nativeLogBlock{fileID: 0x0102030405060708, epoch: 3, index: 2}
	b := make([]byte, nativeLogHeader)
	blk.encode(b)
	want := reseal(hx(t, "z8 474e4c31 00000000 0807060504030201 0300000000000000 0200000000000000 z24"), 0, 8, 64)
	golden(t, "log block header", b, want)
	if d, err := decodeNativeLogBlock("f", b, 0); err != nil || d != blk {
		t.Fatalf("decode: %+v %v", d, err)
	}
	flipEveryByte(t, "log block header", b, func(b []byte) error { _, err := decodeNativeLogBlock("f", b, 0); return err })

	r := nativeLogRec{epoch: 3, seq: 42, typ: recPut, flags: recEndGroup, slot: 77, entry: 0x100302,
		bsum: 0x0102030405060708, dObj: -1, dKeys: 1}
	rb := make([]byte, nativeLogRecord)
	r.encode(rb)
	wantRec := reseal(hx(t, `z8 0300000000000000 2a00000000000000 01 01 z6 4d00000000000000
		0203100000000000 0807060504030201 ffffffff 01000000`), 0, 8, 64)
	golden(t, "log record", rb, wantRec)
	if d, err := decodeNativeLogRec("f", rb, 0); err != nil || d != r || !d.endsGroup() {
		t.Fatalf("decode: %+v %v", d, err)
	}
	flipEveryByte(t, "log record", rb, func(b []byte) error { _, err := decodeNativeLogRec("f", b, 0); return err })
	if nativeLogHead(4) != 12288 || nativeLogHead(5) != 16384 || nativeHeadRecords != 63 || nativeBlockRecords != 1023 {
		t.Fatal("log positions")
	}
	if !nativeLogFollows(&r, 3, 41) || nativeLogFollows(&r, 2, 41) || nativeLogFollows(&r, 3, 40) {
		t.Fatal("nativeLogFollows")
	}
}

func TestNativeLogRecordRefusals(t *testing.T) {
	good := []nativeLogRec{
		{epoch: 1, seq: 1, typ: recPut, flags: recEndGroup, slot: 3, entry: 0x100302, bsum: 1, dObj: 1, dKeys: 1},
		{epoch: 1, seq: 2, typ: recEmpty, flags: recEndGroup, slot: 3, dObj: -1, dKeys: -1},
		{epoch: 1, seq: 3, typ: recGrow, flags: recEndGroup, slot: 1536, entry: 1024},
		{epoch: 1, seq: 4, typ: recGrow, flags: recEndGroup, slot: 1024, entry: 1024},
		{epoch: 1, seq: 5, typ: recLink, entry: 0x30000},
	}
	for _, r := range good {
		b := make([]byte, 64)
		r.encode(b)
		if _, err := decodeNativeLogRec("f", b, 0); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := map[string]nativeLogRec{
		"type 0":              {epoch: 1, seq: 1},
		"type 5":              {epoch: 1, seq: 1, typ: 5},
		"flag bit 1":          {epoch: 1, seq: 1, typ: recEmpty, flags: 2},
		"seq 0":               {epoch: 1, typ: recEmpty},
		"epoch 0":             {seq: 1, typ: recEmpty},
		"PUT without entry":   {epoch: 1, seq: 1, typ: recPut},
		"PUT bad code":        {epoch: 1, seq: 1, typ: recPut, entry: 0x100338},
		"EMPTY with entry":    {epoch: 1, seq: 1, typ: recEmpty, entry: 0x100302},
		"GROW M not pow2":     {epoch: 1, seq: 1, typ: recGrow, slot: 1024, entry: 768},
		"GROW next below M":   {epoch: 1, seq: 1, typ: recGrow, slot: 512, entry: 1024},
		"GROW next at 2M":     {epoch: 1, seq: 1, typ: recGrow, slot: 2048, entry: 1024},
		"GROW with counts":    {epoch: 1, seq: 1, typ: recGrow, slot: 1536, entry: 1024, dObj: 1},
		"LINK misaligned":     {epoch: 1, seq: 1, typ: recLink, entry: 0x30010},
		"LINK ending a group": {epoch: 1, seq: 1, typ: recLink, entry: 0x30000, flags: recEndGroup},
	}
	for name, r := range bad {
		b := make([]byte, 64)
		r.encode(b)
		if _, err := decodeNativeLogRec("f", b, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	b := make([]byte, 64)
	good[0].encode(b)
	b[nrOffFlags] |= 2
	if _, err := decodeNativeLogRec("f", reseal(b, 0, 8, 64), 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("reserved flag bit: %v", err)
	}
	// Bytes 26..31 are the session nonce (revision 2): decoded, whole.
	good[0].nonce = 0xfedcba987654
	good[0].encode(b)
	if r, err := decodeNativeLogRec("f", b, 0); err != nil || r.nonce != 0xfedcba987654 {
		t.Errorf("nonce: %#x, %v", r.nonce, err)
	}
}

// goldenFree is a free record over [20480, 20480+4*64 KiB): a free 4 KiB
// block at base+4096, a quarantined 8 KiB block at base+8192, and a run of
// 2048-byte cells at base+64 KiB with cells 1 and 2 free and 3 quarantined.
const goldenFree = `z8 | 474e4631 00000000 | 0100000000000000 0100000000000000 0100000000000000
	0c01000000000000 | 0d02000000000000
	3701000000000000 0100000000000000 0600000000000000 0800000000000000`

func TestNativeFreeGolden(t *testing.T) {
	const base, end = nativeBase, nativeBase + 4*nativeRunSize
	rec := hx(t, goldenFree)
	a, err := decodeNativeFree("f", rec, 0x9000, xxhash.Sum64(rec), base, end)
	if err != nil {
		t.Fatal(err)
	}
	if a.free[12][0] != base+4096 || len(a.quar) != 1 || a.quar[0] != (nativeBlock{base + 8192, 13}) {
		t.Fatalf("blocks: free %v, quarantined %v", a.free[12], a.quar)
	}
	r := a.runs[base+nativeRunSize]
	if r == nil || r.class != 55 || r.cells != 32 || r.free[0] != 6 || r.quar[0] != 8 || len(a.open[55]) != 1 {
		t.Fatalf("run: %+v", r)
	}
	// Above the data end everything is free, in blocks of ascending size.
	if a.free[18][0] != base+4*nativeRunSize || a.free[58][0] != base+1<<58 || a.dataEnd() != end {
		t.Fatalf("tail: free[18] %v, data end %d", a.free[18], a.dataEnd())
	}
	got, err := a.encodeFree(nil, end)
	must(t, err)
	golden(t, "free record", got, rec)
	if n := a.freeRecordSize(end); n != uint64(len(rec)) {
		t.Fatalf("freeRecordSize %d, record %d bytes", n, len(rec))
	}
	flipEveryByte(t, "free record", rec, func(b []byte) error {
		_, err := decodeNativeFree("f", b, 0x9000, xxhash.Sum64(rec), base, end)
		return err
	})
}

// TestNativeCodecRoundTrip encodes random valid values of every fixed
// structure and decodes them back. Seeded: -seed.
func TestNativeCodecRoundTrip(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(uint64(seed), 19))
	for i := range 2000 {
		what := fmt.Sprintf("seed %d case %d", seed, i)
		s := nativeSuper{kind: 1 + r.Uint32N(3), revision: 1, keyPos: 1 + r.Uint32N(1<<24), keyHash: 1, checksum: 1,
			pageSize: 4096, base: nativeBase + 4096*r.Uint64N(1<<20), fileID: r.Uint64(),
			minSlots: 512 << r.IntN(10), maxSlots: 1 << 32 >> r.IntN(13)}
		sb := make([]byte, nativeSuperSize)
		s.encode(sb)
		if d, err := decodeNativeSuper("f", sb, int64(s.base)); err != nil || d != s {
			t.Fatalf("%s: superblock %+v: %+v, %v", what, s, d, err)
		}
		mk := 9 + r.IntN(23)
		mm := uint64(1) << mk
		n := r.Uint64N(mm/512) * 512
		next := mm + n
		dataEnd := s.base + 4096*(1+r.Uint64N(1<<30))
		rootLen := nativeRootLen(next)
		m := nativeMeta{fileID: s.fileID, gen: 1 + r.Uint64N(1<<62), seq: r.Uint64(), next: next, m: mm, n: n,
			noKeys: r.Uint64N(1 << 40), dataEnd: dataEnd, rootLen: rootLen, rootSum: r.Uint64(), freeLen: 40 + 8*r.Uint64N(100),
			freeSum: r.Uint64(), flags: r.Uint64N(4)}
		m.noObjects = m.noKeys + r.Uint64N(1<<40)
		m.verifiedGen = r.Uint64N(m.gen + 1)
		m.rootOff, m.freeOff = s.base, s.base+(rootLen+4095)/4096*4096
		s.minSlots, s.maxSlots = min(s.minSlots, mm), 1<<32
		if m.freeOff+m.freeLen > dataEnd {
			m.dataEnd = (m.freeOff + m.freeLen + 4095) / 4096 * 4096
		}
		mb := make([]byte, nativePageSize)
		m.encode(mb)
		if d, err := decodeNativeMeta("f", mb, 4096, &s, int64(m.dataEnd)); err != nil || d != m {
			t.Fatalf("%s: meta %+v: %+v, %v", what, m, d, err)
		}
		h := nativeBucketHead{seq: 1 + r.Uint64N(1<<63), level: uint8(9 + r.IntN(24)), size: 42 + r.Uint64N(1<<40)}
		h.slot = uint32(r.Uint64N(1 << h.level))
		hb := make([]byte, nativeBucketHeader)
		h.encode(hb)
		if d, err := decodeNativeBucketHeader("f", hb, 0, h.size); err != nil || d != h {
			t.Fatalf("%s: bucket header %+v: %+v, %v", what, h, d, err)
		}
		rec := nativeLogRec{epoch: 1 + r.Uint64N(1<<62), seq: 1 + r.Uint64N(1<<62), typ: recPut, flags: uint8(r.IntN(2)),
			slot: r.Uint64N(1 << 32), entry: uint64(nativeCellEntry(s.base+16*r.Uint64N(1<<40), 1+r.IntN(55))),
			bsum: r.Uint64(), dObj: int32(r.Uint32()), dKeys: int32(r.Uint32())}
		rb := make([]byte, nativeLogRecord)
		rec.encode(rb)
		if d, err := decodeNativeLogRec("f", rb, 0); err != nil || d != rec {
			t.Fatalf("%s: log record %+v: %+v, %v", what, rec, d, err)
		}
		enc := make([]byte, 1+r.IntN(300))
		for j := range enc {
			enc[j] = byte(r.Uint32())
		}
		or := appendNativeObject([]byte{1, 2, 3}, enc, 0)
		if d, n, err := decodeNativeObject("f", or[3:], 0); err != nil || n != len(or)-3 || !bytes.Equal(d, enc) {
			t.Fatalf("%s: object of %d bytes: %d, %v", what, len(enc), n, err)
		}
	}
}
