package dets

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	mdl "github.com/godets/godets/internal/model"
)

// I/O errors (docs/reliability.md §3): a workload (create, inserts that
// grow the table across segments, deletes, syncs, close+reopen) runs with
// an injected EIO or ENOSPC at the n-th write, sync or truncate, for every
// n up to the workload's count (sampled above 80 writes), once-only and
// persistent. Invariants (runFaultCase):
//
//	F1 no panic; the failing call returns an error matching the injected
//	   errno (errors.Is through the *fs.PathError), not a corruption error.
//	F2 sticky error mode (Table docs): every later call, reads included,
//	   returns that error; Close returns it and writes nothing (the file is
//	   not saved, so it needs repair); the FS records no operation after the
//	   failure.
//	F3 with the fault cleared (space freed), AutoRepair opens the file as
//	   the process left it; Check is clean; every object was inserted at
//	   some point; every object present before and after the failed call is
//	   there, and every object is in the state before or after it (A5 of
//	   crash_test.go); at most one of "before"/"after" holds for the failed
//	   call's keys. NoRepair then reopens it.
//	F4 a power loss after the failure (the synced-only image): after
//	   repair the content is exactly the last saved state (or the state
//	   acked by a save in flight): a full disk never loses synced objects.

// faultWorkload is a fixed-shape workload with growth, per kind.
func faultWorkload(r *rand.Rand) []workloadOp {
	var ops []workloadOp
	for k := range 6 {
		ops = append(ops, workloadOp{what: "insert", objs: []etf.Term{selfCheckingObj(nil, k, 0, 20+k*150)}})
	}
	ops = append(ops, workloadOp{what: "sync"})
	var batch []etf.Term
	for k := range 300 { // grows past 256 slots: a new segment and splits
		batch = append(batch, selfCheckingObj(nil, 100+k, r.IntN(2), r.IntN(30)))
	}
	ops = append(ops, workloadOp{what: "insert", objs: batch},
		workloadOp{what: "delete", key: etf.Int(2)},
		workloadOp{what: "deleteobj", objs: []etf.Term{selfCheckingObj(nil, 3, 0, 20+3*150)}},
		workloadOp{what: "insert", objs: []etf.Term{selfCheckingObj(nil, 1, 1, 700)}},
		workloadOp{what: "insertnew", objs: []etf.Term{selfCheckingObj(nil, 50, 1, 10)}},
		workloadOp{what: "reopen"},
		workloadOp{what: "insert", objs: []etf.Term{selfCheckingObj(nil, 4, 2, 5)}},
		workloadOp{what: "sync"},
		workloadOp{what: "delete", key: etf.Int(100)},
		workloadOp{what: "reopen"})
	return ops
}

type faultStats struct{ runs, openFail, failed int }

