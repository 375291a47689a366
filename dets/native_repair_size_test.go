package dets

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

// buildNativeT writes a closed native table of kind holding objs (keys
// unique per object for a set) at path with nativeBuilder, the writer a
// repair uses: native tables do not grow before step 5 of
// docs/format-native.md §16, so a large one is built here, not by inserts.
func buildNativeT(t testing.TB, path string, kind Kind, objs []etf.Tuple) {
	t.Helper()
	next := uint64(pow2ceil(int64(max(len(objs)/2, nativeSlotsPerSeg))))
	m, n := hashParamsFor(next)
	type ent struct {
		slot uint64
		enc  []byte
	}
	es := make([]ent, len(objs))
	for i, o := range objs {
		enc, err := etf.Encode(o)
		must(t, err)
		h := nativeKeyHash(keySpan(enc, 1))
		es[i] = ent{slotOf(h, m, n), enc}
	}
	slices.SortStableFunc(es, func(a, b ent) int { return int(a.slot) - int(b.slot) })
	f, err := OSFS{}.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	must(t, err)
	defer f.Close()
	s := newNativeSuper(kind, 1, nativeDefaultMinSlots, nativeDefaultMaxSlots, 0)
	nb, err := newNativeBuilder(f, path, s, next, 0)
	must(t, err)
	var gs []group
	for i := 0; i < len(es); {
		j := i
		gs = gs[:0]
		for ; j < len(es) && es[j].slot == es[i].slot; j++ {
			gs, _, _ = applyInsert(kind, gs, nil, object{enc: es[j].enc, kenc: keySpan(es[j].enc, 1)})
		}
		must(t, nb.addBucket(es[i].slot, gs))
		i = j
	}
	_, err = nb.finish()
	must(t, err)
	must(t, f.Sync())
}

// rsNativeObjects is the repair benchmark's workload: {I, I*7, "value-I"}.
func rsNativeObjects(n int) []etf.Tuple {
	objs := make([]etf.Tuple, n)
	for i := range objs {
		objs[i] = etf.Tuple{etf.Int(i), etf.Int(i * 7), etf.Binary(fmt.Sprintf("value-%d", i))}
	}
	return objs
}

// TestNativeRepairMemory: the index spills to PATH.TMP.sort past the
// in-memory bound, the result holds every object, and the peak heap
// grows slower than the file (docs/format-native.md §12.2): by less than
// half the bytes the file grows, and stays under 64 MiB. The bound is
// lowered to 2^15 entries, so the merge's buffers (128 KiB a sorted run,
// a run per 2^15 objects here, per 2^21 by default) are what grows.
func TestNativeRepairMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tables of 50k and 200k objects")
	}
	dir := t.TempDir()
	var peaks, sizes []uint64
	for _, n := range []int{50_000, 200_000} {
		path := filepath.Join(dir, fmt.Sprintf("m%d.dets", n))
		buildNativeT(t, path, Set, rsNativeObjects(n))
		opts := withTuning(Options{}, func(tn *tuning) { tn.repairMemEntries = 1 << 15 })
		var st RepairStats
		var err error
		var last RepairProgress
		peak := peakHeap(func() {
			st, err = Repair(path, opts, func(p RepairProgress) {
				if p.BytesScanned < last.BytesScanned || (p.Phase == last.Phase && p.Objects < last.Objects) {
					t.Errorf("progress went backwards: %+v after %+v", p, last)
				}
				last = p
			})
		})
		must(t, err)
		if !st.ExternalSort || st.Objects != int64(n) || st.ObjectsDropped != 0 {
			t.Fatalf("%d objects: stats %+v, want an external sort of all", n, st)
		}
		if _, err := os.Stat(sortPath(path)); !os.IsNotExist(err) {
			t.Fatalf("PATH.TMP.sort left: %v", err)
		}
		tab := openT(t, path, Options{Repair: NoRepair})
		for _, k := range []int{0, n / 2, n - 1} {
			if objs, err := tab.Lookup(etf.Int(k)); err != nil || len(objs) != 1 {
				t.Fatalf("Lookup(%d): %v %v", k, objs, err)
			}
		}
		must(t, tab.Close())
		t.Logf("%d objects, %d bytes: peak heap %.1f MiB", n, rsSize(t, path), float64(peak)/(1<<20))
		peaks = append(peaks, peak)
		sizes = append(sizes, uint64(rsSize(t, path)))
	}
	if peaks[1] > 64<<20 || peaks[1] > peaks[0] && peaks[1]-peaks[0] > (sizes[1]-sizes[0])/2 {
		t.Fatalf("peak heap %d then %d bytes for files of %d and %d bytes: grows with the file", peaks[0], peaks[1], sizes[0], sizes[1])
	}
}

// BenchmarkRepairNative repairs the same content, 100k objects of the
// repair benchmark's workload, as otp9 (a dirty file, as a kill leaves it)
// and as native (a full repair of a closed file: what ForceRepair and
// `dets repair` run), and reports both times and their ratio.
func BenchmarkRepairNative(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	otp := writeDirtyCopy(b, dir, Set, n)
	nat := filepath.Join(dir, "native.dets")
	buildNativeT(b, nat, Set, rsNativeObjects(n))
	var tOTP, tNat time.Duration
	var peak uint64
	runs := 0
	for b.Loop() {
		for _, c := range []struct {
			src string
			d   *time.Duration
		}{{otp, &tOTP}, {nat, &tNat}} {
			b.StopTimer()
			work := filepath.Join(dir, "work.dets")
			copyFileT(b, c.src, work)
			b.StartTimer()
			start := time.Now()
			var st RepairStats
			var err error
			p := peakHeap(func() { st, err = Repair(work, Options{}, nil) })
			*c.d += time.Since(start)
			if err != nil || st.Objects != n {
				b.Fatalf("%s: %+v, %v", c.src, st, err)
			}
			if c.src == nat {
				peak = max(peak, p)
			}
		}
		runs++
	}
	b.ReportMetric(tOTP.Seconds()*1e3/float64(runs), "otp9-ms")
	b.ReportMetric(tNat.Seconds()*1e3/float64(runs), "native-ms")
	b.ReportMetric(float64(tNat)/float64(tOTP), "native/otp9")
	b.ReportMetric(float64(peak)/(1<<20), "native-peak-heap-MiB")
}
