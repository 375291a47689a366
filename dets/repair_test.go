package dets

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	mdl "github.com/godets/godets/internal/model"
	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// seedU64 is testSeed as the repair tests' generators take it.
func seedU64(t testing.TB) uint64 { return uint64(testSeed(t)) }

// paddedObj builds the test object {K, V, Pad} with a payload whose size varies so
// that buckets land in several size classes.
func paddedObj(k, v int, pad int) etf.Term {
	return etf.Tuple{etf.Int(k), etf.Int(v), etf.Binary(bytes.Repeat([]byte{byte(k)}, pad))}
}

func encString(t testing.TB, x etf.Term) string {
	b, err := etf.Encode(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// insertBoth inserts o into tab and into the model m.
func insertBoth(t testing.TB, tab *Table, m *mdl.Model, o etf.Term) {
	t.Helper()
	if err := tab.Insert(o); err != nil {
		t.Fatal(err)
	}
	m.Insert(o)
}

// deleteBoth deletes key from tab and from the model m.
func deleteBoth(t testing.TB, tab *Table, m *mdl.Model, key etf.Term) {
	t.Helper()
	if err := tab.Delete(key); err != nil {
		t.Fatal(err)
	}
	m.Delete(key)
}

// sortedContents returns the sorted encodings of every object in tab.
func sortedContents(t testing.TB, tab *Table) []string {
	t.Helper()
	var out []string
	for o, err := range tab.All() {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		out = append(out, encString(t, o))
	}
	slices.Sort(out)
	return out
}

// reopenClean opens path with NoRepair, runs Check and returns the
// contents.
func reopenClean(t testing.TB, path string) []string {
	t.Helper()
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen with NoRepair: %v", err)
	}
	defer tab.Close()
	if err := tab.Check(); err != nil {
		t.Fatalf("Check after repair: %v", err)
	}
	return sortedContents(t, tab)
}

// killedImage runs ops on a table of kind in dir and returns the bytes of the
// file as a kill -9 would leave them after the last op (the table is not
// closed when the bytes are taken), plus the model of the state. The file is
// dirty unless the last op was a Sync (clean): every insert and delete
// marks it dirty, even one that changes nothing, and a new file starts
// dirty.
func killedImage(t testing.TB, dir string, kind Kind, r *rand.Rand, nOps int) (img []byte, m *mdl.Model, clean bool) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("src-%d.dets", r.Uint64()))
	tab, err := Open(path, Options{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer tab.Close()
	m = newModel(kind)
	keys := max(nOps/4, 4)
	for i := range nOps {
		k := r.IntN(keys)
		x := r.IntN(100)
		clean = x >= 85 && x < 88
		switch {
		case x < 70:
			o := paddedObj(k, r.IntN(3), r.IntN(3)*r.IntN(300))
			insertBoth(t, tab, m, o)
		case x < 85:
			deleteBoth(t, tab, m, etf.Int(k))
		case x < 88:
			if err := tab.Sync(); err != nil {
				t.Fatal(err)
			}
		default:
			o := paddedObj(k, i, 10)
			insertBoth(t, tab, m, o)
		}
	}
	img, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return img, m, clean
}

func writeFileT(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func noTempsIn(t testing.TB, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".TMP") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestRepairGoDirtyFiles repairs files left dirty by the Go engine (the
// state a kill -9 leaves, since the engine has no write cache) and expects
// exactly the model's objects back. When the random sequence ends with a
// Sync the file is legitimately closed: NoRepair must then open it as is,
// with exactly the model's objects, without changing a byte.
func TestRepairGoDirtyFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 1))
	for _, kind := range allKinds {
		for _, nOps := range []int{0, 1, 10, 300, 2000} {
			t.Run(fmt.Sprintf("%s/%d", kind, nOps), func(t *testing.T) {
				dir := t.TempDir()
				img, m, clean := killedImage(t, dir, kind, r, nOps)
				path := filepath.Join(dir, "t.dets")
				writeFileT(t, path, img)
				if clean {
					tab, err := Open(path, Options{})
					if err != nil {
						t.Fatalf("NoRepair on a file whose last op was Sync: %v", err)
					}
					got := sortedContents(t, tab)
					if err := tab.Check(); err != nil {
						t.Fatalf("Check of the synced file: %v", err)
					}
					if err := tab.Close(); err != nil {
						t.Fatal(err)
					}
					if want := m.Objects(); !slices.Equal(got, want) {
						t.Fatalf("synced file has %d objects, model %d", len(got), len(want))
					}
				} else if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
					t.Fatalf("NoRepair on a dirty file: %v, want ErrNeedsRepair", err)
				}
				if b, _ := os.ReadFile(path); !bytes.Equal(b, img) {
					t.Fatalf("NoRepair (clean=%v) changed the file", clean)
				}
				tab, err := Open(path, Options{Repair: AutoRepair})
				if err != nil {
					t.Fatalf("AutoRepair: %v", err)
				}
				got := sortedContents(t, tab)
				if err := tab.Check(); err != nil {
					t.Fatalf("Check: %v", err)
				}
				if err := tab.Close(); err != nil {
					t.Fatal(err)
				}
				if want := m.Objects(); !slices.Equal(got, want) {
					t.Fatalf("repaired table has %d objects, model %d", len(got), len(want))
				}
				if again := reopenClean(t, path); !slices.Equal(again, got) {
					t.Fatal("contents changed on reopen")
				}
				noTempsIn(t, dir)
			})
		}
	}
}

