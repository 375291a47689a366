package dets

import (
	"cmp"
	"errors"
	"math/rand"
	"os"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	mdl "github.com/godets/godets/internal/model"
	"github.com/godets/godets/internal/testutil"
)

// modelObjects is every object of m, sorted by CompareExact.
func modelObjects(m *mdl.Model) []etf.Term {
	var out []etf.Term
	for objs := range m.ByKey() {
		out = append(out, objs...)
	}
	slices.SortFunc(out, etf.CompareExact)
	return out
}

// sameObjects fails unless got holds exactly want's objects (sorted by
// CompareExact), counting copies.
func sameObjects(t *testing.T, what string, got, want []etf.Term) {
	t.Helper()
	got = slices.Clone(got)
	slices.SortFunc(got, etf.CompareExact)
	if len(got) != len(want) {
		t.Fatalf("%s: %d objects, want %d", what, len(got), len(want))
	}
	for i := range got {
		if etf.CompareExact(got[i], want[i]) != 0 {
			t.Fatalf("%s: object %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// checkTraversals compares every traversal of tab with the model: All,
// RawAll, Keys, First/Next, a Select and a MatchObject that scan, and
// Stats' counts.
func checkTraversals(t *testing.T, tab *Table, m *mdl.Model) {
	t.Helper()
	want := modelObjects(m)
	var all, raw []etf.Term
	for o, err := range tab.All() {
		must(t, err)
		all = append(all, o)
	}
	sameObjects(t, "All", all, want)
	for enc, err := range tab.RawAll() {
		must(t, err)
		o, err := etf.Decode(enc)
		must(t, err)
		raw = append(raw, o)
	}
	sameObjects(t, "RawAll", raw, want)
	wantKeys := 0
	for objs := range m.ByKey() {
		if len(objs) > 0 {
			wantKeys++
		}
	}
	seen := map[int64]bool{}
	for k, err := range tab.Keys() {
		must(t, err)
		seen[int64(k.(etf.Int))] = true
	}
	n := 0
	k, ok, err := tab.First()
	for ; ok && err == nil; k, ok, err = tab.Next(k) {
		if !seen[int64(k.(etf.Int))] {
			t.Fatalf("First/Next gives %v, which Keys did not", k)
		}
		n++
	}
	must(t, err)
	if len(seen) != wantKeys || n != wantKeys {
		t.Fatalf("Keys: %d, First/Next: %d, want %d", len(seen), n, wantKeys)
	}
	sel, err := tab.Select(etf.List{etf.Tuple{etf.Tuple{etf.Atom("_"), etf.Atom("$1"), etf.Atom("_")},
		etf.List{etf.Tuple{etf.Atom("=:="), etf.Atom("$1"), etf.Int(1)}}, etf.List{etf.Atom("$_")}}})
	must(t, err)
	var wantSel []etf.Term
	for _, o := range want {
		if etf.CompareExact(o.(etf.Tuple)[1], etf.Int(1)) == 0 {
			wantSel = append(wantSel, o)
		}
	}
	sameObjects(t, "Select", sel, wantSel)
	mo, err := tab.MatchObject(etf.Tuple{etf.Atom("_"), etf.Int(1), etf.Atom("_")})
	must(t, err)
	sameObjects(t, "MatchObject", mo, wantSel)
	st, err := tab.Stats()
	must(t, err)
	if st.Objects != int64(len(want)) || st.Keys != int64(wantKeys) {
		t.Fatalf("Stats: %d objects, %d keys; want %d, %d", st.Objects, st.Keys, len(want), wantKeys)
	}
}

// TestNativeTraversal runs every traversal on native tables of each kind
// that grow and shrink in content, against the model, before and after a
// reopen and on a read-only open.
func TestNativeTraversal(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "scan.dets")
			opts := Options{Kind: kind, Format: Native}
			tab := openT(t, path, opts)
			m := newModel(kind)
			const keys = 5000
			for round := range 4 {
				for range 3000 {
					key := rng.Int63n(keys)
					if rng.Intn(4) == 0 && round > 1 {
						must(t, tab.Delete(etf.Int(key)))
						m.Delete(etf.Int(key))
						continue
					}
					size := rng.Intn(30)
					if rng.Intn(300) == 0 {
						size = 3000 + rng.Intn(3000)
					}
					obj := etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(make([]byte, size))}
					must(t, tab.Insert(obj))
					m.Insert(obj)
				}
				checkTraversals(t, tab, m)
				must(t, tab.Close())
				ro := openT(t, path, Options{ReadOnly: true})
				checkTraversals(t, ro, m)
				must(t, ro.Close())
				tab = openT(t, path, opts)
			}
			must(t, tab.Close())
		})
	}
}

// TestNativeTraversalWrites deletes and inserts from the loop body of All:
// every object that stays throughout is seen, once unless the table grew.
func TestNativeTraversalWrites(t *testing.T) {
	path := tmpFile(t, "scanw.dets")
	tab := openT(t, path, Options{Format: Native})
	const n = 3000
	for i := range n {
		must(t, tab.Insert(tup(etf.Int(int64(i)), bin("v"))))
	}
	seen := map[int64]int{}
	for o, err := range tab.All() {
		must(t, err)
		k := int64(o.(etf.Tuple)[0].(etf.Int))
		seen[k]++
		if k%2 == 1 {
			must(t, tab.Delete(etf.Int(k-1))) // maybe seen already, maybe not
		}
		must(t, tab.Insert(tup(etf.Int(n+k), bin("new")))) // keys that may or may not be seen
	}
	for i := int64(1); i < n; i += 2 {
		if seen[i] == 0 {
			t.Fatalf("key %d stayed throughout and was not seen", i)
		}
	}
	must(t, tab.Check())
	must(t, tab.Close())
}

