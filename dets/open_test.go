package dets

import (
	"bytes"
	"crypto/md5"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// closedFile writes a small closed otp9 bag table with some objects and
// returns its bytes.
func closedFile(t *testing.T) []byte {
	t.Helper()
	return closedFileOf(t, OTP9)
}

// closedFileOf is closedFile in the given format.
func closedFileOf(t *testing.T, format Format) []byte {
	t.Helper()
	path := tmpFile(t, "src.dets")
	tab, err := Open(path, Options{Kind: Bag, KeyPos: 2, Format: format})
	must(t, err)
	for i := range 50 {
		must(t, tab.Insert(tup(etf.Atom("v"), etf.Int(i), bin("x"))))
	}
	must(t, tab.Close())
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}

// dirtyFile returns the bytes of a table that was written and not closed.
func dirtyFile(t *testing.T) []byte {
	t.Helper()
	path := tmpFile(t, "dirty.dets")
	tab, err := Open(path, Options{Kind: Bag, KeyPos: 2})
	must(t, err)
	must(t, tab.Insert(tup(etf.Atom("v"), etf.Int(1))))
	b, err := os.ReadFile(path)
	must(t, err)
	must(t, tab.Close())
	return b
}

func patch(b []byte, off int, v uint32, fixMD5 bool) []byte {
	b = bytes.Clone(b)
	be.PutUint32(b[off:], v)
	if fixMD5 {
		sum := md5.Sum(b[md5Start:md5End])
		copy(b[offMD5:], sum[:])
	}
	return b
}

// TestOpenDecisionTable covers every row of docs/format-otp9.md §10 and checks that a refused
// file is left byte-identical.
func TestOpenDecisionTable(t *testing.T) {
	good := closedFile(t)
	dirty := dirtyFile(t)
	flp := int(be.Uint32(good))
	badFL := patch(good, flp+4, statusActive, false)
	ro, rw := true, false
	cases := []struct {
		name   string
		data   []byte
		opts   Options
		want   []error // every one must match; nil = opens
		noFile bool
	}{
		{"closed rw", good, Options{ReadOnly: rw}, nil, false},
		{"closed read", good, Options{ReadOnly: ro}, nil, false},
		{"closed rw auto", good, Options{Repair: AutoRepair}, nil, false},
		{"closed read auto", good, Options{Repair: AutoRepair, ReadOnly: ro}, nil, false},
		{"closed rw force", good, Options{Repair: ForceRepair}, nil, false},
		{"closed read force", good, Options{Repair: ForceRepair, ReadOnly: ro}, []error{ErrReadOnly}, false},
		{"not closed rw norepair", dirty, Options{}, []error{ErrNeedsRepair}, false},
		{"not closed read norepair", dirty, Options{ReadOnly: ro}, []error{ErrNeedsRepair}, false},
		{"not closed read auto", dirty, Options{ReadOnly: ro, Repair: AutoRepair}, []error{ErrNotClosed}, false},
		{"not closed read force", dirty, Options{ReadOnly: ro, Repair: ForceRepair}, []error{ErrNotClosed}, false},
		{"not closed rw auto", dirty, Options{Repair: AutoRepair}, nil, false},
		{"not closed rw force", dirty, Options{Repair: ForceRepair}, nil, false},
		{"bad trailer", append(bytes.Clone(good), 0), Options{}, []error{ErrNeedsRepair}, false},
		{"bad free lists", badFL, Options{}, []error{ErrNeedsRepair, ErrCorrupt}, false},
		{"bad free lists read", badFL, Options{ReadOnly: ro}, []error{ErrNeedsRepair, ErrCorrupt}, false},
		{"bad free lists auto", badFL, Options{Repair: AutoRepair}, nil, false},
		{"cookie", patch(good, offCookie, 0x00ABCDEE, false), Options{}, []error{ErrNotDETS}, false},
		{"md5", patch(good, offNoObjects, 7, false), Options{}, []error{ErrNotDETS}, false},
		{"closed flag 2", patch(good, offClosed, 2, false), Options{Repair: AutoRepair}, []error{ErrNotDETS}, false},
		{"100 A", bytes.Repeat([]byte("A"), 100), Options{}, []error{ErrNotDETS}, false},
		{"empty", nil, Options{}, []error{ErrNotDETS}, false},
		{"header only", good[:200], Options{}, []error{ErrNotDETS}, false},
		{"version 8", patch(good, offVersion, 8, false), Options{}, []error{ErrUnsupportedVersion}, false},
		{"version 10", patch(good, offVersion, 10, false), Options{}, []error{ErrNotDETS}, false},
		{"type code", patch(good, offType, 7, false), Options{}, []error{ErrBadTypeCode}, false},
		{"hash code", patch(good, offHashMethod, 5, true), Options{}, []error{ErrBadHashMethod}, false},
		{"legacy phash", patch(good, offHashMethod, 0, true), Options{}, []error{ErrUnsupportedHash}, false},
		{"kind mismatch", good, Options{Kind: Set}, []error{ErrKindMismatch}, false},
		{"keypos mismatch", good, Options{KeyPos: 1}, []error{ErrKeyPosMismatch}, false},
		{"needs repair before mismatch", dirty, Options{Kind: Set}, []error{ErrNeedsRepair}, false},
		{"bad invariants", patch(good, offN, 256, true), Options{}, []error{ErrCorrupt}, false},
		{"missing read", nil, Options{ReadOnly: ro}, []error{fs.ErrNotExist}, true},
		{"otp9 file, format native", good, Options{Format: Native}, []error{ErrFormatMismatch}, false},
		{"dirty otp9 file, format native", dirty, Options{Format: Native, Repair: AutoRepair}, []error{ErrFormatMismatch}, false},
		{"min above max", good, Options{MinSlots: 4096, MaxSlots: 1024}, []error{ErrInvalidOptions}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.dets")
			if !c.noFile {
				must(t, os.WriteFile(path, c.data, 0o644))
			}
			tab, err := Open(path, c.opts)
			if c.want == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				mustCheck(t, tab)
				must(t, tab.Close())
				return
			}
			if err == nil {
				tab.Close()
				t.Fatal("Open succeeded")
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Fatalf("Open error %q does not match %q", err, w)
				}
			}
			if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Errorf("multi-line error %q", err)
			}
			if c.noFile {
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Fatal("a read-only open created the file")
				}
				return
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, c.data) {
				t.Fatal("a refused file was modified")
			}
		})
	}
}

