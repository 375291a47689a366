package dets

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

// BenchmarkRepairFile repairs copies of the dirty file named by
// GODETS_REPAIR_FILE (for example one the bench module's OTP driver wrote)
// with Repair, then opens the result, and reports the two times (the bench
// module times both together, through Open with AutoRepair).
func BenchmarkRepairFile(b *testing.B) {
	src := os.Getenv("GODETS_REPAIR_FILE")
	if src == "" {
		b.Skip("GODETS_REPAIR_FILE not set")
	}
	dir := b.TempDir()
	work := filepath.Join(dir, "w.dets")
	var repair, open time.Duration
	var each []time.Duration
	runs := 0
	for b.Loop() {
		b.StopTimer()
		copyFileT(b, src, work)
		// The copy's writeback would otherwise compete with the repair.
		if f, err := os.OpenFile(work, os.O_RDWR, 0); err == nil {
			f.Sync()
			f.Close()
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := Repair(work, Options{}, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		tb, err := Open(work, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.Close(); err != nil {
			b.Fatal(err)
		}
		open += time.Since(t1)
		repair += t1.Sub(t0)
		each = append(each, t1.Sub(t0))
		runs++
	}
	slices.Sort(each)
	b.ReportMetric(float64(repair.Microseconds())/1e3/float64(runs), "repair-ms")
	b.ReportMetric(float64(open.Microseconds())/1e3/float64(runs), "open-ms")
	b.ReportMetric(float64(each[len(each)/2].Microseconds())/1e3, "median-repair-ms")
}

// TestRepairSplitScanMatches checks that the two-goroutine scan finds
// exactly what the sequential scan finds, on intact and randomly damaged
// files, including when the helper stops early for lack of room.
func TestRepairSplitScanMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testSeed(t)), 7))
	procs := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })

	for _, kind := range []Kind{Set, Bag} {
		path := filepath.Join(t.TempDir(), "t.dets")
		tab, err := Open(path, Options{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3000 {
			v := etf.Binary(bytes.Repeat([]byte{byte(i)}, rng.IntN(300)))
			if err := tab.Insert(etf.Tuple{etf.Int(i % 2500), v}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		clean, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		scan := func(data []byte, split bool, cap int, named *slotRefs) ([]repairEntry, scanStats) {
			var got []repairEntry
			s := &scanner{data: data, kind: kind, keyPos: 1, maxSz: int64(len(data)), named: named}
			if split {
				s.splitCap, s.splitHint = cap, 16
			}
			s.emit = func(e repairEntry) error { got = append(got, e); return nil }
			if err := s.run(); err != nil {
				t.Fatal(err)
			}
			return got, s.stats
		}
		for round := range 40 {
			data := slices.Clone(clean)
			if round > 0 {
				// Damage: flipped bytes, zeroed runs and fake ACTIVE headers,
				// mostly around the middle where the helper starts.
				mid := len(data) / 2
				for range 1 + rng.IntN(20) {
					at := baseAddr + rng.IntN(len(data)-baseAddr-16)
					if rng.IntN(2) == 0 {
						at = max(baseAddr, mid-4096+rng.IntN(8192))
					}
					switch rng.IntN(3) {
					case 0:
						data[at] ^= byte(1 + rng.IntN(255))
					case 1:
						clear(data[at:min(len(data), at+rng.IntN(600))])
					case 2:
						be.PutUint32(data[at:], uint32(16+rng.IntN(4096)))
						be.PutUint32(data[at+4:], statusActive)
					}
				}
			}
			// Also with only the buckets the slot table names, as for a
			// file closed properly: the tally of those must merge too.
			for _, named := range []bool{false, true} {
				refs := func() *slotRefs {
					if named {
						return &slotRefs{data: data}
					}
					return nil
				}
				want, wantSt := scan(data, false, 0, refs())
				for _, cap := range []int{1 << 20, 1 + rng.IntN(len(want)+1)} {
					got, gotSt := scan(data, true, cap, refs())
					if !slices.Equal(got, want) || gotSt != wantSt {
						t.Fatalf("%s round %d named %v cap %d: split scan found %d entries %+v, sequential %d %+v",
							kind, round, named, cap, len(got), gotSt, len(want), wantSt)
					}
				}
			}
		}
	}
}

// TestRepairPacksBySizeClass checks that a rebuilt table's buckets pack
// without alignment gaps: the free lists hold only a few blocks per size
// class (chunk tails and the space after the end), however many buckets.
func TestRepairPacksBySizeClass(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(testSeed(t)), 11))
	path := filepath.Join(t.TempDir(), "t.dets")
	tab, err := Open(path, Options{Kind: Bag})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4000 {
		v := etf.Binary(bytes.Repeat([]byte{byte(i)}, rng.IntN(2000)))
		if err := tab.Insert(etf.Tuple{etf.Int(i % 3000), v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path, Options{}, nil); err != nil {
		t.Fatal(err)
	}
	tab, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	if n, err := tab.Info(); err != nil || n.Size != 4000 {
		t.Fatalf("after repair: %+v %v, want 4000 objects", n, err)
	}
	blocks, classes := 0, 0
	for c := 1; c <= maxBuddyClass; c++ {
		blocks += len(tab.bud.free[c])
	}
	for _, n := range tab.h.counters {
		if n > 0 {
			classes++
		}
	}
	// Per class at most one chunk tail (under 32 blocks), plus the gap
	// before the first chunk and the space after the end (32 each).
	if limit := 32 * (classes + 2); blocks > limit {
		t.Fatalf("%d free blocks after repair, want at most %d (%d size classes)", blocks, limit, classes)
	}
	if err := tab.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
}

// BenchmarkSlotOrder orders the index of a repair (random hashes, file
// order) with the one-level and the two-level counting sort, side by side.
func BenchmarkSlotOrder(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{100_000, 1_000_000} {
		es := make([]repairEntry, n)
		for i := range es {
			es[i] = repairEntry{off: uint64(8 + 250*i), n: 100, hash: r.Uint32()}
		}
		nslots := uint64((n + slotsPerSeg - 1) / slotsPerSeg * slotsPerSeg)
		m, nn := hashParamsFor(nslots)
		slot := func(e repairEntry) uint32 { return uint32(slotOf(uint64(e.hash), m, nn)) }
		for _, levels := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/levels=%d", n, levels), func(b *testing.B) {
				twoLevelMax := 0
				if levels == 2 {
					twoLevelMax = n
				}
				for b.Loop() {
					if _, _, ok := slotOrder(es, slot, uint32(nslots), twoLevelMax); !ok {
						b.Fatal("no slot order")
					}
				}
			})
		}
	}
}
