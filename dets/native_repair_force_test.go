package dets

import (
	"math/rand"
	"os"
	"testing"

	"github.com/godets/godets/etf"
)

// TestNativeForceRepairNotClosed: Open with ForceRepair on a file not
// closed properly runs the full repair, not only the recovery from the
// log: an object damaged in a bucket the log does not cover is dropped and
// counted, and every acknowledged write of the log survives.
func TestNativeForceRepairNotClosed(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "n.dets")
			const keys = 1500
			tab, m := fillNative(t, path, kind, rng, keys, 2000)
			must(t, tab.Sync())
			for range 50 {
				obj := etf.Tuple{etf.Int(rng.Int63n(keys)), etf.Int(9), etf.Binary(randBytes(rng, rng.Intn(30)))}
				must(t, tab.Insert(obj))
				m.Insert(obj)
			}
			killed := tmpFile(t, "killed.dets")
			img := readFileT(t, path) // the writer still open: its log passes
			must(t, tab.Close())
			// Buckets at the same offset in the image's tree (the Sync's)
			// and in the closed file's are ones the log did not rewrite.
			final := map[uint64]bool{}
			for _, r := range nativeRecords(t, readFileT(t, path)) {
				final[r.bucket] = true
			}
			victim := -1
			recs := nativeRecords(t, img)
			for i, r := range recs {
				if final[r.bucket] && r.end-r.etfOff > 4 && rng.Intn(4) == 0 {
					victim = i
					break
				}
			}
			if victim < 0 {
				t.Fatal("no object in a bucket the log leaves alone")
			}
			v := recs[victim]
			img[v.etfOff+3] ^= 0x5a
			must(t, os.WriteFile(killed, img, 0o644))
			m.DeleteOne(v.obj)

			var st RepairStats
			setForTest(t, &repairFile, func(path string, opts Options, h *header) error {
				var err error
				st, err = repairTable(paramsFor(path, opts, opts.Progress))
				return err
			})
			tab = openT(t, killed, Options{Repair: ForceRepair})
			if st.ObjectsDropped != 1 || st.ObjectsChecksumFailed != 1 {
				t.Fatalf("repair stats %+v: want the one damaged object dropped for its checksum", st)
			}
			checkModel(t, tab, m, keys)
			mustCheck(t, tab)
			if tab.nat.meta.verifiedGen != 1 {
				t.Fatalf("verifiedGen %d: ForceRepair did not run the full repair", tab.nat.meta.verifiedGen)
			}
		})
	}
}