// TestReadingNeverWrites: opening a closed file, reading it and closing it
// leaves it byte-identical (OTP dirty_mark), read-only or not.
// TestReadingNeverWrites is otp9-only until native traversal (step 5 of
// docs/format-native.md §16); TestNativeOpenClean covers native opens.
func TestReadingNeverWrites(t *testing.T) {
	path := tmpFile(t, "r.dets")
	must(t, os.WriteFile(path, closedFile(t), 0o644))
	before := fileHash(t, path)
	for _, ro := range []bool{false, true} {
		tab, err := Open(path, Options{ReadOnly: ro})
		must(t, err)
		wantLookup(t, tab, etf.Int(3), tup(etf.Atom("v"), etf.Int(3), bin("x")))
		if _, err := tab.Member(etf.Int(99)); err != nil {
			t.Fatal(err)
		}
		tableObjects(t, tab)
		mustCheck(t, tab)
		must(t, tab.Sync())
		must(t, tab.Close())
		if fileHash(t, path) != before {
			t.Fatalf("read-only=%v: reading changed the file", ro)
		}
	}
	tab := openT(t, path, Options{ReadOnly: true})
	if err := tab.Insert(tup(etf.Int(1), etf.Int(1))); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("insert on read-only table: %v", err)
	}
}

// TestDirtyLifecycle: the first change clears the closed flag on disk and
// drops the free lists; Sync makes the file closed again. A second handle
// of this process is refused (ErrAlreadyOpen), so the file is looked at
// through copies, as another process would see it.
// On native the "closed flag" is the log's first record
// (docs/format-native.md §11.1).
func TestDirtyLifecycle(t *testing.T) {
	forEachFormat(t, testDirtyLifecycle)
}

