package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	mdl "github.com/godets/godets/internal/model"
)

// Simulated power loss and process kill (docs/reliability.md §3): a workload
// runs once on a recording crashfs; then, for every fsync boundary and for
// random points between, the file system a crash at that point leaves is
// rebuilt in each crashfs mode and reopened.
//
// What otp9 can guarantee, and what is asserted (checkCrashImage):
//
//	A1 no panic; every Open error is typed (ErrNeedsRepair, ErrNotDETS, ...).
//	A2 NoRepair opens the image cleanly or returns ErrNeedsRepair; either
//	   way the file stays byte-identical. A clean open holds exactly the
//	   state of the last completed Sync/Close, or of the one in flight
//	   (which is the acked state). The save protocol (clear flag + fsync
//	   before the first change; free lists + fsync, then closed header +
//	   fsync) makes this hold in every mode.
//	A3 AutoRepair yields a table whose Check is clean, which reopens with
//	   NoRepair unchanged, and whose objects were all inserted at some point
//	   (nothing invented), except in the subset and torn modes, where an
//	   object that fails its own CRC is tolerated: otp9 objects carry no
//	   checksum, a bucket rewritten in place can tear inside an object, and
//	   when writes are reordered a stale ACTIVE bucket header (its FREE mark
//	   lost) can frame bytes that a later write put into the reused block.
//	A4 synced-only (power loss, nothing reordered past an fsync): the
//	   repaired content is exactly the last saved state (or the acked state
//	   when a save was in flight): nothing synced is lost, nothing later
//	   survives.
//	A5 all-written (process kill): at an operation boundary the repaired
//	   content is exactly the acked state; inside an operation every object
//	   is in the state before or after it, and every object in both states
//	   survives. duplicate_bag copy counts are not checked inside an
//	   operation: a crash during a bucket move leaves two ACTIVE copies that
//	   otp9 cannot tell apart (docs/repair.md §3).
//	   In torn512-junk (sectors may turn to zeros or noise) a junk header
//	   sector may make both opens refuse the file with a typed error, which
//	   then stays byte-identical.
//	A6 subset / torn512 (power loss with reordered writes): only A1-A3.
//	   otp9 writes buckets without a barrier between "write the new copy"
//	   and "mark the old FREE", and rewrites in place, so a synced object
//	   whose bucket was rewritten after the sync can be lost, and a deleted
//	   one can come back (docs/reliability.md §7: those guarantees need the native
//	   format). The losses are counted and logged.

const crashTablePath = "w.dets"

// workloadOp is one workload step.
type workloadOp struct {
	what string // insert, insertnew, delete, deleteobj, sync, reopen, deleteall
	objs []etf.Term
	key  etf.Term
}

func (o workloadOp) String() string {
	if len(o.objs) > 0 {
		return fmt.Sprintf("%s(%d objs, first key %v)", o.what, len(o.objs), o.objs[0].(etf.Tuple)[0])
	}
	if o.key != nil {
		return fmt.Sprintf("%s(%v)", o.what, o.key)
	}
	return o.what
}

// workloadDeleteAll adds delete_all_objects to the generated workloads.
var workloadDeleteAll = true

// workloadDurability is the Durability of the tables runWorkload opens.
var workloadDurability = Ordered

