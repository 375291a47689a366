package dets

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// TestNativeEpochReusesCells: a bucket the epoch wrote is superseded by a
// later write of its slot, and its cell is free at once (§7.3): 2,000
// overwrites of 10 keys in one epoch name few distinct cells and leave no
// pending space, and the image a kill leaves (two records name one cell)
// reopens by the log's replay, not a fallback, with the newest values.
// Without the reuse every overwrite took a new cell; without the replay's
// one take per cell the recovery refused the image.
func TestNativeEpochReusesCells(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.dets")
	tab := openT(t, path, withTuning(Options{Format: Native}, func(tn *tuning) {
		tn.nativeBudgetRecords, tn.nativeBudgetPending = 1<<20, 1<<40 // one epoch
	}))
	must(t, tab.Insert(tup(etf.Int(-1), bin("synced"))))
	must(t, tab.Sync())
	const keys, writes = 10, 2000
	for i := range writes {
		must(t, tab.Insert(tup(etf.Int(int64(i%keys)), bin(fmt.Sprint(i)))))
	}
	nat := tab.nat
	if nat.pendBytes != 0 {
		t.Fatalf("%d bytes pending after overwrites of buckets the epoch wrote", nat.pendBytes)
	}
	killed := filepath.Join(dir, "killed.dets")
	img := readFileT(t, path)
	must(t, os.WriteFile(killed, img, 0o644))
	lg := imageLog(t, path, img, nat)
	cells := map[uint64]bool{}
	for _, r := range lg.recs {
		if r.typ == recPut {
			cells[r.entry] = true
		}
	}
	if len(lg.recs) != writes || len(cells) > 4*keys {
		t.Fatalf("%d records name %d distinct cells, want %d records and at most %d cells", len(lg.recs), len(cells), writes, 4*keys)
	}
	t.Logf("%d records name %d cells", len(lg.recs), len(cells))
	must(t, tab.Close())

	rt := openT(t, killed, Options{Repair: AutoRepair})
	st, ok, err := rt.Recovery()
	must(t, err)
	if !ok || st.Replayed != writes || st.GroupsCut != 0 {
		t.Fatalf("recovery %+v (ok %v), want all %d records replayed", st, ok, writes)
	}
	for k := range int64(keys) {
		want := fmt.Sprint(writes - keys + int(k))
		objs, err := rt.Lookup(etf.Int(k))
		must(t, err)
		if len(objs) != 1 || !etf.Equal(objs[0], tup(etf.Int(k), bin(want))) {
			t.Fatalf("key %d after recovery: %v, want value %s", k, objs, want)
		}
	}
	if objs, err := rt.Lookup(etf.Int(-1)); err != nil || len(objs) != 1 {
		t.Fatalf("the synced key after recovery: %v, %v", objs, err)
	}
	mustCheck(t, rt)
}
