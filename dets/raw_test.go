package dets

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/godets/godets/etf"
)

func init() {
	key := etf.Int(1)
	enc, _ := etf.Encode(key)
	obj, _ := etf.Encode(tup(key))
	tableCalls["LookupRaw"] = func(t *Table) []error {
		return []error{t.LookupRaw(enc, func([]byte) error { return errors.New("fn called") })}
	}
	tableCalls["RawAll"] = func(t *Table) []error { return collect(t.RawAll()) }
	tableCalls["InsertRaw"] = func(t *Table) []error { return []error{t.InsertRaw(obj)} }
}

// rawTerm is a random key or value: the shapes Raw handles without
// decoding (integers, atoms, binaries, tuples of those) and some it does
// not (floats, bignums, lists), which take the decoding fallbacks.
func rawTerm(r *rand.Rand, depth int) etf.Term {
	switch r.IntN(9) {
	case 0:
		return etf.Int(r.IntN(300))
	case 1:
		return etf.Int(r.Int64N(1<<40) - 1<<39)
	case 2:
		return etf.Atom(fmt.Sprint("a", r.IntN(20)))
	case 3:
		return etf.Float(float64(r.IntN(50)) / 4)
	case 4:
		return etf.NewUint(1<<63 + uint64(r.IntN(5)))
	case 5:
		if depth < 2 {
			return tup(rawTerm(r, depth+1), rawTerm(r, depth+1))
		}
	case 6:
		if depth < 2 {
			return etf.List{rawTerm(r, depth+1)}
		}
	}
	return etf.Binary(fmt.Sprint("b", r.IntN(40)))
}

func encodeT(t testing.TB, x etf.Term) []byte {
	t.Helper()
	b, err := etf.Encode(x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawObjects collects a raw traversal, decoded.
func rawObjects(t testing.TB, tab *Table) ([]etf.Term, error) {
	t.Helper()
	var out []etf.Term
	for obj, err := range tab.RawAll() {
		if err != nil {
			return out, err
		}
		x, derr := etf.Decode(obj)
		if derr != nil {
			t.Fatalf("RawAll yielded bytes that do not decode: %v", derr)
		}
		out = append(out, x)
	}
	return out, nil
}

func termObjects(tab *Table) ([]etf.Term, error) {
	var out []etf.Term
	for o, err := range tab.All() {
		if err != nil {
			return out, err
		}
		out = append(out, o)
	}
	return out, nil
}

// TestRawMatchesTerms: for every kind, a table built with InsertRaw from
// etf.Encode's bytes is byte-identical to one built with Insert, RawAll
// yields what All yields in the same order, and LookupRaw finds what
// Lookup finds, for present and absent keys of many shapes. Seeded: -seed.
func TestRawMatchesTerms(t *testing.T) { forEachFormat(t, testRawMatchesTerms) }

func testRawMatchesTerms(t *testing.T, format Format) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(kind)))
			opts := withTuning(Options{Format: format, Kind: kind}, func(tn *tuning) { tn.scanWindowKeys = 40 })
			termPath, rawPath := tmpFile(t, "term.dets"), tmpFile(t, "raw.dets")
			byTerm, err := Open(termPath, opts)
			must(t, err)
			byRaw, err := Open(rawPath, opts)
			must(t, err)
			var keys []etf.Term
			for range 3000 {
				k := rawTerm(r, 0)
				keys = append(keys, k)
				o := tup(k, rawTerm(r, 0))
				must(t, byTerm.Insert(o))
				must(t, byRaw.InsertRaw(encodeT(t, o)))
				if r.IntN(10) == 0 {
					must(t, byTerm.Delete(k))
					must(t, byRaw.Delete(k))
				}
			}
			must(t, byTerm.Close())
			must(t, byRaw.Close())
			if format == Native { // a native file has a random fileID: compare the content
				a, b := openT(t, termPath, opts), openT(t, rawPath, opts)
				if d := diffTerms(sortTerms(scanAll(t, a)), sortTerms(scanAll(t, b))); d != "" {
					t.Fatalf("InsertRaw stored other objects than Insert: %s", d)
				}
				must(t, a.Close())
				must(t, b.Close())
			} else if fileHash(t, termPath) != fileHash(t, rawPath) {
				t.Fatal("InsertRaw wrote a file that differs from Insert's")
			}

			tab := openT(t, rawPath, opts)
			// Read with pread first, then through the map.
			tab.mu.Lock()
			tab.noMap = true
			tab.mu.Unlock()
			for _, mapped := range []bool{false, true} {
				if mapped {
					tab.mu.Lock()
					tab.mapFile()
					tab.mu.Unlock()
					if tab.mm == nil {
						t.Fatal("the table could not be mapped")
					}
				}
				want, err := termObjects(tab)
				must(t, err)
				got, err := rawObjects(t, tab)
				must(t, err)
				if !sameTerms(got, want) {
					t.Fatalf("mapped %v: RawAll gave %d objects, All %d, or another order", mapped, len(got), len(want))
				}
			}
			for i := range 300 {
				k := keys[r.IntN(len(keys))]
				if i%3 == 0 {
					k = rawTerm(r, 0) // often absent
				}
				want, err := tab.Lookup(k)
				must(t, err)
				var got []etf.Term
				must(t, tab.LookupRaw(encodeT(t, k), func(obj []byte) error {
					x, err := etf.Decode(obj)
					got = append(got, x)
					return err
				}))
				if !sameTerms(got, want) {
					t.Fatalf("LookupRaw(%v) = %v, Lookup %v", k, got, want)
				}
			}
		})
	}
}