// TestRepairForceCompacts: ForceRepair on a good file keeps every object and
// leaves a file no larger than before.
func TestRepairForceCompacts(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 2))
	// The file is as godets's own close leaves it (tail compaction on):
	// compaction must not grow even that.
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "t.dets")
			tab, err := Open(path, Options{Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			m := newModel(kind)
			for i := range 3000 {
				o := paddedObj(i%1000, r.IntN(5), r.IntN(200))
				insertBoth(t, tab, m, o)
			}
			for k := 0; k < 1000; k += 3 {
				deleteBoth(t, tab, m, etf.Int(k))
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(path)
			tab, err = Open(path, Options{Repair: ForceRepair})
			if err != nil {
				t.Fatalf("ForceRepair: %v", err)
			}
			if err := tab.Check(); err != nil {
				t.Fatal(err)
			}
			got := sortedContents(t, tab)
			tab.Close()
			if !slices.Equal(got, m.Objects()) {
				t.Fatalf("compaction changed the contents: %d objects, want %d", len(got), len(m.Objects()))
			}
			after, _ := os.Stat(path)
			t.Logf("%s: %d -> %d bytes", kind, before.Size(), after.Size())
			if after.Size() > before.Size() {
				t.Errorf("compacted file grew: %d -> %d", before.Size(), after.Size())
			}
			reopenClean(t, path)
			noTempsIn(t, dir)
		})
	}
}