// genWorkload makes a workload of n steps: mostly single inserts and deletes on
// a small key space (so buckets are rewritten, moved and freed), batches
// that grow the table across segments, values crossing 512-byte sectors,
// syncs, close+reopen, and a rare delete_all_objects.
func genWorkload(r *rand.Rand, n int, growth bool) []workloadOp {
	var ops []workloadOp
	batchKey := 1000
	obj := func(k int) etf.Term {
		pad := r.IntN(40)
		switch r.IntN(10) {
		case 0:
			pad = 600 + r.IntN(600)
		case 1:
			if r.IntN(4) == 0 {
				pad = 3000
			}
		}
		return selfCheckingObj(nil, k, r.IntN(3), pad)
	}
	for range n {
		k := r.IntN(24)
		switch x := r.IntN(100); {
		case x < 40:
			ops = append(ops, workloadOp{what: "insert", objs: []etf.Term{obj(k)}})
		case x < 45 && growth:
			var objs []etf.Term
			for range 100 + r.IntN(200) {
				objs = append(objs, selfCheckingObj(nil, batchKey, 0, r.IntN(20)))
				batchKey++
			}
			ops = append(ops, workloadOp{what: "insert", objs: objs})
		case x < 52:
			ops = append(ops, workloadOp{what: "insertnew", objs: []etf.Term{obj(k)}})
		case x < 64:
			ops = append(ops, workloadOp{what: "delete", key: etf.Int(k)})
		case x < 72:
			ops = append(ops, workloadOp{what: "deleteobj", objs: []etf.Term{obj(k)}})
		case x < 86:
			ops = append(ops, workloadOp{what: "sync"})
		case x < 95:
			ops = append(ops, workloadOp{what: "reopen"})
		case x < 96 && workloadDeleteAll:
			ops = append(ops, workloadOp{what: "deleteall"})
		default:
			// Several objects under one key in one call.
			ops = append(ops, workloadOp{what: "insert", objs: []etf.Term{obj(k), obj(k), obj(k)}})
		}
	}
	return append(ops, workloadOp{what: "reopen"})
}

// workloadStep records one executed step: its crashfs op range and model states.
type workloadStep struct {
	op          workloadOp
	start, end  int        // crashfs.Ops() before and after
	pre, post   *mdl.Model // content before and after
	savedBefore *mdl.Model // last saved state before the step
	isSave      bool       // the step saves (sync, reopen's close)
	ever        map[string]bool
}

// runWorkload runs ops on a table in cfs (which must hold no table yet: step 0
// is the create) and returns the steps and the first error with its step
// index (-1 if none). After an error it stops. tune, if given, alters the
// table's tuning.
func runWorkload(t testing.TB, cfs *crashfs.FS, kind Kind, ops []workloadOp, tune ...func(*tuning)) (steps []workloadStep, tab *Table, failAt int, ferr error) {
	return runWorkloadFormat(t, cfs, kind, OTP9, ops, tune...)
}

// runWorkloadFormat is runWorkload for a table created in format.
func runWorkloadFormat(t testing.TB, cfs *crashfs.FS, kind Kind, format Format, ops []workloadOp, tune ...func(*tuning)) (steps []workloadStep, tab *Table, failAt int, ferr error) {
	tr := mdl.NewTracker(mdl.Kind(kind), 1)
	fsys := memFS{cfs}
	snapshot := func(op workloadOp, start int, pre, saved *mdl.Model, save bool) workloadStep {
		ever := make(map[string]bool, len(tr.Ever))
		for e := range tr.Ever {
			ever[e] = true
		}
		return workloadStep{op: op, start: start, end: cfs.Ops(), pre: pre, post: tr.Cur.Clone(), savedBefore: saved, isSave: save, ever: ever}
	}
	start := cfs.Ops()
	opts := Options{Kind: kind, FS: fsys, Durability: workloadDurability, Format: format}
	for _, change := range tune {
		opts = withTuning(opts, change)
	}
	tab, err := Open(crashTablePath, opts)
	steps = append(steps, snapshot(workloadOp{what: "create"}, start, tr.Cur.Clone(), tr.Synced, false))
	if err != nil {
		return steps, nil, 0, err
	}
	for _, op := range ops {
		start := cfs.Ops()
		pre, saved := tr.Cur.Clone(), tr.Synced
		tr.Inserted(op.objs...)
		var err error
		save := false
		switch op.what {
		case "insert":
			tr.Cur.Insert(op.objs...)
			err = tab.Insert(op.objs...)
		case "insertnew":
			want := tr.Cur.InsertNew(op.objs...)
			var got bool
			got, err = tab.InsertNew(op.objs...)
			if err == nil && got != want {
				t.Fatalf("InsertNew(%v) = %v, model says %v", op, got, want)
			}
		case "delete":
			tr.Cur.Delete(op.key)
			err = tab.Delete(op.key)
		case "deleteobj":
			tr.Cur.DeleteObject(op.objs[0])
			err = tab.DeleteObject(op.objs[0])
		case "sync":
			save = true
			if err = tab.Sync(); err == nil {
				tr.Acked()
			}
		case "reopen":
			save = true
			if err = tab.Close(); err == nil {
				tr.Acked()
				tab, err = Open(crashTablePath, Options{Kind: kind, FS: fsys, Durability: workloadDurability})
			} else {
				tab = nil
			}
		case "deleteall":
			tr.Cur.DeleteAllObjects()
			err = tab.DeleteAllObjects()
		}
		steps = append(steps, snapshot(op, start, pre, saved, save))
		if err != nil {
			return steps, tab, len(steps) - 1, err
		}
	}
	return steps, tab, -1, nil
}

