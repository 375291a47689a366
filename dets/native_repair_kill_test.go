package dets

import (
	"errors"
	"math/rand"
	"os"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// killedContents opens the table at path with NoRepair, checks it and
// returns its objects' encodings, sorted.
func killedContents(t *testing.T, path string) []string {
	t.Helper()
	tab := openT(t, path, Options{})
	mustCheck(t, tab)
	var out []string
	for o, err := range tab.All() {
		must(t, err)
		b, err := etf.Encode(o)
		must(t, err)
		out = append(out, string(b))
	}
	must(t, tab.Close())
	slices.Sort(out)
	return out
}

// TestRepairKilledLeavesNoTemp: a full repair killed mid-build (a re-exec
// child) leaves PATH.TMP; the next open (otp9: its repair; native: the
// recovery from the log) or the next repair finds the content the killed
// repair would have given and leaves neither PATH.TMP nor a stale
// PATH.TMP.sort behind, on both formats alike.
func TestRepairKilledLeavesNoTemp(t *testing.T) {
	seed := testSeed(t)
	for _, format := range []Format{OTP9, Native} {
		for _, next := range []string{"open", "repair"} {
			t.Run(format.String()+"/"+next, func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed))
				path := tmpFile(t, "w.dets")
				tab := openT(t, path, Options{Kind: Bag, Format: format})
				for i := range 3000 {
					must(t, tab.Insert(tup(etf.Int(rng.Int63n(1500)), etf.Int(i), etf.Binary(randBytes(rng, rng.Intn(40))))))
				}
				must(t, tab.Sync())
				for i := range 300 {
					must(t, tab.Insert(tup(etf.Int(rng.Int63n(1500)), etf.Int(i), bin("after the sync"))))
				}
				img := readFileT(t, path) // the writer still open: not closed properly
				must(t, tab.Close())

				ref := tmpFile(t, "ref.dets")
				must(t, os.WriteFile(ref, img, 0o644))
				_, err := Repair(ref, Options{}, nil)
				must(t, err)
				want := killedContents(t, ref)

				victim := tmpFile(t, "v.dets")
				must(t, os.WriteFile(victim, img, 0o644))
				// As an earlier repair that spilled its index and was killed.
				must(t, os.WriteFile(sortPath(victim), []byte("stale spill"), 0o600))
				c := testutil.StartChild(t, roleRepairHold, childPathEnv+"="+victim)
				c.ExpectLine(t, "building")
				must(t, c.Cmd.Process.Kill())
				c.Cmd.Wait()
				if _, err := os.Stat(tmpPath(victim)); err != nil {
					t.Fatalf("the killed repair left no PATH.TMP: %v", err)
				}
				if !slices.Equal(readFileT(t, victim), img) {
					t.Fatal("the killed repair changed the table file")
				}

				switch next {
				case "open":
					tab, err := Open(victim, Options{Repair: AutoRepair})
					must(t, err)
					must(t, tab.Close())
				case "repair":
					_, err := Repair(victim, Options{}, nil)
					must(t, err)
				}
				for _, p := range []string{tmpPath(victim), sortPath(victim)} {
					if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("the next %s left %s: %v", next, p, err)
					}
				}
				if got := killedContents(t, victim); !slices.Equal(got, want) {
					t.Fatalf("after the next %s: %d objects, want the %d of a repair of the same image", next, len(got), len(want))
				}
			})
		}
	}
}

// TestNativeRepairRunPastEnd: a killed writer's file can end inside the
// run of a cell its log names (the file grows to cover the cells written,
// in steps that do not follow runs). The full repair must keep that
// cell's bucket as the recovery does; it dropped every log group from that
// record on, acknowledged writes among them, and counted nothing dropped.
// The image is the file cut at the end of its data, which a growth step
// of exactly the cell's size leaves.
func TestNativeRepairRunPastEnd(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	path := tmpFile(t, "s.dets")
	tab := openT(t, path, Options{Kind: Set, Format: Native})
	m := newModel(Set)
	const keys = 100000
	// straddles reports a live cell below end whose run goes past it.
	straddles := func(end uint64) bool {
		base := tab.nat.super.base
		for _, pg := range tab.segCache {
			for _, w := range pg {
				e := nativeEntry(w)
				if e.cellClass() == 0 {
					continue
				}
				run := base + (e.off()-base)&^(nativeRunSize-1)
				if e.off()+e.room() <= end && run+nativeRunSize > end {
					return true
				}
			}
		}
		return false
	}
	found := false
	for i := 0; i < 20000 && !found; i++ {
		obj := etf.Tuple{etf.Int(rng.Int63n(keys)), etf.Binary(randBytes(rng, rng.Intn(300)))}
		must(t, tab.Insert(obj))
		m.Insert(obj)
		found = i%50 == 0 && tab.nat.records > 0 && straddles(uint64(tab.fileEnd))
	}
	if !found {
		t.Fatalf("no cell's run reached past the end of the data in 20000 inserts")
	}
	killed := tmpFile(t, "killed.dets")
	must(t, os.WriteFile(killed, readFileT(t, path)[:tab.fileEnd], 0o644))
	st, err := Repair(killed, Options{}, nil)
	must(t, err)
	if st.ObjectsDropped != 0 {
		t.Errorf("repair dropped %d objects of a file no byte of which is damaged", st.ObjectsDropped)
	}
	rp := openT(t, killed, Options{Repair: NoRepair})
	checkModel(t, rp, m, keys)
}