// writeDirtyCopy writes n objects with the engine and leaves a dirty copy of
// the file (as a kill -9 would) at the returned path.
func writeDirtyCopy(b testing.TB, dir string, kind Kind, n int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("src-%s-%d.dets", kind, n))
	tab, err := Open(path, Options{Kind: kind})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]etf.Term, 0, 1000)
	for i := range n {
		batch = append(batch, etf.Tuple{etf.Int(i), etf.Int(i * 7), etf.Binary(fmt.Sprintf("value-%d", i))})
		if len(batch) == cap(batch) || i == n-1 {
			if err := tab.Insert(batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	dirty := path + ".dirty"
	copyFileT(b, path, dirty)
	tab.Close()
	os.Remove(path)
	return dirty
}

func copyFileT(b testing.TB, from, to string) { testutil.CopyFile(b, from, to, 0o644) }

// peakHeap samples the heap (live and garbage objects) every 5 ms
// while fn runs and returns the largest value seen.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	metrics.Read(s)
	return max(peak.Load(), s[0].Value.Uint64())
}

// otpRepairTimer repairs a copy of the file with OTP and returns the
// microseconds dets:open_file took (the repair), excluding erl start-up.
const otpRepairTimer = `
[SrcB, DstB, KindB] = In,
{ok, _} = file:copy(binary_to_list(SrcB), binary_to_list(DstB)),
{Us, {ok, T}} = timer:tc(fun() -> dets:open_file(t, [{file, binary_to_list(DstB)}, {type, binary_to_atom(KindB, latin1)}]) end),
N = dets:info(T, size),
ok = dets:close(T),
[integer_to_binary(Us), integer_to_binary(N)]
`

// BenchmarkRepair repairs the same dirty files with OTP (once, timed inside
// erl) and with godets, and reports godets's time, OTP's time, the speed-up
// and the peak Go heap during a godets repair. N=1e6 runs only with
// GODETS_BENCH_1M=1.
func BenchmarkRepair(b *testing.B) {
	sizes := []int{100_000}
	if os.Getenv("GODETS_BENCH_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		for _, kind := range []Kind{Set, Bag} {
			b.Run(fmt.Sprintf("%s/N=%d", kind, n), func(b *testing.B) {
				dir := b.TempDir()
				src := writeDirtyCopy(b, dir, kind, n)
				var otpSec float64
				if r, err := otptest.Find(); err == nil {
					out, err := r.EvalErr(otpRepairTimer, []byte(src), []byte(filepath.Join(dir, "otp.dets")), []byte(kind.String()))
					if err != nil {
						b.Fatal(err)
					}
					us, _ := strconv.Atoi(string(out[0]))
					otpSec = float64(us) / 1e6
					if got, _ := strconv.Atoi(string(out[1])); got != n {
						b.Fatalf("OTP repaired %d objects, want %d", got, n)
					}
				}
				work := filepath.Join(dir, "go.dets")
				var total time.Duration
				var peak uint64
				runs := 0
				for b.Loop() {
					b.StopTimer()
					copyFileT(b, src, work)
					b.StartTimer()
					start := time.Now()
					var st RepairStats
					var err error
					p := peakHeap(func() { st, err = Repair(work, Options{}, nil) })
					total += time.Since(start)
					runs++
					peak = max(peak, p)
					if err != nil {
						b.Fatal(err)
					}
					if st.Objects != int64(n) {
						b.Fatalf("repaired %d objects, want %d", st.Objects, n)
					}
				}
				goSec := total.Seconds() / float64(runs)
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				if otpSec > 0 {
					b.ReportMetric(otpSec, "otp-s")
					b.ReportMetric(otpSec/goSec, "speedup")
				}
			})
		}
	}
}

// TestRepairParallelBuild repairs the same dirty files with the build on
// one goroutine and split between two, and expects the same objects, stats
// and a table that passes Check from both; the files hold buckets that get
// blocks of their own (larger than a chunk) as well as packed ones.
func TestRepairParallelBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 21))
	procs := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	for _, kind := range allKinds {
		for _, n := range []int{300, 6000} {
			t.Run(fmt.Sprintf("%s/%d", kind, n), func(t *testing.T) {
				dir := t.TempDir()
				src := filepath.Join(dir, "src.dets")
				tab, err := Open(src, Options{Kind: kind})
				if err != nil {
					t.Fatal(err)
				}
				m := newModel(kind)
				for i := range n {
					o := paddedObj(i%(n/3+1), r.IntN(4), r.IntN(600))
					if i%97 == 0 {
						o = paddedObj(7, i, 500) // key 7 grows a large bucket
					}
					insertBoth(t, tab, m, o)
				}
				img, err := os.ReadFile(src) // dirty: the table is still open
				if err != nil {
					t.Fatal(err)
				}
				tab.Close()
				var got [2][]string
				var stats [2]RepairStats
				for i, min := range []int{int(^uint(0) >> 1), 0} {
					opts, splits := countSplits(withTuning(Options{}, func(tn *tuning) { tn.parallelBuildMin = min }))
					path := filepath.Join(dir, fmt.Sprintf("t%d.dets", i))
					writeFileT(t, path, img)
					var calls []int64 // unsynchronized: -race finds calls from two goroutines
					st, err := Repair(path, opts, func(p RepairProgress) { calls = append(calls, p.Objects) })
					if err != nil {
						t.Fatalf("repair (parallelBuildMin %d): %v", min, err)
					}
					// 300 objects make a table of one segment, which
					// cannot be divided.
					if split := splits.Load() > 0; split != (min == 0 && n > 1000) {
						t.Fatalf("parallelBuildMin %d, %d objects: build split %v", min, n, split)
					}
					if len(calls) == 0 {
						t.Fatal("no progress reported")
					}
					stats[i] = st
					got[i] = reopenClean(t, path)
					noTempsIn(t, dir)
				}
				if want := m.Objects(); !slices.Equal(got[0], want) || !slices.Equal(got[1], want) {
					t.Fatalf("repaired tables hold %d and %d objects, model %d", len(got[0]), len(got[1]), len(want))
				}
				if stats[0] != stats[1] {
					t.Fatalf("stats differ: one goroutine %+v, two %+v", stats[0], stats[1])
				}
			})
		}
	}
}