// sortedContentsErr returns the sorted encodings of every object of tab.
// settledContents reads the contents of a just repaired (or reopened) table,
// runs Check, closes it, and checks that a NoRepair reopen finds the same
// contents. It returns the contents.
func settledContents(t *testing.T, fsys FS, tab *Table, what string) []string {
	t.Helper()
	got, err := sortedContentsErr(tab)
	if err != nil {
		t.Fatalf("%s: All after repair: %v", what, err)
	}
	if err := tab.Check(); err != nil {
		t.Fatalf("%s: Check after repair: %v", what, err)
	}
	if err := tab.Close(); err != nil {
		t.Fatalf("%s: Close after repair: %v", what, err)
	}
	again, err := Open(crashTablePath, Options{FS: fsys})
	if err != nil {
		t.Fatalf("%s: NoRepair reopen after repair: %v", what, err)
	}
	defer again.Close()
	if g2, _ := sortedContentsErr(again); !slices.Equal(g2, got) {
		t.Fatalf("%s: contents changed on reopen", what)
	}
	return got
}

func sortedContentsErr(tab *Table) ([]string, error) {
	if tab.lay.tag == tagNative {
		return sortedContentsByKeyErr(tab)
	}
	var out []string
	for o, err := range tab.All() {
		if err != nil {
			return nil, err
		}
		out = append(out, mdl.Enc(o))
	}
	slices.Sort(out)
	return out, nil
}

// sortedContentsByKeyErr is sortedContentsErr through Keys and Lookup, for a format
// whose All is not built yet (native, docs/format-native.md §16 step 5).
func sortedContentsByKeyErr(tab *Table) ([]string, error) {
	var keys []etf.Term
	for k, err := range tab.Keys() {
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	var out []string
	for _, k := range keys {
		objs, err := tab.Lookup(k)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, mdl.Enc(o))
		}
	}
	slices.Sort(out)
	return out, nil
}

// crashStats counts what the tolerant modes lost or tore.
type crashStats struct {
	cases, clean, repaired, lostSynced, torn, notDETS int
}

// crashPoint is where a crash point falls in a workload's steps.
type crashPoint struct {
	i                int          // the step in flight, or the last completed one at a boundary
	step             workloadStep // steps[i]
	boundary         bool         // k falls between two steps
	pre, post, saved *mdl.Model
	cleanOK          [][]string // the clean states NoRepair may open
	shortOK          bool       // the file may be too short to be a table
}

// locateCrash finds crash point k in steps.
func locateCrash(t *testing.T, steps []workloadStep, k int, what string) crashPoint {
	t.Helper()
	// steps[i] is the one in flight (start <= k < end), or the last
	// completed one when k is a boundary.
	i, boundary := -1, false
	for j, st := range steps {
		if st.start <= k && k < st.end {
			i = j
			break
		}
	}
	if k > steps[len(steps)-1].end {
		t.Fatalf("%s: crash point %d after the workload's last step (%d)", what, k, steps[len(steps)-1].end)
	}
	if i < 0 {
		boundary = true
		for j := range steps {
			if steps[j].end <= k {
				i = j
			}
		}
	}
	s := steps[i]
	pre, post := s.pre, s.post
	saved := s.savedBefore
	if boundary {
		pre = post
		if s.isSave {
			saved = post
		}
	}
	// The clean states NoRepair may open: the last completed save, or the
	// one in flight.
	cleanOK := [][]string{saved.Objects()}
	if s.isSave {
		cleanOK = append(cleanOK, s.pre.Objects())
	}
	// A crash inside the create, or inside delete_all_objects (which
	// truncates the file to 0 before writing the new header), may leave a
	// file too short to be a table.
	shortOK := s.op.what == "create" || s.op.what == "deleteall"
	return crashPoint{i: i, step: s, boundary: boundary, pre: pre, post: post, saved: saved, cleanOK: cleanOK, shortOK: shortOK}
}