// TestRawDamaged: a damaged object gives RawAll and LookupRaw the error
// that All and Lookup give, and RawAll yields no object of its bucket.
func TestRawDamaged(t *testing.T) {
	tab, err := Open(damagedFile(t, 77), Options{ReadOnly: true})
	must(t, err)
	t.Cleanup(func() { tab.Close() })
	want, werr := termObjects(tab)
	got, gerr := rawObjects(t, tab)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("RawAll: %v, All: %v; want the same *CorruptionError", gerr, werr)
	}
	var ce *CorruptionError
	if !errors.As(gerr, &ce) || !errors.Is(gerr, ErrCorrupt) {
		t.Fatalf("RawAll: %v is not a *CorruptionError", gerr)
	}
	if !sameTerms(got, want) {
		t.Fatalf("RawAll yielded %d objects before the error, All %d", len(got), len(want))
	}
	_, werr = tab.Lookup(etf.Int(77))
	gerr = tab.LookupRaw(encodeT(t, etf.Int(77)), func([]byte) error {
		t.Fatal("fn called with a damaged object")
		return nil
	})
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("LookupRaw: %v, Lookup: %v; want the same error", gerr, werr)
	}
	// A read error belongs to its call: the rest still reads.
	n := 0
	must(t, tab.LookupRaw(encodeT(t, etf.Int(78)), func(obj []byte) error {
		x, err := etf.Decode(obj)
		if err != nil || !etf.Equal(x, reObj(78)) {
			t.Errorf("LookupRaw(78) gave %v, %v", x, err)
		}
		n++
		return nil
	}))
	if n != 1 {
		t.Fatalf("LookupRaw(78) called fn %d times", n)
	}
}

// TestRawBadInput: key and object bytes that are no term encoding, or an
// object that is not a tuple holding the key, are refused with typed
// errors, and a file refused writes stays byte-identical.
func TestRawBadInput(t *testing.T) { forEachFormat(t, testRawBadInput) }

