package dets

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// TestMappedReadsSeeWrites interleaves writes (pwrite) with lookups that go
// through the map once it exists, checking every answer against a map.
func TestMappedReadsSeeWrites(t *testing.T) { forEachFormat(t, testMappedReadsSeeWrites) }

func testMappedReadsSeeWrites(t *testing.T, format Format) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	tab := openT(t, tmpFile(t, "m.dets"), Options{Format: format})
	want := map[int64]int64{}
	for i := range 5000 {
		k := rng.Int63n(700)
		switch rng.Intn(4) {
		case 0:
			if err := tab.Delete(etf.Int(k)); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
		case 1:
			v := int64(i)
			if err := tab.Insert(tup(etf.Int(k), etf.Int(v), bin(string(make([]byte, rng.Intn(300)))))); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		default:
			objs, err := tab.Lookup(etf.Int(k))
			if err != nil {
				t.Fatal(err)
			}
			v, ok := want[k]
			if !ok {
				if len(objs) != 0 {
					t.Fatalf("op %d: key %d: got %v, want none", i, k, objs)
				}
				continue
			}
			if len(objs) != 1 || objs[0].(etf.Tuple)[1] != etf.Int(v) {
				t.Fatalf("op %d: key %d: got %v, want value %d", i, k, objs, v)
			}
		}
	}
	if tab.mm == nil {
		t.Fatal("no map after thousands of lookups")
	}
}

// truncationTable returns an open set of n objects {I, <<200 zeros>>}
// whose file a test will truncate, closed at the end of the test. It is
// not checked then: the file is damaged on purpose.
func truncationTable(t *testing.T, n int) (string, *Table) {
	t.Helper()
	path := tmpFile(t, "t.dets")
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	for i := range n {
		if err := tab.Insert(tup(etf.Int(i), bin(string(make([]byte, 200))))); err != nil {
			t.Fatal(err)
		}
	}
	return path, tab
}

// TestMappedReadOfTruncatedFile truncates the file behind an open table
// whose reads go through the map: the lookup must fail with ErrCorrupt (the
// vanished page raises SIGBUS, turned into a fallback to pread), not crash.
func TestMappedReadOfTruncatedFile(t *testing.T) {
	t.Parallel()
	path, tab := truncationTable(t, 2000)
	for i := range 2 * mapAfterOps {
		if _, err := tab.Lookup(etf.Int(i)); err != nil {
			t.Fatal(err)
		}
	}
	if tab.mm == nil {
		t.Fatal("table not mapped")
	}
	tab.mu.Lock()
	seg, err := tab.segment(0)
	tab.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	// Growth's prefetch of a segment's buckets stops quietly at the fault.
	tab.mu.Lock()
	tab.tune.touchMin = 0
	tab.touchBuckets(seg[:])
	tab.mu.Unlock()
	failed := 0
	for i := range 2000 {
		_, err := tab.Lookup(etf.Int(i))
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("lookup %d: %v, want ErrCorrupt", i, err)
		}
		failed++
		break
	}
	if failed == 0 {
		t.Fatal("no lookup failed after the file was truncated to 4 KiB")
	}
}

// TestMappedScanOfTruncatedFile: a traversal decodes a set's buckets
// straight from the map; when another process truncates the file, the
// fault falls back to reading, which reports the damage. Every object seen
// before that is one that was inserted.
func TestMappedScanOfTruncatedFile(t *testing.T) {
	const n = 2000
	path, tab := truncationTable(t, n)
	seen := 0
	for o, err := range tab.All() { // maps the file: its reads are large
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := keyOf(o, 1); !ok || k.(etf.Int) < 0 || k.(etf.Int) >= n {
			t.Fatalf("object %v was never inserted", o)
		}
		seen++
	}
	if seen != n || tab.mm == nil {
		t.Fatalf("saw %d objects of %d (mapped: %v)", seen, n, tab.mm != nil)
	}
	if err := os.Truncate(path, 64<<10); err != nil {
		t.Fatal(err)
	}
	seen = 0
	var last error
	for o, err := range tab.All() {
		if err != nil {
			last = err
			break
		}
		if k, ok := keyOf(o, 1); !ok || k.(etf.Int) < 0 || k.(etf.Int) >= n {
			t.Fatalf("object %v was never inserted", o)
		}
		seen++
	}
	if !errors.Is(last, ErrCorrupt) || seen >= n {
		t.Fatalf("after truncation to 64 KiB: %d objects, then %v; want ErrCorrupt", seen, last)
	}
}