// checkCrashImage checks one crash image (see the invariants at the top). steps
// are the workload's steps; the crash happened after k crashfs ops.
func checkCrashImage(t *testing.T, img *crashfs.FS, steps []workloadStep, k int, mode crashfs.Mode, st *crashStats, what string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v\n%s", what, r, debug.Stack())
		}
	}()
	st.cases++
	c := locateCrash(t, steps, k, what)
	s, boundary, pre, post, saved, cleanOK, shortOK := c.step, c.boundary, c.pre, c.post, c.saved, c.cleanOK, c.shortOK

	fsys := memFS{img}
	before := img.Get(crashTablePath)
	exists := img.Exists(crashTablePath)
	if !exists {
		// Only before the file's first fsync made its name durable.
		if saved.Len() > 0 {
			t.Fatalf("%s: the table file is gone after a save", what)
		}
		return
	}
	tab, err := Open(crashTablePath, Options{FS: fsys})
	switch {
	case err == nil:
		got, cerr := sortedContentsErr(tab)
		if cerr != nil {
			t.Fatalf("%s: clean open then All: %v", what, cerr)
		}
		if cerr := tab.Check(); cerr != nil {
			t.Fatalf("%s: clean open then Check: %v", what, cerr)
		}
		if cerr := tab.Close(); cerr != nil {
			t.Fatalf("%s: Close: %v", what, cerr)
		}
		okState := false
		for _, want := range cleanOK {
			okState = okState || slices.Equal(got, want)
		}
		if !okState {
			t.Fatalf("%s: NoRepair opened a clean file with %d objects; the last save had %d (in flight: %s)", what, len(got), len(cleanOK[0]), s.op)
		}
		st.clean++
	case errors.Is(err, ErrNeedsRepair):
	case errors.Is(err, ErrNotDETS) && shortOK:
		st.notDETS++
	case mode == crashfs.Torn512Junk && isTypedOpenError(err):
		// A junk sector 0 can make the header anything.
		st.notDETS++
	default:
		t.Fatalf("%s: NoRepair: %v (in flight: %s)", what, err, s.op)
	}
	if !bytes.Equal(img.Get(crashTablePath), before) {
		t.Fatalf("%s: NoRepair open changed the file", what)
	}
	if err != nil {
		// Repair.
		tab, err = Open(crashTablePath, Options{FS: fsys, Repair: AutoRepair})
		if err != nil {
			if (errors.Is(err, ErrNotDETS) && shortOK) || (mode == crashfs.Torn512Junk && isTypedOpenError(err)) {
				if !bytes.Equal(img.Get(crashTablePath), before) {
					t.Fatalf("%s: refused AutoRepair changed the file", what)
				}
				return
			}
			t.Fatalf("%s: AutoRepair: %v (in flight: %s)", what, err, s.op)
		}
		st.repaired++
	} else if tab, err = Open(crashTablePath, Options{FS: fsys}); err != nil {
		t.Fatalf("%s: reopen of a clean file: %v", what, err)
	}
	got := settledContents(t, fsys, tab, what)
	if n := img.Names(); len(n) != 1 {
		t.Fatalf("%s: files left: %v", what, n)
	}

	// A3: nothing invented.
	torn := mode == crashfs.Torn512 || mode == crashfs.Torn512Junk || mode == crashfs.Subset
	for _, e := range got {
		if s.ever[e] {
			continue
		}
		o, derr := etf.Decode([]byte(e))
		if derr == nil && torn && !selfConsistent(t, o) {
			st.torn++
			continue
		}
		t.Fatalf("%s: the recovered table holds an object never inserted: %v (in flight: %s)", what, o, s.op)
	}
	switch mode {
	case crashfs.SyncedOnly: // A4
		okState := false
		for _, want := range cleanOK {
			okState = okState || slices.Equal(got, want)
		}
		if !okState {
			t.Fatalf("%s: recovered %d objects (missing %d synced, %d extra); last save had %d (in flight: %s)",
				what, len(got), len(mdl.Missing(cleanOK[0], got)), len(mdl.Missing(got, cleanOK[0])), len(cleanOK[0]), s.op)
		}
	case crashfs.AllWritten: // A5
		if boundary || s.isSave {
			if want := pre.Objects(); !slices.Equal(got, want) {
				t.Fatalf("%s: at a step boundary recovered %d objects, acked %d (missing %v, extra %v; last step %s)",
					what, len(got), len(want), showEncodings(mdl.Missing(want, got)), showEncodings(mdl.Missing(got, want)), s.op)
			}
			break
		}
		either := map[string]bool{}
		for _, e := range pre.Objects() {
			either[e] = true
		}
		postSet := map[string]bool{}
		for _, e := range post.Objects() {
			either[e] = true
			postSet[e] = true
		}
		have := map[string]bool{}
		for _, e := range got {
			have[e] = true
			if !either[e] {
				t.Fatalf("%s: recovered an object in neither the state before nor after %s: %v", what, s.op, showEncodings([]string{e}))
			}
		}
		for _, e := range pre.Objects() {
			if postSet[e] && !have[e] {
				t.Fatalf("%s: lost an object present before and after %s: %v", what, s.op, showEncodings([]string{e}))
			}
		}
	default: // A6: count losses of synced objects
		if len(mdl.Missing(saved.Objects(), got)) > 0 {
			st.lostSynced++
		}
	}
}

