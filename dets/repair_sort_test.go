package dets

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEntryIndexSpillBuffers: the external sort goes through buffers of
// spillChunk entries, not buffers the size of the index or of a run. With
// whole-run buffers a 3M-object native repair peaked at 164 MiB of heap
// against its index's 32 MiB (40 MiB with chunks). The entries come back
// in (slot, offset) order, each once. Seeded: -seed.
func TestEntryIndexSpillBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 11))
	const n, limit, nslots = 60_000, 10_000, 997
	mfs := newMemFS()
	x := &entryIndex{fs: mfs, path: "t.TMP.sort", limit: limit, ownLengths: true}
	defer x.cleanup()
	var want []repairEntry
	for i := range n {
		e := repairEntry{off: uint64(16 * (i + 1)), n: 8, hash: r.Uint32()}
		want = append(want, e)
		must(t, x.add(e))
		if cap(x.buf) > spillChunk*entrySize {
			t.Fatalf("after %d entries the spill buffer holds %d bytes, more than %d entries", i+1, cap(x.buf), spillChunk)
		}
	}
	slot := func(e repairEntry) uint32 { return e.hash % nslots }
	it, err := x.sorted(slot, nslots, nil)
	must(t, err)
	if cap(x.buf) > spillChunk*entrySize {
		t.Fatalf("after the runs' sort the spill buffer holds %d bytes", cap(x.buf))
	}
	m, ok := it.(*mergeIter)
	if !ok || len(m.runs) != (n+limit-1)/limit {
		t.Fatalf("iterator %T, want a merge of %d runs", it, (n+limit-1)/limit)
	}
	arrays := map[*runIter]*repairEntry{}
	for _, ri := range m.runs {
		arrays[ri] = arrayOf(ri.mem)
	}
	var got []repairEntry
	for {
		e, s, ok, err := it.next()
		must(t, err)
		if !ok {
			break
		}
		if s != slot(e) {
			t.Fatalf("entry %+v with slot %d, want %d", e, s, slot(e))
		}
		got = append(got, e)
	}
	for _, ri := range m.runs {
		if arrayOf(ri.mem) != arrays[ri] {
			t.Fatal("a run's merge buffer was allocated again: each fill must reuse it")
		}
	}
	slices.SortStableFunc(want, func(a, b repairEntry) int {
		if sa, sb := slot(a), slot(b); sa != sb {
			return int(sa) - int(sb)
		}
		return int(a.off) - int(b.off)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("%d entries back, want %d in (slot, offset) order", len(got), len(want))
	}
}

// arrayOf is the address of s's array (nil for none).
func arrayOf(s []repairEntry) *repairEntry {
	if cap(s) == 0 {
		return nil
	}
	return &s[:1][0]
}
