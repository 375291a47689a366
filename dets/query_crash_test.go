package dets

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	mdl "github.com/godets/godets/internal/model"
)

// TestCrashSelectDelete: SelectDelete and MatchDelete are as crash-safe as
// the other writes. A workload of inserts, syncs, reopens and deleting
// queries runs once on a recording crashfs; every crash image it can leave
// (at each fsync boundary and at random points, in every crashfs mode)
// must meet the assertions of TestCrashImages (see checkCrashImage): inside a
// deleting query each object is in its state before or after the query.
func TestCrashSelectDelete(t *testing.T) {
	seed := uint64(testSeed(t))
	seeds := 8
	if testing.Short() {
		seeds = 2
	}
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			st := make([]crashStats, len(crashfs.Modes))
			for si := range seeds {
				r := rand.New(rand.NewPCG(seed, uint64(si)<<8|uint64(kind)))
				cfs := crashfs.New()
				steps := queryCrashRun(t, cfs, kind, r)
				checkAllCrashImages(t, cfs, steps, r, crashfs.Modes, st, fmt.Sprintf("seed %d/%d", seed, si))
			}
			for mi, mode := range crashfs.Modes {
				s := st[mi]
				t.Logf("%s: %d images: %d opened clean, %d repaired", mode, s.cases, s.clean, s.repaired)
			}
		})
	}
}

// queryCrashRun runs the workload of TestCrashSelectDelete on a table in
// cfs and returns its steps, with the model's state around each.
func queryCrashRun(t *testing.T, cfs *crashfs.FS, kind Kind, r *rand.Rand) []workloadStep {
	tr := mdl.NewTracker(mdl.Kind(kind), 1)
	fsys := memFS{cfs}
	var steps []workloadStep
	step := func(what string, start int, pre, saved *mdl.Model, save bool) {
		ever := make(map[string]bool, len(tr.Ever))
		for e := range tr.Ever {
			ever[e] = true
		}
		steps = append(steps, workloadStep{op: workloadOp{what: what}, start: start, end: cfs.Ops(), pre: pre, post: tr.Cur.Clone(), savedBefore: saved, isSave: save, ever: ever})
	}
	opts := Options{Kind: kind, FS: fsys, Durability: workloadDurability}
	start := cfs.Ops()
	tab, err := Open(crashTablePath, opts)
	must(t, err)
	step("create", start, tr.Cur.Clone(), tr.Synced, false)
	for range 5 + r.IntN(6) {
		start, pre, saved := cfs.Ops(), tr.Cur.Clone(), tr.Synced
		what, save := "", false
		switch x := r.IntN(10); {
		case x < 4:
			var objs []etf.Term
			for range 5 + r.IntN(40) {
				objs = append(objs, selfCheckingObj(nil, r.IntN(30), r.IntN(4), r.IntN(300)))
			}
			tr.Inserted(objs...)
			tr.Cur.Insert(objs...)
			what, err = "insert", tab.Insert(objs...)
		case x < 6:
			// Delete the objects whose value is v, as a spec and as a
			// pattern; the model deletes what Go matched, objects that
			// a crash must leave before or after.
			v := etf.Int(r.IntN(4))
			matched := modelMatches(tr.Cur, func(o etf.Tuple) bool { return etf.Equal(o[1], v) })
			for _, o := range matched {
				tr.Cur.DeleteObject(o)
			}
			var n int
			if x < 5 {
				what = "selectdelete"
				n, err = tab.SelectDelete(etf.List{etf.Tuple{tup(etf.Atom("_"), etf.Atom("$1"), etf.Atom("_"), etf.Atom("_")),
					etf.List{tup(etf.Atom("=:="), etf.Atom("$1"), v)}, etf.List{etf.True}}})
			} else {
				what = "matchdelete"
				n, err = tab.MatchDelete(tup(etf.Atom("_"), v, etf.Atom("_"), etf.Atom("_")))
			}
			if err == nil && n != len(matched) {
				t.Fatalf("%s of value %v deleted %d, the model %d", what, v, n, len(matched))
			}
		case x < 8:
			// The delete-all shortcut, often right after a sync, when
			// the header says "closed properly" until it is cleared.
			what = "deleteall"
			want := tr.Cur.Len()
			tr.Cur.DeleteAllObjects()
			var n int
			if n, err = tab.MatchDelete(etf.Atom("_")); err == nil && n != want {
				t.Fatalf("MatchDelete('_') deleted %d, the model held %d", n, want)
			}
		case x < 9:
			what, save = "sync", true
			if err = tab.Sync(); err == nil {
				tr.Acked()
			}
		default:
			what, save = "reopen", true
			if err = tab.Close(); err == nil {
				tr.Acked()
				tab, err = Open(crashTablePath, opts)
			}
		}
		must(t, err)
		step(what, start, pre, saved, save)
	}
	start, pre, saved := cfs.Ops(), tr.Cur.Clone(), tr.Synced
	must(t, tab.Close())
	tr.Acked()
	step("close", start, pre, saved, true)
	return steps
}

// modelMatches returns the objects of m for which keep holds.
func modelMatches(m *mdl.Model, keep func(etf.Tuple) bool) []etf.Term {
	var out []etf.Term
	for _, k := range m.Keys() {
		for _, enc := range m.KeyObjects(k) {
			o, err := etf.Decode([]byte(enc))
			if err == nil && keep(o.(etf.Tuple)) {
				out = append(out, o)
			}
		}
	}
	return out
}