// TestRepairOrderSplit checks the slot order and its division: the entries
// come in (slot, offset) order with their lengths and slots, the halves
// together are the whole order, the boundary is a segment start, and every
// entry lies on its side of it; with the two-level and the one-level sort.
func TestRepairOrderSplit(t *testing.T) {
	t.Parallel()
	t.Run("two levels", func(t *testing.T) { testRepairOrderSplit(t, defaultTuning.slotOrderTwoLevelMax) })
	t.Run("one level", func(t *testing.T) { testRepairOrderSplit(t, 0) })
}

func testRepairOrderSplit(t *testing.T, twoLevelMax int) {
	r := rand.New(rand.NewPCG(seedU64(t), 22))
	for _, tc := range []struct{ entries, slots int }{{1, 256}, {10, 256}, {1000, 256}, {1000, 4096}, {5000, 3072}, {50000, 65536}, {3, 65536}, {300000, 1 << 20}} {
		// A fake file: entry i's object is n bytes at off, framed by
		// <<4+n:32>> just before it.
		var data []byte
		es := make([]repairEntry, tc.entries)
		for i := range es {
			n := 1 + r.IntN(40)
			data = be.AppendUint32(data, uint32(4+n))
			es[i] = repairEntry{off: uint64(len(data)), n: uint32(n), hash: r.Uint32()}
			data = append(data, make([]byte, n)...)
		}
		slot := func(e repairEntry) uint32 { return e.hash % uint32(tc.slots) }
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(a, b repairEntry) int { return cmp.Compare(slot(a), slot(b)) })
		offs, ends, ok := slotOrder(es, slot, uint32(tc.slots), twoLevelMax)
		if !ok {
			t.Fatalf("%+v: no slot order", tc)
		}
		whole := &orderIter{data: data, offs: offs, ends: ends, end: len(offs)}
		its, bounds := whole.split()
		if len(its) != len(bounds) || bounds[0] != 0 {
			t.Fatalf("%+v: %d iterators, bounds %v", tc, len(its), bounds)
		}
		// One segment cannot be divided; many entries over many
		// segments must be.
		if (tc.slots == slotsPerSeg && len(its) != 1) || (tc.slots > slotsPerSeg && tc.entries >= 1000 && len(its) != 2) {
			t.Fatalf("%+v: %d parts", tc, len(its))
		}
		var got []repairEntry
		for i, it := range its {
			for {
				e, s, ok, err := it.next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				if bounds[i]%slotsPerSeg != 0 || s < bounds[i] || (i+1 < len(bounds) && s >= bounds[i+1]) {
					t.Fatalf("%+v: entry of slot %d in part %d (bounds %v)", tc, s, i, bounds)
				}
				e.hash = want[len(got)].hash // the order does not carry hashes
				if s != slot(e) {
					t.Fatalf("%+v: entry %d reported in slot %d, is in %d", tc, len(got), s, slot(e))
				}
				got = append(got, e)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: the parts do not make up the order", tc)
		}
	}
}

