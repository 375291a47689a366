package dets

import (
	"fmt"
	"iter"
	"testing"

	"github.com/godets/godets/etf"
)

// TestTraversalSeesEachObjectOnce: a loop that inserts while it iterates
// (the commonest way to transform a table) sees each object that was in
// the table before exactly once, with every way of iterating, in both
// formats. The inserts would grow the table several segments; a split
// moves objects from slots the traversal has passed to slots ahead of it,
// where it used to see them a second time. Growth waits for the loop's
// end, as OTP's does while foldl or select fixes the table, and catches up
// at the next insert after it; a loop left by break ends the wait too.
func TestTraversalSeesEachObjectOnce(t *testing.T) {
	t.Parallel()
	ways := []struct {
		name string
		keys func(*Table) iter.Seq2[etf.Term, error]
	}{
		{"All", func(tab *Table) iter.Seq2[etf.Term, error] { return keysOf(tab.All()) }},
		{"SelectSeq", func(tab *Table) iter.Seq2[etf.Term, error] {
			return keysOf(tab.SelectSeq(etf.List{tup(etf.Atom("$1"), etf.List{}, etf.List{etf.Atom("$_")})}))
		}},
		{"RawAll", func(tab *Table) iter.Seq2[etf.Term, error] {
			return func(yield func(etf.Term, error) bool) {
				for enc, err := range tab.RawAll() {
					var obj etf.Term
					if err == nil {
						obj, err = etf.Decode(enc)
					}
					if err != nil {
						yield(nil, err)
						return
					}
					if !yield(obj.(etf.Tuple)[0], nil) {
						return
					}
				}
			}
		}},
		{"Keys", func(tab *Table) iter.Seq2[etf.Term, error] { return tab.Keys() }},
	}
	forEachFormat(t, func(t *testing.T, format Format) {
		for _, way := range ways {
			t.Run(way.name, func(t *testing.T) {
				const before = 1000
				tab := openT(t, tmpFile(t, "fix.dets"), Options{Kind: Set, Format: format})
				for i := range before {
					must(t, tab.Insert(tup(etf.Int(i), bin("old"))))
				}
				slots := tab.h.next
				seen := map[int64]int{}
				added := 0
				for k, err := range way.keys(tab) {
					must(t, err)
					seen[int64(k.(etf.Int))]++
					if int64(k.(etf.Int)) >= before {
						continue
					}
					for range 3 {
						must(t, tab.Insert(tup(etf.Int(before+added), bin("new"))))
						added++
					}
				}
				for i := range int64(before) {
					if seen[i] != 1 {
						t.Fatalf("object %d seen %d times", i, seen[i])
					}
				}
				for k, n := range seen {
					if n != 1 {
						t.Fatalf("inserted object %d seen %d times", k, n)
					}
				}
				if tab.h.next != slots {
					t.Fatalf("the table grew from %d to %d slots during the loop", slots, tab.h.next)
				}
				must(t, tab.Insert(tup(etf.Int(-1), bin("after"))))
				caughtUp(t, tab, slots)

				// A loop left by break ends the wait as well.
				slots = tab.h.next
				for _, err := range way.keys(tab) {
					must(t, err)
					break
				}
				for i := range 4 * int(slots) {
					must(t, tab.Insert(tup(etf.Int(-2-i), bin("later"))))
				}
				caughtUp(t, tab, slots)
			})
		}
	})
}

// caughtUp fails unless tab grew past slots to what its keys ask for.
func caughtUp(t *testing.T, tab *Table, slots uint64) {
	t.Helper()
	if tab.h.next <= slots {
		t.Fatalf("%d slots after the loop, no growth from %d", tab.h.next, slots)
	}
	if keys, goal := tab.h.noKeys, uint64(tab.lay.keysPerSlot)*tab.h.next; keys > goal {
		t.Fatalf("%d keys in %d slots after the loop: growth did not catch up", keys, tab.h.next)
	}
}

// keysOf maps a sequence of objects to their first elements.
func keysOf(objs iter.Seq2[etf.Term, error]) iter.Seq2[etf.Term, error] {
	return func(yield func(etf.Term, error) bool) {
		for o, err := range objs {
			if err != nil {
				yield(nil, err)
				return
			}
			tu, ok := o.(etf.Tuple)
			if !ok || len(tu) == 0 {
				yield(nil, fmt.Errorf("not an object: %v", o))
				return
			}
			if !yield(tu[0], nil) {
				return
			}
		}
	}
}

// TestGrowthCatchUpSpread: the splits a long traversal postponed are
// spread over the writes after it, at most maxGrowSteps segments each,
// instead of all landing on the first; each write makes progress until
// the table is grown.
func TestGrowthCatchUpSpread(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		if format == Native && testing.Short() {
			t.Skip("75,000 objects (native segments hold 1,024 keys)")
		}
		tab := openT(t, tmpFile(t, "spread.dets"), Options{Kind: Set, Format: format})
		must(t, tab.Insert(tup(etf.Int(0), bin("first"))))
		perSeg := uint64(slotsPerSeg)
		if format == Native {
			perSeg = nativeSlotsPerSeg
		}
		// Enough keys, inserted during a traversal, to need more than
		// maxGrowSteps segments afterwards.
		n := int(uint64(tab.lay.keysPerSlot)*perSeg*(maxGrowSteps+8)) + 1000
		for _, err := range tab.Keys() {
			must(t, err)
			objs := make([]etf.Term, 0, n)
			for i := 1; i <= n; i++ {
				objs = append(objs, tup(etf.Int(i), bin("during")))
			}
			must(t, tab.Insert(objs...))
			break
		}
		goal := func() bool { return tab.h.noKeys <= uint64(tab.lay.keysPerSlot)*tab.h.next }
		writes := 0
		for !goal() {
			before := tab.h.next
			must(t, tab.Insert(tup(etf.Int(-writes-1), bin("after"))))
			writes++
			if grew := (tab.h.next - before) / perSeg; grew == 0 || grew > maxGrowSteps {
				t.Fatalf("write %d grew the table by %d segments", writes, grew)
			}
		}
		if writes < 2 {
			t.Fatalf("caught up in %d writes: the bound did not apply", writes)
		}
		t.Logf("caught up in %d writes", writes)
	})
}
