package dets

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestTuningIsPerTable: the tuning an Options carries reaches the repair
// that Open runs (AutoRepair) and the table it then opens, and no other
// table: one opened meanwhile without it has defaultTuning.
func TestTuningIsPerTable(t *testing.T) {
	procs := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	r := rand.New(rand.NewPCG(seedU64(t), 31))
	img, m, clean := killedImage(t, t.TempDir(), Set, r, 4000)
	for clean { // a sequence that ended in a Sync leaves nothing to repair
		img, m, clean = killedImage(t, t.TempDir(), Set, r, 4000)
	}
	mfs := newMemFS()
	mfs.put("t.dets", img)
	opts, splits := countSplits(withTuning(Options{FS: mfs, Repair: AutoRepair}, func(tn *tuning) {
		tn.parallelBuildMin, tn.touchMin = 0, 1
	}))
	tab := openT(t, "t.dets", opts)
	if splits.Load() == 0 {
		t.Error("the repair that Open ran did not take the table's tuning")
	}
	if tab.tune.touchMin != 1 {
		t.Errorf("the table's touchMin is %d, want the 1 it was opened with", tab.tune.touchMin)
	}
	if got := sortedContents(t, tab); !slices.Equal(got, m.Objects()) {
		t.Fatalf("repaired table holds %d objects, want %d", len(got), len(m.Objects()))
	}
	other := openT(t, tmpFile(t, "other.dets"), Options{})
	if other.tune.touchMin != defaultTuning.touchMin || other.tune.buildSplit != nil {
		t.Errorf("a table opened without tuning has touchMin %d (hook set: %v), want the default %d",
			other.tune.touchMin, other.tune.buildSplit != nil, defaultTuning.touchMin)
	}
}