// TestRepairParallelBuildFaults stops a repair whose build runs on two
// goroutines at each of its mutating steps in turn: the repair must return
// the fault (not hang or panic), leave the old file or a complete new one,
// and a second repair must give the model's objects. The layout of a split
// build depends on timing, so the new file is checked by its contents.
func TestRepairParallelBuildFaults(t *testing.T) {
	procs := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	twoBuilders := withTuning(Options{}, func(tn *tuning) { tn.parallelBuildMin = 0 })
	r := rand.New(rand.NewPCG(seedU64(t), 23))
	for _, kind := range allKinds {
		img, m, _ := killedImage(t, t.TempDir(), kind, r, 4000)
		want := m.Objects()
		split := newMemFS()
		split.put("t.dets", img)
		opts, splits := countSplits(twoBuilders)
		opts.FS = split
		if _, err := Repair("t.dets", opts, nil); err != nil || splits.Load() == 0 {
			t.Fatalf("%s: the build was not split (err %v)", kind, err)
		}
		repairWithEachFaultByContent(t, kind, img, want, twoBuilders)
	}
}

// repairWithEachFaultByContent is repairWithEachFault for repairs whose layout depends on
// timing: a finished repair, or a stopped one that replaced the file, must
// hold want.
func repairWithEachFaultByContent(t *testing.T, kind Kind, img []byte, want []string, opts Options) {
	t.Helper()
	repairWithEachFault(t, kind, img, want, opts, func(ffs *nthOpFaultFS) {
		if got := reopenCleanInMemFS(t, ffs.memFS, "t.dets", kind.String()); !slices.Equal(got, want) {
			t.Fatalf("%s: %d objects, want %d", kind, len(got), len(want))
		}
	}, func(ffs *nthOpFaultFS, n int) {
		if now := ffs.get("t.dets"); !bytes.Equal(now, img) {
			if got := reopenCleanInMemFS(t, ffs.memFS, "t.dets", kind.String()); !slices.Equal(got, want) {
				t.Fatalf("%s: fault at step %d left a new file with %d objects, want %d", kind, n, len(got), len(want))
			}
		}
	})
}

// TestRepairEarlySync makes the repair's writer fsync the new file after
// every write (earlySyncBytes): the fsyncs must happen while the writes go
// on, a failed one must fail the repair even when every later fsync
// succeeds (the kernel reports a write-back error once), and a fault at any
// step, early fsyncs included, must leave the old file or the new one.
func TestRepairEarlySync(t *testing.T) {
	t.Parallel()
	everyWrite := withTuning(Options{}, func(tn *tuning) { tn.earlySyncBytes = 1 })
	r := rand.New(rand.NewPCG(seedU64(t), 29))
	for _, kind := range allKinds {
		img, m, _ := killedImage(t, t.TempDir(), kind, r, 3000)
		want := m.Objects()

		mfs := repairInMemory(t, img, everyWrite)
		var writes, syncsBetween, last int
		node := -1 // the new file's
		for _, rec := range mfs.Log() {
			switch {
			case rec.Kind == crashfs.OpCreate && rec.Name == tmpPath("t.dets"):
				node = rec.Node
			case rec.Node != node:
			case rec.Kind == crashfs.OpWrite:
				writes++
			case rec.Kind == crashfs.OpSync && writes > last:
				syncsBetween++
				last = writes
			}
		}
		if syncsBetween < 2 {
			t.Fatalf("%s: %d writes and %d fsyncs between them, want early fsyncs", kind, writes, syncsBetween)
		}
		if got := reopenCleanInMemFS(t, mfs, "t.dets", kind.String()); !slices.Equal(got, want) {
			t.Fatalf("%s: %d objects, want %d", kind, len(got), len(want))
		}

		once := newMemFS()
		once.put("t.dets", img)
		once.Inject(crashfs.OpSync, 1, syscall.EIO, false)
		opts := everyWrite
		opts.FS = once
		if _, err := Repair("t.dets", opts, nil); !errors.Is(err, syscall.EIO) {
			t.Fatalf("%s: the first early fsync failed, and the repair returned %v", kind, err)
		}
		if !bytes.Equal(once.get("t.dets"), img) {
			t.Fatalf("%s: a failed repair changed the file", kind)
		}
		noTempsInMemFS(t, once, kind.String())

		repairWithEachFaultByContent(t, kind, img, want, everyWrite)
	}
}