// TestNativeRawCalls: LookupRaw finds a key by any valid encoding of it;
// InsertRaw stores objects as Insert does (canonically, so that the key
// hash finds them), and refuses a bad encoding without writing.
func TestNativeRawCalls(t *testing.T) {
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) { testNativeRawCalls(t, kind) })
	}
}

func testNativeRawCalls(t *testing.T, kind Kind) {
	{
		path := tmpFile(t, "raw.dets")
		tab := openT(t, path, Options{Format: Native, Kind: kind})
		for i := range 2000 {
			obj, err := etf.Encode(tup(etf.Int(int64(i)), bin("v")))
			must(t, err)
			must(t, tab.InsertRaw(obj))
		}
		// 300 as a 4-byte INTEGER_EXT, and as a non-canonical SMALL_BIG_EXT.
		for _, key := range [][]byte{{131, 98, 0, 0, 1, 44}, {131, 110, 2, 0, 44, 1}} {
			var got [][]byte
			must(t, tab.LookupRaw(key, func(obj []byte) error { got = append(got, slices.Clone(obj)); return nil }))
			if len(got) != 1 {
				t.Fatalf("LookupRaw(%v): %d objects", key, len(got))
			}
			o, err := etf.Decode(got[0])
			must(t, err)
			if etf.CompareExact(o, tup(etf.Int(300), bin("v"))) != 0 {
				t.Fatalf("LookupRaw(%v) = %v", key, o)
			}
		}
		// A non-canonical encoding of {301, <<"w">>}: stored canonically.
		nc := []byte{131, 104, 2, 110, 2, 0, 45, 1, 109, 0, 0, 0, 1, 'w'}
		must(t, tab.InsertRaw(nc))
		objs, err := tab.Lookup(etf.Int(301))
		must(t, err)
		if want := map[Kind]int{Set: 1, Bag: 2, DuplicateBag: 2}[kind]; len(objs) != want {
			t.Fatalf("Lookup(301) after InsertRaw: %v", objs)
		}
		if err := tab.InsertRaw([]byte{131, 97}); !errors.Is(err, ErrBadObject) {
			t.Fatalf("InsertRaw of a bad encoding: %v", err)
		}
		must(t, tab.Check())
		must(t, tab.Close())
	}
}

// TestNativeScanDamaged: a flipped byte inside an object record of a
// native bucket fails its checksum, and every traversal, the raw ones
// included, reports a *CorruptionError instead of yielding the bucket.
func TestNativeScanDamaged(t *testing.T) {
	path := tmpFile(t, "damaged.dets")
	tab := openT(t, path, Options{Format: Native})
	for i := range 1000 {
		must(t, tab.Insert(tup(etf.Int(int64(i)), bin("value"))))
	}
	tab.mu.Lock()
	e, err := tab.entry(tab.slotFor(tab.hashKey(etf.Int(7))))
	tab.mu.Unlock()
	must(t, err)
	must(t, tab.Close())
	raw := readFileT(t, path)
	raw[e.ptr+nativeBucketHeader+8+1+4] ^= 0x40 // inside the first object's ETF
	must(t, os.WriteFile(path, raw, 0o644))
	corrupted := func(what string, err error) {
		t.Helper()
		var ce *CorruptionError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
			t.Fatalf("%s over a damaged object: %v, want a *CorruptionError", what, err)
		}
	}
	openDamaged := func() *Table { // not openT: its cleanup Check would fail
		tab, err := Open(path, Options{ReadOnly: true})
		must(t, err)
		t.Cleanup(func() { tab.Close() })
		return tab
	}
	ro := openDamaged()
	var last error
	for _, err := range ro.All() {
		last = err
	}
	corrupted("All", last)
	ro2 := openDamaged()
	last = nil
	for _, err := range ro2.RawAll() {
		last = err
	}
	corrupted("RawAll", last)
	ro3 := openDamaged()
	key, err := etf.Encode(etf.Int(7))
	must(t, err)
	corrupted("LookupRaw", ro3.LookupRaw(key, func([]byte) error { return nil }))
	_, err = ro3.Stats()
	corrupted("Stats", err)
}

// TestNativeScanSortByOffset: the traversal's radix sort orders a window's
// entries by offset as a stable comparison sort does, for short and long
// windows, offsets near 2^60 (the format's limit) as well as small ones,
// offsets shared by two entries (a damaged table) and windows already in
// order. Seeded: -seed or GODETS_SEED.
func TestNativeScanSortByOffset(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var st nativeScanState
	for c := range 200 {
		n := []int{0, 1, 7, 255, 256, 257, 4000, 40000}[c%8]
		span := uint64(1) << (8 + r.Intn(52)) // offsets below span*16
		ents := make([]nativeScanEnt, n)
		for i := range ents {
			off := uint64(r.Int63n(int64(span))) << 4
			if i > 0 && r.Intn(50) == 0 {
				off = ents[r.Intn(i)].e.off() // a shared offset
			}
			ents[i] = nativeScanEnt{slot: uint64(i), e: nativeCellEntry(off, 1+r.Intn(nativeCellClasses))}
		}
		if c%10 == 9 {
			slices.SortFunc(ents, func(a, b nativeScanEnt) int { return cmp.Compare(a.e.off(), b.e.off()) })
		}
		want := slices.Clone(ents)
		slices.SortStableFunc(want, func(a, b nativeScanEnt) int { return cmp.Compare(a.e.off(), b.e.off()) })
		st.ents = append(st.ents[:0], ents...)
		st.sortByOffset()
		if !slices.Equal(st.ents, want) {
			t.Fatalf("case %d: %d entries below %d: the sort differs from a stable comparison sort", c, n, span*16)
		}
	}
}