func testDirtyLifecycle(t *testing.T, format Format) {
	path := tmpFile(t, "l.dets")
	must(t, os.WriteFile(path, closedFileOf(t, format), 0o644))
	tab := openT(t, path, Options{})
	snapshot := func() string {
		cp := filepath.Join(t.TempDir(), "copy.dets")
		must(t, os.WriteFile(cp, readFileT(t, path), 0o644))
		return cp
	}
	must(t, tab.Insert(tup(etf.Atom("v"), etf.Int(100))))
	if _, err := Open(snapshot(), Options{ReadOnly: true}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("open of a table being written: %v", err)
	}
	must(t, tab.Sync())
	other, err := Open(snapshot(), Options{ReadOnly: true})
	must(t, err)
	wantLookup(t, other, etf.Int(100), tup(etf.Atom("v"), etf.Int(100)))
	must(t, other.Close())
	must(t, tab.Delete(etf.Int(100)))
	if _, err := Open(snapshot(), Options{ReadOnly: true}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("open after a delete: %v", err)
	}
	info, _ := tab.Info()
	if info.Clean {
		t.Fatal("Info says clean after a write")
	}
}

func TestCreateOptions(t *testing.T) {
	forEachFormat(t, testCreateOptions)
}

func testCreateOptions(t *testing.T, format Format) {
	tab := openT(t, tmpFile(t, "o.dets"), Options{MinSlots: 1000, MaxSlots: 3000, Format: format})
	info, _ := tab.Info()
	if info.NoSlots != (Slots{1024, 1024, 4096}) {
		t.Fatalf("slots %+v, want {1024 1024 4096} as OTP", info.NoSlots)
	}
	for i := range 10000 {
		must(t, tab.Insert(tup(etf.Int(i))))
	}
	info, _ = tab.Info()
	if info.NoSlots.Next != 4096 { // both formats stop at MaxSlots
		t.Fatalf("grew to %d, want 4096 (the max)", info.NoSlots.Next)
	}
	tab2 := openT(t, tmpFile(t, "o2.dets"), Options{MinSlots: 300, Format: format})
	if info, _ := tab2.Info(); info.NoSlots.Min != 512 {
		t.Fatalf("min 300 gave %d, want 512", info.NoSlots.Min)
	}
	if format == Native {
		tab3 := openT(t, tmpFile(t, "o3.dets"), Options{Format: format})
		want := Slots{512, 512, int(min(uint64(1)<<32, math.MaxInt))} // a 32-bit int clamps the ceiling
		if info, _ := tab3.Info(); info.NoSlots != want {
			t.Fatalf("native default slots %+v, want {512 512 2^32}", info.NoSlots)
		}
	}
}

// TestRecountMissingCounters opens a file whose header has no size-class
// counters (a 9(a) file: counters and MD5 all zero) and checks that the
// engine counts the buckets, so Check passes and the saved header is exact.
func TestRecountMissingCounters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "9a.dets")
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := tab.Insert(etf.Tuple{etf.Int(i), etf.Binary(make([]byte, i*7))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), b[offCounters:offMD5]...)
	clear(b[offCounters:offFlBase]) // counters and MD5
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tab = openT(t, path, Options{})
	if err := tab.Check(); err != nil {
		t.Fatalf("Check after recount: %v", err)
	}
	if err := tab.Insert(etf.Tuple{etf.Int(1000), etf.Binary("x")}); err != nil {
		t.Fatal(err)
	}
	if err := tab.Delete(etf.Int(1000)); err != nil {
		t.Fatal(err)
	}
	if err := tab.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[offCounters:offMD5], want) {
		t.Fatal("the saved counters differ from the original file's")
	}
}
