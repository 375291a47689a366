package dets

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// The inspect views are a public API over untrusted files: any offset,
// slot or length a caller passes gets an answer, never a panic, and the
// work follows the file, not the argument. FuzzInspect (package fuzz)
// searches damaged files; these pin what it found.

// otp9InspectImage is a closed otp9 bag of 300 objects.
func otp9InspectImage(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.dets")
	tab := openT(t, path, Options{Kind: Bag})
	for i := range 300 {
		must(t, tab.Insert(tup(etf.Int(i%100), bin("value"), etf.Int(i))))
	}
	must(t, tab.Close())
	im, err := ReadImage(path)
	must(t, err)
	return im.Bytes()
}

// TestRegionOfOutsideFile: offsets before and past the file are "outside
// the file" in both formats (a negative offset indexed the native header
// pages' names, and otp9 called it the header).
// inspectViews is a view of a closed otp9 bag and of a closed native set,
// by format name, with their file sizes.
func inspectViews(t *testing.T) (map[string]interface {
	RegionOf(int64) Region
	HexRows(int64, int64) []Annotation
}, map[string]int64) {
	b := otp9InspectImage(t)
	_, closed := nativeInspectImages(t, 200)
	im, err := NewImage(b)
	must(t, err)
	nim, err := NewNativeImage("t.dets", bytes.NewReader(closed), int64(len(closed)))
	must(t, err)
	return map[string]interface {
			RegionOf(int64) Region
			HexRows(int64, int64) []Annotation
		}{"otp9": im, "native": nim},
		map[string]int64{"otp9": int64(len(b)), "native": int64(len(closed))}
}

func TestRegionOfOutsideFile(t *testing.T) {
	views, sizes := inspectViews(t)
	for name, v := range views {
		for _, off := range []int64{-1, -1 << 40, sizes[name], sizes[name] + 1, 1 << 62} {
			if r := v.RegionOf(off); r.Name != "outside the file" || r.Start != off {
				t.Errorf("%s: RegionOf(%d) = %v, want outside the file", name, off, r)
			}
		}
		if r := v.RegionOf(sizes[name] - 1); r.Name == "outside the file" {
			t.Errorf("%s: the last byte is %v", name, r)
		}
	}
}

// TestHexRowsBounds: HexRows shows at most HexRowsMax bytes, only bytes of
// the file, and rows that tile what it shows; unreferenced bytes come in
// 16-byte rows, not one row a byte.
func TestHexRowsBounds(t *testing.T) {
	views, sizes := inspectViews(t)
	for name, v := range views {
		for _, c := range []struct{ off, n, want int64 }{
			{0, 1 << 62, HexRowsMax},
			{-10, 26, 16},
			{-1 << 62, -1 << 62, 0},
			{-5, 3, 0},
			{100, -1, 0},
		} {
			rows := v.HexRows(c.off, c.n)
			var got int64
			at := max(c.off, 0)
			for _, r := range rows {
				if r.Offset != at || len(r.Bytes) == 0 || len(r.Bytes) > 16 {
					t.Fatalf("%s: HexRows(%d, %d): row %+v at %d", name, c.off, c.n, r, at)
				}
				at += int64(len(r.Bytes))
				got += int64(len(r.Bytes))
			}
			if got != c.want {
				t.Errorf("%s: HexRows(%d, %d) showed %d bytes, want %d", name, c.off, c.n, got, c.want)
			}
		}
	}
	// Unreferenced native bytes: the region spans the gap, so rows stay
	// 16 bytes wide.
	for off := int64(nativeBase); off < sizes["native"]; off += 97 {
		r := views["native"].RegionOf(off)
		if r.Name != "free or unreferenced" {
			continue
		}
		if r.End-r.Start < 2 || off < r.Start || off >= r.End {
			t.Fatalf("an unreferenced byte at %d is in %v", off, r)
		}
		rows := views["native"].HexRows(r.Start, 64)
		if len(rows) == 0 || len(rows[0].Bytes) != min(16, int(r.End-r.Start)) {
			t.Fatalf("rows over the unreferenced %v: %+v", r, rows)
		}
		return
	}
	t.Fatal("no unreferenced byte found: the test proves less")
}

// TestHexRowsSegmentCutShort: a segment pointer whose segment runs past
// the end of an otp9 file is shown, not read past the end.
func TestHexRowsSegmentCutShort(t *testing.T) {
	b := otp9InspectImage(t)
	im, err := NewImage(b)
	must(t, err)
	segs := im.Segments()
	if len(segs) == 0 {
		t.Fatal("no segment")
	}
	cut := segs[0].Addr + 94 // an entry at +88 is cut 2 bytes short
	short, err := NewImage(b[:cut])
	must(t, err)
	rows := short.HexRows(cut-20, 64)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	last := rows[len(rows)-1]
	if last.Offset+int64(len(last.Bytes)) != cut {
		t.Errorf("rows end at %d, the file at %d", last.Offset+int64(len(last.Bytes)), cut)
	}
}