// runFaultCase runs ops with one fault and checks F1-F4.
func runFaultCase(t *testing.T, kind Kind, ops []workloadOp, opk crashfs.OpKind, n int, errno error, persistent bool, st *faultStats) (fired bool) {
	what := fmt.Sprintf("%s: %v at %s #%d (persistent %v)", kind, errno, opk, n, persistent)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v\n%s", what, r, debug.Stack())
		}
	}()
	cfs := crashfs.New()
	cfs.Inject(opk, n, errno, persistent)
	steps, tab, failAt, err := runWorkload(t, cfs, kind, ops)
	st.runs++
	if err == nil {
		if len(cfs.Fired()) != 0 {
			t.Fatalf("%s: a fault fired but every call succeeded", what)
		}
		tab.Close()
		return false
	}
	st.failed++
	// F1.
	if !errors.Is(err, errno) {
		t.Fatalf("%s: step %d (%s) returned %v, which does not match the injected errno", what, failAt, steps[failAt].op, err)
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: an I/O error reported as corruption: %v", what, err)
	}
	// F2.
	if tab != nil {
		before := cfs.Ops()
		if _, lerr := tab.Lookup(etf.Int(1)); !errors.Is(lerr, errno) {
			t.Fatalf("%s: Lookup after the failure: %v, want the sticky error", what, lerr)
		}
		if ierr := tab.Insert(selfCheckingObj(t, 9999, 0, 1)); !errors.Is(ierr, errno) {
			t.Fatalf("%s: Insert after the failure: %v, want the sticky error", what, ierr)
		}
		if serr := tab.Sync(); !errors.Is(serr, errno) {
			t.Fatalf("%s: Sync after the failure: %v, want the sticky error", what, serr)
		}
		if cerr := tab.Close(); !errors.Is(cerr, errno) {
			t.Fatalf("%s: Close after the failure: %v, want the sticky error", what, cerr)
		}
		if after := cfs.Ops(); after != before {
			t.Fatalf("%s: %d file operations after the failure (Close must not save): %v", what, after-before, cfs.Log()[before:])
		}
	} else if failAt == 0 {
		st.openFail++
	}
	cfs.ClearFaults()
	s := steps[failAt]
	// F4: power loss now.
	img := cfs.Crash(crashfs.SyncedOnly, nil)
	if img.Exists(crashTablePath) {
		got := repairedContents(t, img, what+" (synced-only image)")
		if got != nil {
			want := [][]string{s.savedBefore.Objects()}
			if s.isSave {
				want = append(want, s.pre.Objects())
			}
			if !slices.Equal(got, want[0]) && (len(want) == 1 || !slices.Equal(got, want[1])) {
				t.Fatalf("%s: power loss after the failure: %d objects, last save had %d (missing %v)", what, len(got), len(want[0]), showEncodings(mdl.Missing(want[0], got)))
			}
		}
	} else if s.savedBefore.Len() > 0 {
		t.Fatalf("%s: the table file is not durable after a save", what)
	}
	// F3: the process goes on.
	if !cfs.Exists(crashTablePath) {
		if failAt != 0 {
			t.Fatalf("%s: the table file vanished", what)
		}
		return true
	}
	got := repairedContents(t, cfs, what)
	if got == nil {
		return true
	}
	either, postSet, have := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range s.pre.Objects() {
		either[e] = true
	}
	for _, e := range s.post.Objects() {
		either[e] = true
		postSet[e] = true
	}
	for _, e := range got {
		have[e] = true
		if !either[e] {
			t.Fatalf("%s: after repair an object in neither the state before nor after %s: %v", what, s.op, showEncodings([]string{e}))
		}
	}
	for _, e := range s.pre.Objects() {
		if postSet[e] && !have[e] {
			t.Fatalf("%s: after repair lost an object present before and after %s: %v", what, s.op, showEncodings([]string{e}))
		}
	}
	return true
}

// repairedContents opens crashTablePath in cfs with AutoRepair, checks it, reopens
// it with NoRepair and returns its sorted object encodings. It returns nil
// when the file is too short to be a table (a failure inside the create).
func repairedContents(t *testing.T, cfs *crashfs.FS, what string) []string {
	t.Helper()
	fsys := memFS{cfs}
	tab, err := Open(crashTablePath, Options{FS: fsys, Repair: AutoRepair})
	if err != nil {
		if errors.Is(err, ErrNotDETS) && len(cfs.Get(crashTablePath)) < headerEnd {
			return nil
		}
		t.Fatalf("%s: AutoRepair: %v", what, err)
	}
	got := settledContents(t, fsys, tab, what)
	if got == nil {
		got = []string{}
	}
	return got
}

// TestFaultInjection is C11 for each kind.
func TestFaultInjection(t *testing.T) {
	seed := uint64(testSeed(t))
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			ops := faultWorkload(rand.New(rand.NewPCG(seed, uint64(kind))))
			// Count the operations of a clean run.
			dry := crashfs.New()
			if _, tab, _, err := runWorkload(t, dry, kind, ops); err != nil {
				t.Fatal(err)
			} else {
				tab.Close()
			}
			count := map[crashfs.OpKind]int{}
			for _, r := range dry.Log() {
				count[r.Kind]++
			}
			t.Logf("workload: %d writes, %d syncs, %d truncates", count[crashfs.OpWrite], count[crashfs.OpSync], count[crashfs.OpTruncate])
			var st faultStats
			for _, opk := range []crashfs.OpKind{crashfs.OpWrite, crashfs.OpSync, crashfs.OpTruncate} {
				stride := max(1, count[opk]/80)
				if testing.Short() {
					stride = max(1, count[opk]/15)
				}
				for n := 1; n <= count[opk]; n++ {
					if n > 80 && n%stride != 0 && n != count[opk] {
						continue
					}
					for _, c := range []struct {
						errno      error
						persistent bool
					}{{syscall.EIO, false}, {syscall.ENOSPC, true}} {
						if !runFaultCase(t, kind, ops, opk, n, c.errno, c.persistent, &st) {
							t.Fatalf("%s #%d of %d never fired", opk, n, count[opk])
						}
					}
				}
			}
			t.Logf("%d runs, %d failed as injected, %d in the create", st.runs, st.failed, st.openFail)
		})
	}
}
