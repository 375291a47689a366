package dets

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/godets/godets/etf"
)

// TestSplitInPlaceIdentical: growth's in-place hashes of one-object
// buckets (singleKeyHashes) change nothing but the speed. The same seeded
// inserts, deletes and overwrites, mostly binary keys in position 1 with
// some integer keys and other shapes between them, give a byte-identical
// file with and without them, the table holds what the model holds, and
// the in-place path did handle buckets. Seeded: -seed.
func TestSplitInPlaceIdentical(t *testing.T) {
	seed := uint64(testSeed(t))
	hits := 0
	build := func(inPlace bool) []byte {
		opts := withTuning(Options{Kind: Set}, func(tn *tuning) {
			tn.noSplitInPlace = !inPlace
			tn.splitInPlace = func(got *splitHashes) {
				for j := range slotsPerSeg {
					if _, ok := got.hash(j); ok {
						hits++
					}
				}
			}
		})
		r := rand.New(rand.NewPCG(seed, 1))
		path := tmpFile(t, "split.dets")
		tab, err := Open(path, opts)
		must(t, err)
		m := newModel(Set)
		var keys []etf.Term
		for i := range 6000 {
			var k etf.Term
			switch r.IntN(10) {
			case 0:
				k = etf.Int(i)
			case 1:
				k = etf.Tuple{etf.Atom("k"), etf.Int(i)}
			default:
				b := make([]byte, 1+r.IntN(40))
				for j := range b {
					b[j] = byte(r.IntN(256))
				}
				b[0] = byte(i) // distinct enough; duplicates only overwrite
				k = etf.Binary(b)
			}
			keys = append(keys, k)
			obj := etf.Tuple{k, etf.Binary(make([]byte, r.IntN(200)))}
			must(t, tab.Insert(obj))
			m.Insert(obj)
			if r.IntN(20) == 0 {
				// Any key may go, a recent one too (seed 6406664193447496485
				// deletes the one just inserted): the model says what stays.
				d := keys[r.IntN(len(keys))]
				must(t, tab.Delete(d))
				m.Delete(d)
			}
		}
		must(t, tab.Close())
		tab, err = Open(path, Options{Kind: Set, ReadOnly: true})
		must(t, err)
		checkAgainstModel(t, tab, m)
		for _, k := range keys {
			objs, err := tab.Lookup(k)
			must(t, err)
			if d := diffTerms(objs, m.Lookup(k)); d != "" {
				t.Fatalf("lookup of %v: %s", k, d)
			}
		}
		must(t, tab.Close())
		b, err := os.ReadFile(path)
		must(t, err)
		return b
	}
	plain := build(false)
	inPlace := build(true)
	if hits == 0 {
		t.Fatal("no bucket was hashed in place: the test does not reach the shortcut")
	}
	if !bytes.Equal(plain, inPlace) {
		t.Fatalf("files differ (%d and %d bytes) with and without in-place split hashes", len(plain), len(inPlace))
	}
	t.Logf("%d buckets hashed in place", hits)
}
