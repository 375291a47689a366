package dets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

// bagRef is a bag key group's objects under the rule applied one by one
// with sameObject (what applyInsert did before the index): an identical
// object moves to the end, any other is appended.
func bagRef(objs []object, o object) []object {
	for j := range objs {
		if sameObject(&objs[j], &o) {
			return append(slices.Delete(objs, j, j+1), o)
		}
	}
	return append(objs, o)
}

// TestBagIndexSameAsComparing: inserting into a large bag group through
// its hash index gives exactly the group that comparing every object
// gives, with repeats, equal terms in other encodings (a Latin-1 and a
// UTF-8 atom, INTEGER_EXT for a small integer, -0.0 for 0.0) and objects
// etf hashes only decoded (floats, lists). Seeded: -seed.
func TestBagIndexSameAsComparing(t *testing.T) {
	seed := uint64(testSeed(t))
	r := rand.New(rand.NewPCG(seed, 7))
	enc := func(t etf.Term) []byte {
		b, err := etf.Encode(t)
		if err != nil {
			panic(err)
		}
		return b
	}
	latin1 := func(a string, v int) []byte { // {k, a, v} with a as ATOM_EXT
		b := []byte{131, 104, 3, 100, 0, 1, 'k', 100, 0, byte(len(a))}
		b = append(b, a...)
		return append(b, enc(etf.Int(v))[1:]...)
	}
	wideInt := func(v int32) []byte { // {k, v} with v as INTEGER_EXT
		return []byte{131, 104, 2, 100, 0, 1, 'k', 98, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	}
	var pool [][]byte
	for i := range 60 {
		pool = append(pool,
			enc(etf.Tuple{etf.Atom("k"), etf.Atom(fmt.Sprint("a", i%20)), etf.Int(i % 3)}),
			latin1(fmt.Sprint("a", i%20), i%3),
			enc(etf.Tuple{etf.Atom("k"), etf.Int(i)}),
			wideInt(int32(i)),
			enc(etf.Tuple{etf.Atom("k"), etf.Float(float64(i % 4))}),
			enc(etf.Tuple{etf.Atom("k"), etf.List{etf.Int(i % 5), etf.Float(0.5)}}),
		)
	}
	pool = append(pool, enc(etf.Tuple{etf.Atom("k"), etf.Float(math.Copysign(0, -1))}))
	var gs []group
	var ref []object
	indexed := false
	for range 3000 {
		b := pool[r.IntN(len(pool))]
		o := object{enc: b, kenc: keySpan(b, 1)}
		gs, _, _ = applyInsertSlab(Bag, gs, nil, o, 1, nil)
		ref = bagRef(ref, o)
		if len(gs) != 1 {
			t.Fatalf("seed %d: %d groups for one key", seed, len(gs))
		}
		indexed = indexed || gs[0].index != nil && gs[0].index != searchedOnce && !gs[0].index.off
		if len(gs[0].objs) != len(ref) {
			t.Fatalf("seed %d: %d objects, comparing gives %d", seed, len(gs[0].objs), len(ref))
		}
	}
	for j := range ref {
		if string(gs[0].objs[j].enc) != string(ref[j].enc) {
			t.Fatalf("seed %d: object %d differs from the compared group's", seed, j)
		}
	}
	if !indexed {
		t.Fatal("the group never used its index: the test shows nothing")
	}
	// A group read afresh and given one object (the usual Insert) is
	// searched by comparing, without building an index.
	fresh := []group{{kenc: gs[0].kenc, objs: slices.Clone(gs[0].objs)}}
	fresh, _, _ = applyInsertSlab(Bag, fresh, nil, object{enc: pool[0], kenc: keySpan(pool[0], 1)}, 1, nil)
	if fresh[0].index != nil && fresh[0].index != searchedOnce {
		t.Fatal("one insert into a group built its index")
	}
	t.Logf("%d objects in the group", len(ref))
}

// TestBagManyObjectsOneKey: a bag with many objects under one key builds
// and repairs in about linear time. Each insert compared the new object
// with every object of the group: InitTable of 40,000 objects under one
// key took 64 s and its repair 124 s; with the index both take well under
// a second, so the bound below is far from either.
func TestBagManyObjectsOneKey(t *testing.T) {
	if testing.Short() {
		t.Skip("40,000 objects")
	}
	const n = 40_000
	path := filepath.Join(t.TempDir(), "one.dets")
	tab := mustOpen(t, path, Options{Kind: Bag})
	pad := make([]byte, 200)
	start := time.Now()
	must(t, tab.InitTable(func(yield func(etf.Term, error) bool) {
		for i := range n {
			if !yield(tup(etf.Atom("k"), etf.Int(i), etf.Binary(pad)), nil) {
				return
			}
		}
	}))
	built := time.Since(start)
	must(t, tab.Insert(tup(etf.Atom("k"), etf.Int(7), etf.Binary(pad)))) // a repeat: moved, not added
	must(t, tab.Close())
	start = time.Now()
	st, err := Repair(path, Options{}, nil)
	must(t, err)
	repaired := time.Since(start)
	t.Logf("%d objects under one key: built in %v, repaired in %v", n, built, repaired)
	if st.Objects != n {
		t.Fatalf("repair kept %d objects, want %d", st.Objects, n)
	}
	if built > 15*time.Second || repaired > 15*time.Second {
		t.Fatalf("built in %v, repaired in %v: quadratic in the key's objects", built, repaired)
	}
}
