package kinds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil/tabletest"
)

func openTable(t testing.TB, kind dets.Kind, keyPos int) *dets.Table {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.dets")
	return tabletest.OpenT(t, path, dets.Options{Kind: kind, KeyPos: keyPos})
}

func TestSetOperations(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, Int)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup("a"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrDecode) {
		t.Fatalf("Lookup(absent) = %v, want ErrNotFound", err)
	}
	must(t, s.Insert("a", 1))
	must(t, s.Insert("a", 2)) // last write wins
	if v, err := s.Lookup("a"); err != nil || v != 2 {
		t.Fatalf("Lookup(a) = %v, %v; want 2", v, err)
	}
	// The stored object is exactly {<<"a">>, 2}.
	objs, err := tab.Lookup(etf.Binary("a"))
	if err != nil || len(objs) != 1 || !etf.Equal(objs[0], etf.Tuple{etf.Binary("a"), etf.Int(2)}) {
		t.Fatalf("raw object %v, %v", objs, err)
	}
	if ok, err := s.InsertNew("a", 9); err != nil || ok {
		t.Fatalf("InsertNew(existing) = %v, %v", ok, err)
	}
	if ok, err := s.InsertNew("b", 9); err != nil || !ok {
		t.Fatalf("InsertNew(new) = %v, %v", ok, err)
	}
	if ok, err := s.Member("b"); err != nil || !ok {
		t.Fatalf("Member(b) = %v, %v", ok, err)
	}
	if ok, err := s.Member("zz"); err != nil || ok {
		t.Fatalf("Member(zz) = %v, %v", ok, err)
	}
	if n, err := s.Size(); err != nil || n != 2 {
		t.Fatalf("Size = %d, %v; want 2", n, err)
	}
	must(t, s.DeleteObject("b", 8)) // wrong value: kept
	if ok, _ := s.Member("b"); !ok {
		t.Fatal("DeleteObject with another value removed the key")
	}
	must(t, s.DeleteObject("b", 9))
	if ok, _ := s.Member("b"); ok {
		t.Fatal("DeleteObject did not remove {b, 9}")
	}
	must(t, s.Insert("c", 10))
	if v, err := s.UpdateCounter("c", 5); err != nil || v != 15 {
		t.Fatalf("UpdateCounter = %d, %v; want 15", v, err)
	}
	if v, err := s.UpdateCounter("c", -20); err != nil || v != -5 {
		t.Fatalf("UpdateCounter = %d, %v; want -5", v, err)
	}
	if v, _ := s.Lookup("c"); v != -5 {
		t.Fatalf("after UpdateCounter, Lookup = %d", v)
	}
	if _, err := s.UpdateCounter("missing", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UpdateCounter(missing) = %v, want ErrNotFound", err)
	}
	must(t, s.Delete("a"))
	must(t, s.Delete("never")) // absent: not an error

	got := map[string]int64{}
	var iterErr error
	for k, v := range s.All(&iterErr) {
		got[k] = v
	}
	if iterErr != nil || len(got) != 1 || got["c"] != -5 {
		t.Fatalf("All = %v, %v", got, iterErr)
	}
}

func TestUpdateCounterNonInteger(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, String)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Insert("k", "v"))
	if _, err := s.UpdateCounter("k", 1); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("UpdateCounter on a binary value = %v, want an error other than ErrNotFound", err)
	}
}

func TestBagOperations(t *testing.T) {
	tab := openTable(t, dets.Bag, 1)
	b, err := NewBag(tab, String, Float)
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := b.Lookup("k"); err != nil || len(vs) != 0 {
		t.Fatalf("Lookup(absent) = %v, %v", vs, err)
	}
	must(t, b.Insert("k", 1.5))
	must(t, b.Insert("k", 2.5))
	must(t, b.Insert("k", 1.5)) // already stored: no change
	must(t, b.Insert("j", 0))
	vs, err := b.Lookup("k")
	slices.Sort(vs)
	if err != nil || !slices.Equal(vs, []float64{1.5, 2.5}) {
		t.Fatalf("Lookup(k) = %v, %v", vs, err)
	}
	if ok, err := b.InsertNew("k", 9); err != nil || ok {
		t.Fatalf("InsertNew(existing key) = %v, %v", ok, err)
	}
	if n, err := b.Size(); err != nil || n != 3 {
		t.Fatalf("Size = %d, %v; want 3", n, err)
	}
	must(t, b.DeleteObject("k", 1.5))
	if vs, _ := b.Lookup("k"); !slices.Equal(vs, []float64{2.5}) {
		t.Fatalf("after DeleteObject, Lookup = %v", vs)
	}
	must(t, b.Delete("k"))
	if ok, _ := b.Member("k"); ok {
		t.Fatal("Delete kept the key")
	}
	var iterErr error
	if n := count(b.All(&iterErr)); n != 1 || iterErr != nil {
		t.Fatalf("All yielded %d, %v", n, iterErr)
	}
}

