package dets

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
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

// TestSplitOnFullFileStopsGrowth: a split that cannot allocate its buckets
// (an otp9 file at its 2 GiB limit) gives back what it took and leaves the
// table as it was, growth just stops (docs/format-otp9.md), where it used
// to leave the table in error mode, its Close failing and the file needing
// a repair. The full file is simulated by leaving the allocator one free
// segment-sized block, enough for the new segment and nothing else.
func TestSplitOnFullFileStopsGrowth(t *testing.T) {
	path := tmpFile(t, "full.dets")
	tab := openT(t, path, Options{Kind: Set})
	want := map[string]bool{}
	insert := func(i int) error {
		k := bin(string(rune('a'+i%26)) + strings.Repeat("k", i%7) + strconv.Itoa(i))
		err := tab.Insert(tup(k, etf.Int(i)))
		if err == nil {
			want[string(k)] = true
		}
		return err
	}
	i := 0
	for ; tab.h.noKeys+1 <= tab.h.next; i++ {
		must(t, insert(i))
	}
	next := tab.h.next

	// The next insert splits segment 0 into segment 1 (no new part). Leave
	// the allocator a block for the new segment and one for the insert's
	// own bucket; the old bucket it frees is too little for the split.
	seg, err := tab.bud.alloc(segmentSize)
	must(t, err)
	own, err := tab.bud.alloc(256)
	must(t, err)
	saved := tab.bud.free
	for c := range saved {
		saved[c] = slices.Clone(saved[c])
	}
	tab.bud.free = [maxBuddyClass + 1][]uint32{}
	tab.bud.freeBlock(seg, segmentSize)
	tab.bud.freeBlock(own, 256)

	if err := insert(i); err != nil {
		t.Fatalf("insert that could not grow: %v", err)
	}
	i++
	if tab.h.next != next {
		t.Fatalf("slots %d, want %d: the split went ahead", tab.h.next, next)
	}
	if !slices.Contains(tab.bud.free[buddyClass(segmentSize)], uint32(seg)) {
		t.Fatalf("allocator after the failed split: %v; the segment block %d is not free", tab.bud.free, seg)
	}

	// Space comes back: every block the failed split took must be free
	// again (Check finds a gap otherwise), and the next insert grows.
	left := tab.bud.free
	tab.bud.free = saved
	for c, l := range left {
		for _, a := range l {
			tab.bud.release(int64(a), c)
		}
	}
	mustCheck(t, tab) // the header's size-class counters too
	must(t, insert(i))
	if tab.h.next <= next {
		t.Fatalf("slots %d after space came back, want above %d", tab.h.next, next)
	}
	must(t, tab.Close())

	re := openT(t, path, Options{Kind: Set, Repair: NoRepair})
	info, err := re.Info()
	must(t, err)
	if info.Size != len(want) {
		t.Fatalf("reopened table holds %d objects, want %d", info.Size, len(want))
	}
	for k := range want {
		got, err := re.Lookup(etf.Binary(k))
		must(t, err)
		if len(got) != 1 {
			t.Fatalf("key %q: %v", k, got)
		}
	}
}