func testRawBadInput(t *testing.T, format Format) {
	path := tmpFile(t, "bad.dets")
	tab, err := Open(path, Options{Format: format, KeyPos: 2})
	must(t, err)
	must(t, tab.Insert(tup(etf.Int(1), etf.Int(2))))
	must(t, tab.Close())
	before := fileHash(t, path)
	tab = openT(t, path, Options{Format: format})
	for _, key := range [][]byte{nil, {131}, {131, 97}, {1, 2, 3}, append(encodeT(t, etf.Int(2)), 0)} {
		err := tab.LookupRaw(key, func([]byte) error { return nil })
		if !errors.Is(err, ErrBadArgument) {
			t.Errorf("LookupRaw(%v): %v, want ErrBadArgument", key, err)
		}
	}
	for _, obj := range [][]byte{nil, {131, 104, 2, 97}, encodeT(t, etf.Int(1)), encodeT(t, tup(etf.Int(1)))} {
		err := tab.InsertRaw(obj)
		if !errors.Is(err, ErrBadObject) {
			t.Errorf("InsertRaw(%v): %v, want ErrBadObject", obj, err)
		}
	}
	fnErr := errors.New("stop")
	if err := tab.LookupRaw(encodeT(t, etf.Int(2)), func([]byte) error { return fnErr }); err != fnErr {
		t.Errorf("LookupRaw returned %v, not fn's error", err)
	}
	must(t, tab.Close())
	if fileHash(t, path) != before {
		t.Fatal("refused raw calls changed the file")
	}
}

// TestRawAllBorrowed: the loop body may use the table while it holds the
// borrowed bytes of the step, and may break.
func TestRawAllBorrowed(t *testing.T) { forEachFormat(t, testRawAllBorrowed) }

func testRawAllBorrowed(t *testing.T, format Format) {
	tab := openT(t, tmpFile(t, "borrow.dets"), Options{Format: format})
	for i := range 2000 {
		must(t, tab.Insert(tup(etf.Int(i), bin(fmt.Sprint("value ", i)))))
	}
	seen := 0
	for obj, err := range tab.RawAll() {
		must(t, err)
		x, err := etf.Decode(obj)
		must(t, err)
		k := x.(etf.Tuple)[0].(etf.Int)
		must(t, tab.Insert(tup(k+5000, bin("new")))) // may or may not be seen
		must(t, tab.LookupRaw(encodeT(t, k), func([]byte) error { return nil }))
		if y, err := etf.Decode(obj); err != nil || !etf.Equal(x, y) {
			t.Fatalf("the step's bytes changed while the body used the table: %v", err)
		}
		if seen++; seen == 500 {
			break
		}
	}
	if seen != 500 {
		t.Fatalf("saw %d objects before the break, want 500", seen)
	}
}

// TestRawAllocs: a raw traversal allocates nothing per object, LookupRaw
// nothing at all, and InsertRaw replacing an object nothing beyond what
// Insert's scratch may (see TestHotPathAllocs).
func TestRawAllocs(t *testing.T) { forEachFormat(t, testRawAllocs) }

func testRawAllocs(t *testing.T, format Format) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	tab := openT(t, tmpFile(t, "allocs.dets"), Options{Format: format})
	for i := range 1000 {
		must(t, tab.Insert(benchObj(i)))
	}
	key := encodeT(t, benchKey(500))
	obj := encodeT(t, benchObj(500))
	var size int
	sum := func(b []byte) error { size += len(b); return nil }
	if n := testing.AllocsPerRun(200, func() { must(t, tab.LookupRaw(key, sum)) }); n > 0 {
		t.Errorf("LookupRaw: %v allocations, want 0", n)
	}
	// Native decodes the object to store it canonically (the key hash
	// covers the canonical form): the term is what it allocates.
	if n := testing.AllocsPerRun(200, func() { must(t, tab.InsertRaw(obj)) }); n > 1 && (format != Native || n > 3) {
		t.Errorf("InsertRaw (replace): %v allocations, want <= 1 (native: 3)", n)
	}
	total := 0
	n := testing.AllocsPerRun(5, func() {
		total = 0
		for _, err := range tab.RawAll() {
			must(t, err)
			total++
		}
	})
	t.Logf("RawAll: %v allocations for about %d objects", n, total)
	if n > 10 {
		t.Errorf("RawAll: %v allocations a traversal of 1000 objects, want <= 10", n)
	}
}