func showEncodings(encs []string) []string {
	var out []string
	for _, e := range encs {
		o, err := etf.Decode([]byte(e))
		if err != nil {
			out = append(out, "undecodable")
			continue
		}
		tu := o.(etf.Tuple)
		out = append(out, fmt.Sprintf("{%v,%v,<%d bytes>}", tu[0], tu[1], len(tu[2].(etf.Binary))))
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d more", len(out)-5))
	}
	return out
}

// crashPoints returns the crash points of a log: after every sync and syncdir,
// just before each, and nRand random points.
func crashPoints(log []crashfs.Record, r *rand.Rand, nRand int) []int {
	set := map[int]bool{len(log): true}
	for i, rec := range log {
		if rec.Kind == crashfs.OpSync || rec.Kind == crashfs.OpSyncDir || rec.Kind == crashfs.OpRename {
			set[i] = true
			set[i+1] = true
		}
	}
	for range nRand {
		set[1+r.IntN(len(log))] = true
	}
	var out []int
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkAllCrashImages checks (checkCrashImage) the crash images of cfs's log at its
// crashPoints, in each of modes; st holds the counts of each mode and label
// names the workload in failures.
func checkAllCrashImages(t *testing.T, cfs *crashfs.FS, steps []workloadStep, r *rand.Rand, modes []crashfs.Mode, st []crashStats, label string) {
	t.Helper()
	log := cfs.Log()
	for _, k := range crashPoints(log, r, 10) {
		for mi, mode := range modes {
			what := fmt.Sprintf("%s crash after op %d of %d (%s)", label, k, len(log), mode)
			checkCrashImage(t, cfs.Image(k, mode, r), steps, k, mode, &st[mi], what)
		}
	}
}

// TestCrashImages is C3: for each kind and several seeds, a workload of up
// to 40 steps, crash images at every persistence point and at random
// points, in every crashfs mode.
func TestCrashImages(t *testing.T) { testCrashImagesInModes(t, crashfs.Modes) }

// TestCrashImagesLikeOTP is TestCrashImages for Durability LikeOTP, whose
// guarantee covers a killed process (every written byte survives) and not
// a power loss.
func TestCrashImagesLikeOTP(t *testing.T) {
	workloadDurability = LikeOTP
	t.Cleanup(func() { workloadDurability = Ordered })
	testCrashImagesInModes(t, []crashfs.Mode{crashfs.AllWritten})
}

func testCrashImagesInModes(t *testing.T, modes []crashfs.Mode) {
	seed := uint64(testSeed(t))
	seeds := 24
	if testing.Short() {
		seeds = 4
	}
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			st := make([]crashStats, len(modes))
			for si := range seeds {
				r := rand.New(rand.NewPCG(seed, uint64(si)<<8|uint64(kind)))
				ops := genWorkload(r, 10+r.IntN(30), si%2 == 0)
				cfs := crashfs.New()
				steps, tab, failAt, err := runWorkload(t, cfs, kind, ops)
				if err != nil {
					t.Fatalf("seed %d/%d: workload failed at step %d: %v", seed, si, failAt, err)
				}
				tab.Close()
				checkAllCrashImages(t, cfs, steps, r, modes, st, fmt.Sprintf("seed %d/%d", seed, si))
			}
			for mi, mode := range modes {
				s := st[mi]
				t.Logf("%s: %d images: %d opened clean, %d repaired, %d too short to be a table; %d lost synced objects, %d torn objects",
					mode, s.cases, s.clean, s.repaired, s.notDETS, s.lostSynced, s.torn)
			}
		})
	}
}

