package dets

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	"github.com/godets/godets/internal/otptest"
)

// TestCompactTailFixedPoint: after a close, the top bucket has no free
// block of its class or larger below it (compactTail ran to its end), the
// data ends exactly where that bucket ends, and the table is intact.
// duplicate_bag tables are left as they are.
func TestCompactTailFixedPoint(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(uint64(testSeed(t)), 0))
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			path := tmpFile(t, "c.dets")
			tab := mustOpen(t, path, Options{Kind: kind})
			moved := countMoves(tab)
			m := newModel(kind)
			for i := range 5000 {
				k := i // first distinct keys, as bench.Build inserts them
				if i >= 4000 {
					k = r.IntN(4000)
				}
				o := paddedObj(k, i%2, r.IntN(150))
				insertBoth(t, tab, m, o)
				if i >= 4000 && i%7 == 0 {
					k := etf.Int(r.IntN(4000))
					deleteBoth(t, tab, m, k)
				}
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			if kind == DuplicateBag {
				if moved.Load() != 0 {
					t.Fatalf("a duplicate_bag table had %d buckets moved", moved.Load())
				}
			} else if kind == Set && moved.Load() == 0 {
				t.Fatal("the close moved no bucket; single inserts leave holes, so it should")
			}
			ro := openT(t, path, Options{ReadOnly: true})
			if got := sortedContents(t, ro); !slices.Equal(got, m.Objects()) {
				t.Fatalf("reopened table has %d objects, want %d", len(got), len(m.Objects()))
			}
			if kind == DuplicateBag {
				return
			}
			end, ok := ro.bud.topRunStart()
			if !ok {
				t.Fatal("no free run reaches the 2 GiB limit")
			}
			top, found, err := ro.topBucket(end)
			if err != nil || !found {
				// A segment or part on top: it could not move lower.
				if l := ro.bud.free[buddyClass(segmentSize)]; err != nil || len(l) > 0 && int64(l[0]) < end-segmentSize {
					t.Fatalf("no live bucket at the top (err %v), and a free 2048-byte block lies below", err)
				}
				return
			}
			if got, want := int64(ro.h.freelistsPtr), int64(top.e.ptr)+int64(top.e.size); got != want {
				t.Errorf("data ends at %d, the top bucket at %d", got, want)
			}
			for c := buddyClass(int64(top.e.size)); c <= maxBuddyClass; c++ {
				if l := ro.bud.free[c]; len(l) > 0 && int64(l[0]) < top.e.ptr {
					t.Errorf("a free block of class %d at %d lies below the top bucket at %d (class %d)", c, l[0], top.e.ptr, buddyClass(int64(top.e.size)))
				}
			}
		})
	}
}

// TestCompactTailCrash: crash images at every write of a sync that moves
// buckets, in every crashfs mode, recover exactly the synced objects (the
// checks of TestCrashImages).
func TestCompactTailCrash(t *testing.T) {
	t.Parallel()
	seed := uint64(testSeed(t))
	for _, kind := range []Kind{Set, Bag} {
		t.Run(kind.String(), func(t *testing.T) {
			// Workloads until one whose sync moves blocks (most do).
			var r *rand.Rand
			var steps []workloadStep
			var cfs *crashfs.FS
			var tab *Table
			var moved *atomic.Int64
			for attempt := range 20 {
				r = rand.New(rand.NewPCG(seed, uint64(kind)<<8|uint64(attempt)))
				var ops []workloadOp
				for i := range 300 {
					k := r.IntN(60)
					ops = append(ops, workloadOp{what: "insert", objs: []etf.Term{selfCheckingObj(t, k, r.IntN(3), r.IntN(300))}})
					if i%5 == 0 {
						ops = append(ops, workloadOp{what: "delete", key: etf.Int(r.IntN(60))})
					}
				}
				ops = append(ops, workloadOp{what: "sync"})
				cfs = crashfs.New()
				var failAt int
				var err error
				moved = new(atomic.Int64)
				steps, tab, failAt, err = runWorkload(t, cfs, kind, ops, func(tn *tuning) { tn.blockMoved = func() { moved.Add(1) } })
				if err != nil {
					t.Fatalf("seed %d/%d: workload failed at step %d: %v", seed, attempt, failAt, err)
				}
				if moved.Load() > 0 {
					break
				}
				tab.Close()
			}
			if moved.Load() == 0 {
				t.Fatalf("seed %d: no workload's sync moved a block", seed)
			}
			tab.Close()
			last := steps[len(steps)-1]
			st := make([]crashStats, len(crashfs.Modes))
			for k := last.start; k <= last.end; k++ {
				for mi, mode := range crashfs.Modes {
					what := fmt.Sprintf("seed %d crash after op %d (sync %d..%d, %s)", seed, k, last.start, last.end, mode)
					checkCrashImage(t, cfs.Image(k, mode, r), steps, k, mode, &st[mi], what)
				}
			}
			t.Logf("%d buckets moved; %d crash points in the sync", moved.Load(), last.end-last.start+1)
		})
	}
}