func TestDuplicateBagOperations(t *testing.T) {
	tab := openTable(t, dets.DuplicateBag, 1)
	d, err := NewDuplicateBag(tab, String, String)
	if err != nil {
		t.Fatal(err)
	}
	must(t, d.Insert("k", "x"))
	must(t, d.Insert("k", "x"))
	must(t, d.Insert("k", "y"))
	vs, err := d.Lookup("k")
	slices.Sort(vs)
	if err != nil || !slices.Equal(vs, []string{"x", "x", "y"}) {
		t.Fatalf("Lookup = %v, %v", vs, err)
	}
	if n, _ := d.Size(); n != 3 {
		t.Fatalf("Size = %d, want 3", n)
	}
	var iterErr error
	if n := count(d.All(&iterErr)); n != 3 || iterErr != nil {
		t.Fatalf("All yielded %d, %v", n, iterErr)
	}
	must(t, d.DeleteObject("k", "x")) // removes every copy
	if vs, _ := d.Lookup("k"); !slices.Equal(vs, []string{"y"}) {
		t.Fatalf("after DeleteObject, Lookup = %v", vs)
	}
	if ok, err := d.InsertNew("k", "z"); err != nil || ok {
		t.Fatalf("InsertNew(existing key) = %v, %v", ok, err)
	}
	if ok, err := d.InsertNew("n", "z"); err != nil || !ok {
		t.Fatalf("InsertNew(new key) = %v, %v", ok, err)
	}
}

func TestHandleTableMismatch(t *testing.T) {
	bag := openTable(t, dets.Bag, 1)
	if _, err := NewSet(bag, String, String); !errors.Is(err, ErrTableMismatch) {
		t.Fatalf("NewSet(bag) = %v", err)
	}
	if _, err := NewDuplicateBag(bag, String, String); !errors.Is(err, ErrTableMismatch) {
		t.Fatalf("NewDuplicateBag(bag) = %v", err)
	}
	set2 := openTable(t, dets.Set, 2)
	if _, err := NewSet(set2, String, String); !errors.Is(err, ErrTableMismatch) {
		t.Fatalf("NewSet(keypos 2) = %v", err)
	}
	set := openTable(t, dets.Set, 1)
	if _, err := NewSet(set, Codec[string]{}, String); !errors.Is(err, ErrTableMismatch) {
		t.Fatalf("NewSet(zero codec) = %v", err)
	}
	if _, err := NewBag[string, string](nil, String, String); !errors.Is(err, ErrTableMismatch) {
		t.Fatalf("NewBag(nil) = %v", err)
	}
}

// TestWrongShapeInFile: objects that other programs wrote in another shape
// give decode errors, never panics or zero values.
func TestWrongShapeInFile(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	must(t, tab.Insert(
		etf.Tuple{etf.Binary("int"), etf.Int(42)},
		etf.Tuple{etf.Binary("wide"), etf.Int(1), etf.Int(2)},
		etf.Tuple{etf.Atom("atomkey"), etf.Binary("v")},
	))
	s, err := NewSet(tab, String, String)
	if err != nil {
		t.Fatal(err)
	}
	var de *DecodeError
	if _, err := s.Lookup("int"); !errors.As(err, &de) || de.Path != "value" || de.Got != "integer 42" || errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup(int) = %v", err)
	}
	if _, err := s.Lookup("wide"); !errors.As(err, &de) || de.Path != "object" || de.Got != "tuple of arity 3" {
		t.Fatalf("Lookup(wide) = %v", err)
	}
	var iterErr error
	count(s.All(&iterErr))
	if !errors.Is(iterErr, ErrDecode) {
		t.Fatalf("All over bad objects: %v", iterErr)
	}
}

func TestLookupAfterCloseIsNotNotFound(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, String)
	if err != nil {
		t.Fatal(err)
	}
	must(t, tab.Close())
	if _, err := s.Lookup("k"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup on a closed table = %v, want a storage error", err)
	}
}