// TestCrashDeleteAllObjectsClean: DeleteAllObjects on a clean (just synced)
// table, then a crash. A2 demands that a file whose header says "closed
// properly" holds exactly the last saved state. Today DeleteAllObjects
// truncates and rewrites the file without first clearing the closed flag
// and fsyncing (markDirty), so an image that kept the old header sector
// (torn512, subset) opens cleanly over new bytes: wrong data or
// ErrCorrupt on read. And initLayout truncates to 0 before writing the new
// header, so a crash (even a process kill) can leave a file with no or a
// zeroed header, which no open mode accepts. Fix: call t.markDirty() at
// the start of DeleteAllObjects (ops.go), and in initLayout write the new
// header and parts over the old ones before truncating to their length
// (table.go), so that a valid not-closed header is always on disk.
func TestCrashDeleteAllObjectsClean(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(testSeed(t)), 9))
	for _, kind := range allKinds {
		var ops []workloadOp
		for k := range 40 {
			ops = append(ops, workloadOp{what: "insert", objs: []etf.Term{selfCheckingObj(t, k, 1, 30)}})
		}
		ops = append(ops, workloadOp{what: "sync"}, workloadOp{what: "deleteall"},
			workloadOp{what: "insert", objs: []etf.Term{selfCheckingObj(t, 7, 2, 30)}}, workloadOp{what: "reopen"})
		cfs := crashfs.New()
		steps, tab, _, err := runWorkload(t, cfs, kind, ops)
		if err != nil {
			t.Fatal(err)
		}
		tab.Close()
		var st crashStats
		for _, k := range crashPoints(cfs.Log(), r, 20) {
			for _, mode := range []crashfs.Mode{crashfs.AllWritten, crashfs.Subset, crashfs.Torn512} {
				for try := range 8 {
					what := fmt.Sprintf("%s: crash after op %d (%s, try %d)", kind, k, mode, try)
					checkCrashImage(t, cfs.Image(k, mode, r), steps, k, mode, &st, what)
				}
			}
		}
	}
}

// TestDurabilityFsyncs counts the fsyncs of a write session (open, insert,
// close) and of open, insert, Sync: LikeOTP drops the one that orders the
// data before the closed header, and nothing else.
func TestDurabilityFsyncs(t *testing.T) {
	syncs := func(log []crashfs.Record) int {
		n := 0
		for _, r := range log {
			if r.Kind == crashfs.OpSync {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		d           Durability
		close, sync int
	}{{Ordered, 2, 3}, {LikeOTP, 1, 2}} {
		cfs := crashfs.New()
		fsys := memFS{cfs}
		opts := Options{FS: fsys, Durability: tc.d}
		tab, err := Open(crashTablePath, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		step := func(what string, want int, end func(*Table) error, i int) {
			t.Helper()
			from := len(cfs.Log())
			tab, err := Open(crashTablePath, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tab.Insert(tup(etf.Int(i), etf.Int(i))); err != nil {
				t.Fatal(err)
			}
			if err := end(tab); err != nil {
				t.Fatal(err)
			}
			tab.Close()
			if got := syncs(cfs.Log()[from:]); got != want {
				t.Errorf("%s, %s: %d fsyncs, want %d", tc.d, what, got, want)
			}
		}
		step("open, insert, close", tc.close, func(*Table) error { return nil }, 1)
		step("open, insert, Sync", tc.sync, (*Table).Sync, 2)
		tab, err = Open(crashTablePath, Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		if objs, err := tab.Lookup(etf.Int(2)); err != nil || len(objs) != 1 {
			t.Fatalf("%s: reopened: %v %v", tc.d, objs, err)
		}
		mustCheck(t, tab)
		tab.Close()
	}
}