// TestCompactTailAgainstOTPSize: the same inserts, overwrites and deletes
// give a file no larger than OTP's (interop), and smaller than without the
// compacting save.
func TestCompactTailAgainstOTPSize(t *testing.T) {
	t.Parallel()
	r := otptest.Erl(t)
	rng := rand.New(rand.NewPCG(uint64(testSeed(t)), 3))
	for _, kind := range []Kind{Set, Bag} {
		dir := t.TempDir()
		var ops etf.List
		for i := range 3000 {
			ops = append(ops, etf.Tuple{etf.Atom("i"), paddedObj(i%1000, rng.IntN(5), rng.IntN(200))})
		}
		for k := 0; k < 1000; k += 3 {
			ops = append(ops, etf.Tuple{etf.Atom("d"), etf.Int(k)})
		}
		goSize := func(name string, opts Options) int64 {
			path := filepath.Join(dir, name)
			tab := mustOpen(t, path, opts)
			for _, op := range ops {
				var err error
				if o := op.(etf.Tuple); o[0] == etf.Atom("i") {
					err = tab.Insert(o[1])
				} else {
					err = tab.Delete(o[1])
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		compacted := goSize("go.dets", Options{Kind: kind})
		plain := goSize("plain.dets", withTuning(Options{Kind: kind}, func(tn *tuning) { tn.noTailCompaction = true }))

		enc, err := etf.Encode(ops)
		if err != nil {
			t.Fatal(err)
		}
		otpPath := filepath.Join(dir, "otp.dets")
		out := r.Eval(t, `
[OpsB, F, KindB] = In,
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, binary_to_atom(KindB, latin1)}]),
lists:foreach(fun({i, O}) -> ok = dets:insert(T, O); ({d, K}) -> ok = dets:delete(T, K) end, binary_to_term(OpsB)),
ok = dets:close(T),
[<<(filelib:file_size(binary_to_list(F))):64>>]`, enc, []byte(otpPath), []byte(kind.String()))
		otpSize := int64(binary.BigEndian.Uint64(out[0]))
		t.Logf("%s: godets %d bytes (%d without compaction), OTP %d bytes", kind, compacted, plain, otpSize)
		if compacted > otpSize {
			t.Errorf("%s: godets's file has %d bytes, OTP's %d", kind, compacted, otpSize)
		}
		if compacted >= plain {
			t.Errorf("%s: the compacting save left %d bytes, %d without it", kind, compacted, plain)
		}
	}
}

// TestCompactTailMovesSegment: a segment at the top of the data moves down
// into a hole (its part is repointed), and the table stays intact, for
// godets and for OTP (interop). The
// allocator is steered so that growth puts the new segment on top.
func TestCompactTailMovesSegment(t *testing.T) {
	t.Parallel()
	path := tmpFile(t, "seg.dets")
	tab := mustOpen(t, path, Options{})
	moved := countMoves(tab)
	obj := func(i, pad int) etf.Term { return tup(etf.Int(i), etf.Binary(make([]byte, pad))) }
	for i := range 250 {
		if err := tab.Insert(obj(i, 3000)); err != nil { // 4 KiB blocks
			t.Fatal(err)
		}
	}
	for i := range 10 { // holes of 4 KiB below the top
		if err := tab.Delete(etf.Int(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Hold every free block below the top, so that the next segment
	// comes from the top.
	top, ok := tab.bud.topRunStart()
	if !ok {
		t.Fatal("no free run at the top")
	}
	type held struct {
		class int
		a     int64
	}
	var hold []held
	for c := 1; c <= maxBuddyClass; c++ {
		for len(tab.bud.free[c]) > 0 && int64(tab.bud.free[c][0]) < top {
			hold = append(hold, held{c, int64(tab.bud.free[c][0])})
			tab.bud.free[c] = tab.bud.free[c][1:]
		}
	}
	if len(hold) == 0 {
		t.Fatal("no holes below the top")
	}
	tab.mu.Lock()
	err := tab.grow() // a second segment, as the next inserts would add
	tab.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.segs) != 2 {
		t.Fatalf("%d segments, want 2", len(tab.segs))
	}
	seg := int64(tab.segs[1])
	if seg < top {
		t.Fatalf("the new segment is at %d, below the old top %d", seg, top)
	}
	for _, h := range hold {
		tab.bud.release(h.a, h.class)
	}
	for i := 250; i < 300; i++ {
		if err := tab.Insert(obj(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	tab.freedSinceSave += 1000 // whatever the writes freed
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(tab.segs[1]) >= seg {
		t.Fatalf("the top segment stayed at %d (moved %d blocks)", seg, moved.Load())
	}
	ro := openT(t, path, Options{ReadOnly: true})
	for i := range 300 {
		objs, err := ro.Lookup(etf.Int(i))
		want := 1
		if i < 10 {
			want = 0
		}
		if err != nil || len(objs) != want || want == 1 && !etf.Equal(objs[0], obj(i, map[bool]int{true: 3000, false: 10}[i < 250])) {
			t.Fatalf("key %d after the move: %d objects, err %v", i, len(objs), err)
		}
	}
	mustCheck(t, ro)
	want := sortedContents(t, ro)
	out := otptest.Erl(t).Eval(t, otpReadBack, []byte("set"), []byte(path), []byte(path))
	if got := decodeOTPObjects(t, out[1]); !slices.Equal(got, want) {
		t.Errorf("OTP reads %d objects with {repair,false}, godets %d", len(got), len(want))
	}
}