// TestNativeRedactLogPastEnd: a killed writer's file cut short below a
// bucket its log names is redacted (that bucket is simply not there), not
// a panic.
func TestNativeRedactLogPastEnd(t *testing.T) {
	dirty, _ := nativeInspectImages(t, 200)
	im, err := NewNativeImage("t.dets", bytes.NewReader(dirty), int64(len(dirty)))
	must(t, err)
	m := nativeCurrentMeta(t, dirty)
	lg, err := im.log(&m)
	must(t, err)
	var last uint64
	for _, r := range lg.recs {
		if r.typ == recPut {
			last = max(last, nativeEntry(r.entry).off())
		}
	}
	if last == 0 {
		t.Fatal("the log names no bucket: the test proves less")
	}
	short := dirty[:last]
	sim, err := NewNativeImage("t.dets", bytes.NewReader(short), int64(len(short)))
	must(t, err)
	red, _, err := sim.Redact()
	if err != nil && !errors.Is(err, ErrCannotRedact) {
		t.Fatalf("Redact: %v", err)
	}
	if err == nil && len(red) != len(short) {
		t.Errorf("redacted %d bytes of %d", len(red), len(short))
	}
}

// TestRegionOfGapNeedsEveryBucket: an unreferenced byte's region spans
// the gap between the structures around it only when every bucket is
// known; with a part that fails its checksum, the buckets under it are
// unknown and the region is the byte alone.
func TestRegionOfGapNeedsEveryBucket(t *testing.T) {
	_, closed := nativeInspectImages(t, 200)
	im, err := NewNativeImage("t.dets", bytes.NewReader(closed), int64(len(closed)))
	must(t, err)
	m := nativeCurrentMeta(t, closed)
	free := int64(-1)
	for off := int64(nativeBase); off < int64(m.dataEnd); off += 16 {
		if r := im.RegionOf(off); r.Name == "free or unreferenced" && r.End-r.Start > 1 {
			free = off
			break
		}
	}
	if free < 0 {
		t.Fatal("no unreferenced gap below the data end: the test proves less")
	}
	parts, _, err := im.Tree()
	must(t, err)
	bad := bytes.Clone(closed)
	bad[parts[0].Addr+3] ^= 1 // the first child's offset: the part's checksum fails
	bim, err := NewNativeImage("t.dets", bytes.NewReader(bad), int64(len(bad)))
	must(t, err)
	if r := bim.RegionOf(free); r.Name != "free or unreferenced" || r.Start != free || r.End != free+1 {
		t.Errorf("with its part damaged, byte %d is in %v, want that byte alone", free, r)
	}
}

// TestRegionOfGapNeedsEveryBucketOTP9 is the same for otp9: a part
// pointer outside the file hides the buckets of its segments.
func TestRegionOfGapNeedsEveryBucketOTP9(t *testing.T) {
	b := otp9InspectImage(t)
	im, err := NewImage(b)
	must(t, err)
	free := int64(-1)
	for off := int64(baseAddr); off < int64(len(b))-trailerSize; off++ {
		if r := im.RegionOf(off); r.Name == "unknown" && r.End-r.Start > 1 {
			free = off
			break
		}
	}
	if free < 0 {
		t.Fatal("no unknown gap: the test proves less")
	}
	bad := bytes.Clone(b)
	be.PutUint32(bad[partTableOff+4*(numParts-1):], 0xfffffff0) // a part past the end
	bim, err := NewImage(bad)
	must(t, err)
	if r := bim.RegionOf(free); r.Name != "unknown" || r.Start != free || r.End != free+1 {
		t.Errorf("with a part outside the file, byte %d is in %v, want that byte alone", free, r)
	}
}

// TestGapAround: the gap RegionOf gives unreferenced bytes is bounded by
// the nearest structures offered below and above the offset, whatever
// their order; one that starts near 2^64 (a native offset read from a
// damaged file) narrows nothing; a blind walk answers the offset's byte
// alone.
func TestGapAround(t *testing.T) {
	const huge = int64(-1 << 4) // uint64 2^64 - 16
	cases := []struct {
		name   string
		offer  [][2]int64 // start, length
		blind  bool
		holds  int // index of the structure that holds 500, or -1
		region Region
	}{
		{"nothing offered", nil, false, -1, Region{"gap", 100, 1000, -1}},
		{"narrowed both sides", [][2]int64{{700, 10}, {200, 50}, {600, 5}, {300, 20}}, false, -1, Region{"gap", 320, 600, -1}},
		{"touching ends", [][2]int64{{480, 20}, {501, 1}}, false, -1, Region{"gap", 500, 501, -1}},
		{"held", [][2]int64{{200, 50}, {490, 20}}, false, 1, Region{}},
		{"starts near 2^64", [][2]int64{{huge, 32}}, false, -1, Region{"gap", 100, 1000, -1}},
		{"empty structure", [][2]int64{{400, 0}, {800, 0}}, false, -1, Region{"gap", 100, 800, -1}},
		{"blind", [][2]int64{{200, 50}}, true, -1, Region{"gap", 500, 501, -1}},
	}
	for _, c := range cases {
		g := newGapAround(500, "gap", 100, 1000)
		g.blind = c.blind
		held := -1
		for i, s := range c.offer {
			if g.holds(s[0], s[1]) && held < 0 {
				held = i
			}
		}
		if held != c.holds {
			t.Errorf("%s: held by %d, want %d", c.name, held, c.holds)
			continue
		}
		if held < 0 && g.region() != c.region {
			t.Errorf("%s: region %v, want %v", c.name, g.region(), c.region)
		}
	}
}