func TestEncodeErrorReachesCaller(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, Atom, Float)
	if err != nil {
		t.Fatal(err)
	}
	var ee *EncodeError
	if err := s.Insert("k", 0*nan()); !errors.As(err, &ee) || ee.Path != "value" {
		t.Fatalf("Insert(NaN) = %v", err)
	}
	long := string(make([]byte, 300))
	if _, err := s.Lookup(long); !errors.As(err, &ee) || ee.Path != "key" {
		t.Fatalf("Lookup(long atom) = %v", err)
	}
}

func nan() float64 {
	var z float64
	return z / z
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func count[K, V any](seq func(func(K, V) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// TestBorrowedTermsStayIntact: the handles pass the engine terms that share
// memory with Go strings, and return strings that share memory with terms
// the engine returned. Neither side may change afterwards.
func TestBorrowedTermsStayIntact(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, String)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = string([]byte{'k', byte(i), byte(i >> 8)})
		must(t, s.Insert(keys[i], keys[i]+"-value"))
	}
	var got []string
	for _, k := range keys {
		v, err := s.Lookup(k)
		must(t, err)
		got = append(got, v)
	}
	// More traffic through the engine's reused buffers.
	for i, k := range keys {
		must(t, s.Insert(k, "other"))
		if i%2 == 0 {
			must(t, s.Delete(k))
		}
	}
	for i, k := range keys {
		if got[i] != k+"-value" {
			t.Fatalf("value %d changed to %q", i, got[i])
		}
		if k != string([]byte{'k', byte(i), byte(i >> 8)}) {
			t.Fatalf("key %d changed", i)
		}
	}
}

// TestTypedLayerAllocs: the typed calls add at most one allocation (boxing
// the key term, or the typed iterator) over the raw engine with a prebuilt
// key.
func TestTypedLayerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not stable under the race detector (sync.Pool drops items)")
	}
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, String)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Insert("package", "metadata"))
	rawKey := etf.Term(etf.Binary("package"))
	rawVal := etf.Binary("metadata")
	pairs := []struct {
		name       string
		raw, typed func()
	}{
		{"Lookup", func() { tab.Lookup(rawKey) }, func() { s.Lookup("package") }},
		{"Member", func() { tab.Member(rawKey) }, func() { s.Member("package") }},
		{"Insert", func() { tab.Insert(etf.Tuple{rawKey, rawVal}) }, func() { s.Insert("package", "metadata") }},
		{"Rows", func() {
			for range tab.All() {
			}
		}, func() {
			for range s.Rows() {
			}
		}},
		{"All", func() {
			for range tab.All() {
			}
		}, func() {
			var err error
			for range s.All(&err) {
			}
		}},
	}
	for _, p := range pairs {
		raw := testing.AllocsPerRun(200, p.raw)
		typed := testing.AllocsPerRun(200, p.typed)
		t.Logf("%s: raw %.1f allocs, typed %.1f", p.name, raw, typed)
		if typed > raw+1 {
			t.Errorf("%s: typed %.1f allocs, raw %.1f: more than one extra", p.name, typed, raw)
		}
	}
}

// TestAdoptedStringsStayIntact covers the half of TestBorrowedTermsStayIntact
// that String, String on the direct path never reaches: values stored as
// BIT_BINARY_EXT with a whole last byte (a binary all the same, as some
// writers store it) send Lookup to the term path, whose strings share
// memory with the terms the engine returned (String.adopt). Later lookups
// of other values through the same buffers must not change them.
func TestAdoptedStringsStayIntact(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, String)
	must(t, err)
	put := func(k, v string) {
		obj := []byte{131, 104, 2, 109} // {Binary,
		obj = binary.BigEndian.AppendUint32(obj, uint32(len(k)))
		obj = append(obj, k...)
		obj = append(obj, 77) // BIT_BINARY_EXT
		obj = binary.BigEndian.AppendUint32(obj, uint32(len(v)))
		obj = append(append(obj, 8), v...)
		must(t, tab.InsertRaw(obj))
	}
	var got []string
	for i := range 200 {
		put(fmt.Sprint("k", i), fmt.Sprint("value-", i))
		v, err := s.Lookup(fmt.Sprint("k", i))
		must(t, err)
		got = append(got, v)
	}
	for i := range 200 {
		put(fmt.Sprint("k", i), "XXXXXXXXXXXXXXXXXXXXXX")
		if v, err := s.Lookup(fmt.Sprint("k", i)); err != nil || v != "XXXXXXXXXXXXXXXXXXXXXX" {
			t.Fatalf("lookup %d: %q, %v", i, v, err)
		}
	}
	for i, v := range got {
		if v != fmt.Sprint("value-", i) {
			t.Fatalf("value %d changed to %q", i, v)
		}
	}
}
