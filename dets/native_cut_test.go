package dets

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
)

// TestNativeCloseCutKeepsFallback: a Close writes its meta without a
// second fsync, so the file cut that follows may reach the disk while the
// meta does not. The image with only the cut must still open on the old
// meta (plus its log, which gives the closed state), not on the meta
// before it, whose blocks the last epochs reused (§10.3).
func TestNativeCloseCutKeepsFallback(t *testing.T) {
	cfs := crashfs.New()
	fsys := memFS{cfs}
	tab, err := Open(crashTablePath, Options{Format: Native, FS: fsys})
	must(t, err)
	val := etf.Binary(make([]byte, 200))
	// An epoch whose superseded buckets sit at the top of the file: after
	// the Sync releases them, the next epoch's end of data is lower than
	// the synced meta's.
	for round := range 3 {
		for i := range 3000 {
			must(t, tab.Insert(tup(etf.Int(i), etf.Int(round), val)))
		}
	}
	for i := range 3000 {
		must(t, tab.Delete(etf.Int(i)))
	}
	must(t, tab.Sync())
	synced, syncedEnd := cfs.Ops(), tab.nat.meta.dataEnd
	for i := range 10 {
		must(t, tab.Insert(tup(etf.Int(i), etf.Int(9), val)))
	}
	want, err := sortedContentsErr(tab)
	must(t, err)
	must(t, tab.Close())
	if closeEnd := tab.nat.meta.dataEnd; closeEnd >= syncedEnd {
		t.Fatalf("the Close's end of data %d is not below the synced meta's %d: the workload no longer tests the cut", closeEnd, syncedEnd)
	}

	// The Close's records after its one fsync: the meta write, then the cut.
	log := cfs.Log()
	lastSync := -1
	for i := synced; i < len(log); i++ {
		if log[i].Kind == crashfs.OpSync {
			lastSync = i
		}
	}
	if lastSync < 0 {
		t.Fatal("the Close did not fsync")
	}
	// The durable state at the Close's fsync, then only the cut (if any).
	img := cfs.Image(lastSync+1, crashfs.SyncedOnly, rand.New(rand.NewPCG(1, 2)))
	b := img.Get(crashTablePath)
	for _, r := range log[lastSync+1:] {
		if r.Kind == crashfs.OpTruncate && r.Off < int64(len(b)) {
			b = b[:r.Off]
		}
	}
	img.Put(crashTablePath, b)

	got, err := Open(crashTablePath, Options{FS: memFS{img}, Repair: AutoRepair})
	if err != nil {
		t.Fatalf("open of the image with the cut and without the Close's meta: %v", err)
	}
	objs, err := sortedContentsErr(got)
	must(t, err)
	must(t, got.Close())
	if !slices.Equal(objs, want) {
		t.Fatalf("the image with the cut and without the Close's meta holds %d objects, the closed table %d", len(objs), len(want))
	}
}