// TestCopyFromMapFault reads a page past the end of a mapped file directly.
func TestCopyFromMapFault(t *testing.T) {
	path := tmpFile(t, "f")
	if err := os.WriteFile(path, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OSFS{}.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ok := f.(mappable)
	if !ok {
		t.Skip("OS files are not mappable on this platform")
	}
	b, unmap, err := m.mapShared(1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	dst := make([]byte, 10)
	if !mapCopy(dst, b[:10]) {
		t.Fatal("reading the first page failed")
	}
	if mapCopy(dst, b[64<<10:64<<10+10]) {
		t.Fatal("reading past the end of the file succeeded")
	}
}

// TestMappedCrashImage takes the image a kill -9 leaves of a table whose
// writes went through the map and whose file was extended past its data:
// the page cache's bytes, read while the table is open. Both godets's and
// OTP's repairs must find exactly the acknowledged objects, and OTP must
// read the godets-repaired file with {repair,false}.
func TestMappedCrashImage(t *testing.T) {
	r := otptest.Erl(t)
	rng := rand.New(rand.NewSource(testSeed(t)))
	var imgs [][]byte
	var want [][]string
	for _, kind := range allKinds {
		dir := t.TempDir()
		path := filepath.Join(dir, "live.dets")
		tab, err := Open(path, Options{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(kind)
		for i := range 4000 {
			k := rng.Intn(1500)
			if rng.Intn(5) == 0 {
				deleteBoth(t, tab, m, etf.Int(k))
				continue
			}
			o := paddedObj(k, i%3, rng.Intn(400))
			insertBoth(t, tab, m, o)
		}
		if !tab.mmWritable || !tab.extended {
			t.Fatalf("%s: writes did not go through an extended map (writable %v, extended %v)", kind, tab.mmWritable, tab.extended)
		}
		img := readFileT(t, path)
		if int64(len(img)) <= tab.fileEnd {
			t.Fatalf("%s: image of %d bytes, end of data %d: the file was not extended", kind, len(img), tab.fileEnd)
		}
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Stat(path); err != nil || info.Size() != tab.size {
			t.Fatalf("%s: closed file size %v (err %v), want %d", kind, info.Size(), err, tab.size)
		}
		reopenClean(t, path)

		imgs = append(imgs, img)
		want = append(want, m.Objects())
	}
	checkKillImagesWithOTP(t, r, allKinds, imgs, want)
}

// checkKillImagesWithOTP repairs each kill image imgs[i] of a table of kinds[i] with
// godets and, on a copy, with OTP. Both must recover exactly want[i], and
// OTP must read the godets-repaired file with {repair,false}.
func checkKillImagesWithOTP(t *testing.T, r *otptest.Runner, kinds []Kind, imgs [][]byte, want [][]string) {
	t.Helper()
	var in [][]byte
	for i, kind := range kinds {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "otp.dets"), filepath.Join(dir, "go.dets")
		writeFileT(t, a, imgs[i])
		writeFileT(t, b, imgs[i])
		if _, err := Open(b, Options{}); !errors.Is(err, ErrNeedsRepair) {
			t.Fatalf("%s: open of the crash image: %v, want ErrNeedsRepair", kind, err)
		}
		rtab, err := Open(b, Options{Repair: AutoRepair})
		if err != nil {
			t.Fatalf("%s: repair: %v", kind, err)
		}
		rtab.Close()
		if got := reopenClean(t, b); !slices.Equal(got, want[i]) {
			t.Fatalf("%s: godets repaired %d objects, want %d", kind, len(got), len(want[i]))
		}
		in = append(in, []byte(kindName(kind)), []byte(a), []byte(b))
	}
	for i, kind := range kinds {
		out := r.Eval(t, otpReadBack, in[3*i:3*i+3]...)
		if got := decodeOTPObjects(t, out[0]); !slices.Equal(got, want[i]) {
			t.Errorf("%s: OTP repaired the crash image to %d objects, want %d", kind, len(got), len(want[i]))
		}
		if got := decodeOTPObjects(t, out[1]); !slices.Equal(got, want[i]) {
			t.Errorf("%s: OTP reads %d objects from the godets-repaired file, want %d", kind, len(got), len(want[i]))
		}
	}
}

// TestMappedReadOnly: a read-only table maps the file read-only and reads
// the same objects through the map as through pread.
func TestMappedReadOnly(t *testing.T) { forEachFormat(t, testMappedReadOnly) }

func testMappedReadOnly(t *testing.T, format Format) {
	path := tmpFile(t, "ro.dets")
	tab := mustOpen(t, path, Options{Format: format})
	for i := range 500 {
		if err := tab.Insert(tup(etf.Int(i), etf.Int(i*i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	ro := openT(t, path, Options{Format: format, ReadOnly: true})
	for round := range 2 {
		for i := range 500 {
			objs, err := ro.Lookup(etf.Int(i))
			if err != nil || len(objs) != 1 || objs[0].(etf.Tuple)[1] != etf.Int(i*i) {
				t.Fatalf("round %d, key %d: %v %v", round, i, objs, err)
			}
		}
	}
	if ro.mm == nil || ro.mmWritable {
		t.Fatalf("read-only table: mapped %v, writable %v; want a read-only map", ro.mm != nil, ro.mmWritable)
	}
}

// TestMapLimitFallback: a file larger than the map span (256 MiB on 32-bit
// targets) is never mapped and is read with pread; a mapped file that grows
// past the span is read and written past it with pread and pwrite. The
// span is lowered to 1 MiB so the test runs on every target.
func TestMapLimitFallback(t *testing.T) { forEachFormat(t, testMapLimitFallback) }

func testMapLimitFallback(t *testing.T, format Format) {
	// The span of a 32-bit target, lowered further.
	const span = 1 << 20
	opts := withTuning(Options{Format: format}, func(tn *tuning) { tn.mapSpan = span })
	const n = 3000
	val := bin(string(make([]byte, 500)))
	lookupAll := func(tab *Table, upto int) {
		t.Helper()
		for i := range upto {
			objs, err := tab.Lookup(etf.Int(i))
			if err != nil || len(objs) != 1 || objs[0].(etf.Tuple)[1] != etf.Int(i) {
				t.Fatalf("key %d: %v %v", i, objs, err)
			}
		}
	}

	// Grows past the span while mapped.
	path := tmpFile(t, "grow.dets")
	tab := openT(t, path, opts)
	for i := range 100 {
		if err := tab.Insert(tup(etf.Int(i), etf.Int(i), val)); err != nil {
			t.Fatal(err)
		}
	}
	lookupAll(tab, 100)
	if tab.mm == nil || len(tab.mm) != span {
		t.Fatalf("small file: map of %d bytes, want the 1 MiB span", len(tab.mm))
	}
	for i := 100; i < n; i++ {
		if err := tab.Insert(tup(etf.Int(i), etf.Int(i), val)); err != nil {
			t.Fatal(err)
		}
	}
	if tab.size <= int64(span) {
		t.Fatalf("file of %d bytes did not outgrow the span", tab.size)
	}
	lookupAll(tab, n)
	seen := 0
	for obj, err := range tab.All() {
		if err != nil {
			t.Fatal(err)
		}
		if k := int(obj.(etf.Tuple)[0].(etf.Int)); k < 0 || k >= n {
			t.Fatalf("scan: key %d", k)
		}
		seen++
	}
	if seen != n {
		t.Fatalf("scan saw %d objects, want %d", seen, n)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}

	// Opened larger than the span: never mapped.
	tab = openT(t, path, opts)
	lookupAll(tab, n)
	lookupAll(tab, n)
	if tab.mm != nil {
		t.Fatalf("file of %d bytes mapped with a span of %d", tab.size, span)
	}
}
