package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	mdl "github.com/godets/godets/internal/model"
)

// Crash images of native tables (docs/format-native.md §15.3): the
// workloads of crash_test.go (genWorkload, runWorkloadFormat) on native tables, every
// image opened NoRepair and then AutoRepair, which recovers from the log
// (§11.2). What native promises, and every image is held to (ncImage):
//
//	N1 no panic; NoRepair opens the image clean, holding exactly the last
//	   save (or the one in flight), or refuses it with ErrNeedsRepair and
//	   leaves it byte-identical. Only a crash inside the create may leave a
//	   file no open accepts (ErrNotDETS, or no valid meta), byte-identical.
//	N2 AutoRepair opens it; Check is clean; a NoRepair reopen finds the same
//	   objects; nothing but the table file is left.
//	N3 nothing invented: every object was inserted at some point.
//	N4 the state is a prefix: the state after the last completed save, or
//	   after a later step, or between two consecutive steps key by key
//	   (each key as before or as after the step; a group is one slot, so
//	   a prefix of a step's groups is such a mix). Compared as multisets
//	   per key, so duplicate_bag counts are exact, a set holds its newest
//	   synced version, nothing acknowledged by a Sync or Close is lost and
//	   nothing deleted before it comes back.
//	N5 all-written (a process kill): exactly the acknowledged state, or
//	   inside a step each key before or after it.
//	N6 synced-only: exactly the last save (or the one in flight).
//
// The power-loss modes (subset, torn512, torn4096, zero-tail) are held to
// N1-N4 with no exception: that is what the log, the checksums and the
// quarantine buy over otp9 (crash_test.go's A6).

// ncModes are the modes of §15.3. Torn512Junk is not among them: a device
// that garbles bytes it was not asked to write is outside the guarantees
// (§10.4).
var ncModes = []crashfs.Mode{crashfs.SyncedOnly, crashfs.AllWritten, crashfs.Subset, crashfs.Torn512, crashfs.Torn4096, crashfs.ZeroTail}

// ncStats counts, per mode, what the native images did.
type ncStats struct {
	cases, clean, recovered, withCut, inCreate int
	withGrowth                                 int // recoveries that replayed a growth step
	syncedKept                                 int // objects of the last save found, summed over images
	latest, earlier                            int // images at the newest reachable state, or at an earlier prefix
}

func (s ncStats) String() string {
	return fmt.Sprintf("%d images: %d opened clean, %d recovered (%d with groups cut, %d replaying growth), %d refused inside the create; "+
		"%d synced objects checked and kept, 0 invented, 0 resurrected; %d at the newest state, %d at an earlier prefix of later steps",
		s.cases, s.clean, s.recovered, s.withCut, s.withGrowth, s.inCreate, s.syncedKept, s.latest, s.earlier)
}

// ncWorkload is genWorkload's workload; with grow, one batch takes the table
// past its first 1,024 keys, so that growth steps (512 slots each, one log
// group) are among the writes a crash cuts.
func ncWorkload(r *rand.Rand, n int, growth, grow bool) []workloadOp {
	ops := genWorkload(r, n, growth)
	if !grow {
		return ops
	}
	var objs []etf.Term
	for i := range 1100 {
		objs = append(objs, selfCheckingObj(nil, 100000+i, 0, r.IntN(20)))
	}
	at := r.IntN(len(ops))
	return slices.Insert(ops, at, workloadOp{what: "insert", objs: objs})
}

// ncSaves marks delete_all_objects as a save: on native it is a durable
// checkpoint of an empty tree (docs/format-native.md §10.2), where otp9
// just rewrites the file. The steps after it have its state as their
// last save.
func ncSaves(steps []workloadStep) []workloadStep {
	var saved *mdl.Model
	for i := range steps {
		if saved != nil {
			steps[i].savedBefore = saved
		}
		if steps[i].op.what == "deleteall" {
			steps[i].isSave = true
			saved = steps[i].post
		} else if steps[i].isSave && saved != nil {
			saved = steps[i].post
		}
	}
	return steps
}

// ncPoints is crashPoints plus every point inside a Sync or Close: a crash
// at each step of a checkpoint.
func ncPoints(log []crashfs.Record, steps []workloadStep, r *rand.Rand, nRand int) []int {
	set := map[int]bool{}
	for _, k := range crashPoints(log, r, nRand) {
		set[k] = true
	}
	for _, s := range steps {
		if s.isSave {
			for k := s.start; k <= s.end; k++ {
				set[k] = true
			}
		}
	}
	return slices.Sorted(func(yield func(int) bool) {
		for k := range set {
			if !yield(k) {
				return
			}
		}
	})
}

// TestNativeCrashImages: for each kind and several seeds, a workload of up
// to 40 steps on a native table, crash images at every persistence point,
// at every point of every checkpoint and at random points, in the six
// modes of §15.3. Seeded: rerun with -seed.
func TestNativeCrashImages(t *testing.T) {
	seed := uint64(testSeed(t))
	first, seeds := 0, 8 // about 6,900 images
	if testing.Short() {
		first, seeds = 1, 2 // one seed, without the slow growth batch (about 1,000 images)
	}
	total := 0
	t.Cleanup(func() {
		t.Logf("native crash images: %d in all", total)
		if !testing.Short() && !t.Failed() && total < 5000 {
			t.Errorf("%d native crash images, below the 5,000 of §15.3", total)
		}
	})
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			st := make([]ncStats, len(ncModes))
			defer func() {
				for _, s := range st {
					total += s.cases
				}
			}()
			for si := first; si < seeds; si++ {
				r := rand.New(rand.NewPCG(seed, uint64(si)<<8|uint64(kind)|0x80))
				ops := ncWorkload(r, 10+r.IntN(30), si%2 == 0, si%4 == 0) // growth images are the slow ones
				cfs := crashfs.New()
				steps, tab, failAt, err := runWorkloadFormat(t, cfs, kind, Native, ops)
				steps = ncSaves(steps)
				if err != nil {
					t.Fatalf("seed %d/%d: workload failed at step %d: %v", seed, si, failAt, err)
				}
				must(t, tab.Close())
				log := cfs.Log()
				for _, k := range ncPoints(log, steps, r, 10) {
					for mi, img := range cfs.Images(k, ncModes, r) {
						what := fmt.Sprintf("seed %d/%d crash after op %d of %d (%s)", seed, si, k, len(log), ncModes[mi])
						ncImage(t, img, steps, k, ncModes[mi], &st[mi], what)
					}
				}
			}
			for mi, mode := range ncModes {
				t.Logf("native %s %s: %s", kind, mode, st[mi])
			}
		})
	}
}

// ncImage checks one native crash image (N1-N6) and returns the objects
// the recovered table holds, or nil for an image refused inside the create.
func ncImage(t *testing.T, img *crashfs.FS, steps []workloadStep, k int, mode crashfs.Mode, st *ncStats, what string) []string {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v\n%s", what, r, debug.Stack())
		}
	}()
	st.cases++
	c := locateCrash(t, steps, k, what)
	if c.step.op.what == "deleteall" && !c.boundary {
		// A checkpoint of an empty tree in flight: its meta may be there.
		c.cleanOK = append(c.cleanOK, c.step.post.Objects())
	}
	inCreate := c.step.op.what == "create"
	fsys := memFS{img}
	if !img.Exists(crashTablePath) {
		if !inCreate {
			t.Fatalf("%s: the table file is gone", what)
		}
		st.inCreate++
		return nil
	}
	before := img.Get(crashTablePath)
	unchanged := func(how string) {
		if !bytes.Equal(img.Get(crashTablePath), before) {
			t.Fatalf("%s: %s changed the file", what, how)
		}
	}
	// A create that did not finish leaves no valid meta, or a short file:
	// a repair case that native's full repair (step 7) will take.
	createRefusal := func(err error) bool {
		return inCreate && (errors.Is(err, ErrNotDETS) || errors.Is(err, ErrNeedsRepair) || errors.Is(err, ErrNotSupported))
	}
	tab, err := Open(crashTablePath, Options{FS: fsys})
	switch {
	case err == nil:
		got, cerr := sortedContentsErr(tab)
		if cerr != nil {
			t.Fatalf("%s: clean open, then reading: %v", what, cerr)
		}
		if cerr := tab.Check(); cerr != nil {
			t.Fatalf("%s: clean open, then Check: %v", what, cerr)
		}
		must(t, tab.Close())
		if !slices.ContainsFunc(c.cleanOK, func(want []string) bool { return slices.Equal(got, want) }) {
			t.Fatalf("%s: NoRepair opened a clean file with %d objects; the last save had %d (in flight: %s)", what, len(got), len(c.cleanOK[0]), c.step.op)
		}
		st.clean++
	case errors.Is(err, ErrNeedsRepair):
	case createRefusal(err):
	default:
		t.Fatalf("%s: NoRepair: %v (in flight: %s)", what, err, c.step.op)
	}
	unchanged("a NoRepair open")
	if err != nil {
		tab, err = Open(crashTablePath, Options{FS: fsys, Repair: AutoRepair})
		if err != nil {
			if createRefusal(err) {
				unchanged("a refused AutoRepair")
				st.inCreate++
				return nil
			}
			t.Fatalf("%s: AutoRepair: %v (in flight: %s)", what, err, c.step.op)
		}
		if rs, ok, _ := tab.Recovery(); ok {
			st.recovered++
			if rs.GroupsCut > 0 {
				st.withCut++
			}
			if rs.Grown > 0 {
				st.withGrowth++
			}
		}
	} else if tab, err = Open(crashTablePath, Options{FS: fsys}); err != nil {
		t.Fatalf("%s: reopen of a clean file: %v", what, err)
	}
	got := settledContents(t, fsys, tab, what)
	if n := img.Names(); len(n) != 1 {
		t.Fatalf("%s: files left: %v", what, n)
	}
	ncCheckState(t, got, steps, c, k, mode, st, what)
	return got
}

// ncCheckState checks N3-N6 for the objects got of an image crashed at k.
func ncCheckState(t *testing.T, got []string, steps []workloadStep, c crashPoint, k int, mode crashfs.Mode, st *ncStats, what string) {
	t.Helper()
	for _, e := range got {
		if !c.step.ever[e] {
			t.Fatalf("%s: the recovered table holds an object never inserted: %v (in flight: %s)", what, showEncodings([]string{e}), c.step.op)
		}
	}
	// The reachable states: after the last completed save, after each
	// later step, up to the one in flight (whose writes may all be there).
	js := 0
	for j := 0; j <= c.i; j++ {
		if steps[j].isSave && steps[j].end <= k {
			js = j
		}
	}
	var states []*mdl.Model
	for j := js; j <= c.i; j++ {
		states = append(states, steps[j].post)
	}
	byKey := ncByKey(got)
	match := -1 // the last j with got a key-wise mix of states[j] and states[j+1]
	for j := range states {
		nxt := states[min(j+1, len(states)-1)]
		if ncMix(byKey, states[j], nxt) {
			match = j
		}
	}
	if match < 0 {
		saved := steps[js].post.Objects()
		t.Fatalf("%s: %d objects, no prefix of the steps after the last save (%s, %d objects; missing %v, extra %v; in flight: %s)",
			what, len(got), steps[js].op, len(saved), showEncodings(mdl.Missing(saved, got)), showEncodings(mdl.Missing(got, saved)), c.step.op)
	}
	last := len(states) - 1
	switch {
	case mode == crashfs.AllWritten && match < last-1, mode == crashfs.AllWritten && c.boundary && match != last:
		t.Fatalf("%s: a process kill lost acknowledged steps: state of step %d of %d after the save (in flight: %s)", what, match, last, c.step.op)
	case mode == crashfs.SyncedOnly && !slices.ContainsFunc(c.cleanOK, func(want []string) bool { return slices.Equal(got, want) }):
		t.Fatalf("%s: synced-only image recovered %d objects, not the last save's %d (in flight: %s)", what, len(got), len(c.cleanOK[0]), c.step.op)
	}
	if match >= last-1 {
		st.latest++
	} else {
		st.earlier++
	}
	st.syncedKept += steps[js].post.Len()
}

// ncByKey groups sorted object encodings by the encoding of their key
// (position 1).
func ncByKey(objs []string) map[string][]string {
	out := map[string][]string{}
	for _, e := range objs {
		o, err := etf.Decode([]byte(e))
		if err != nil {
			panic(err)
		}
		k := mdl.Enc(o.(etf.Tuple)[0])
		out[k] = append(out[k], e)
	}
	return out
}

// ncMix reports whether every key holds in got exactly its objects of a or
// exactly those of b.
func ncMix(got map[string][]string, a, b *mdl.Model) bool {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for _, k := range a.Keys() {
		keys[k] = true
	}
	for _, k := range b.Keys() {
		keys[k] = true
	}
	for k := range keys {
		g := got[k]
		if !slices.Equal(g, a.KeyObjects(k)) && !slices.Equal(g, b.KeyObjects(k)) {
			return false
		}
	}
	return true
}

// TestNativeCrashInRecovery: a crash at every step of a recovery, then
// recovery again (§11.2 step 5: the recovery's checkpoint writes nowhere
// meta g and its log need). The second recovery, in every mode, must give
// exactly what the first gave.
func TestNativeCrashInRecovery(t *testing.T) {
	seed := uint64(testSeed(t))
	first, seeds, perSeed := 0, 2, 5
	if testing.Short() {
		first, perSeed = 1, 2 // the seed without the growth batch
	}
	for _, kind := range allKinds {
		cases, recoveries := 0, 0
		for si := first; si < seeds; si++ {
			r := rand.New(rand.NewPCG(seed, uint64(si)<<8|uint64(kind)|0x40))
			ops := ncWorkload(r, 20+r.IntN(20), si%2 == 0, si%2 == 0)
			cfs := crashfs.New()
			steps, tab, failAt, err := runWorkloadFormat(t, cfs, kind, Native, ops)
			if err != nil {
				t.Fatalf("seed %d/%d: workload failed at step %d: %v", seed, si, failAt, err)
			}
			steps = ncSaves(steps)
			must(t, tab.Close())
			// Crash points inside write steps: the file needs recovery.
			var points []int
			for _, s := range steps {
				if !s.isSave && s.op.what != "create" && s.end > s.start {
					points = append(points, s.start+r.IntN(s.end-s.start)+1)
				}
			}
			r.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
			points = points[:min(len(points), perSeed)]
			for _, k := range points {
				for _, mode := range []crashfs.Mode{crashfs.AllWritten, crashfs.Subset} {
					img := cfs.Image(k, mode, r)
					if _, err := Open(crashTablePath, Options{FS: memFS{img}}); !errors.Is(err, ErrNeedsRepair) {
						continue // this image needs no recovery
					}
					from := img.Ops()
					tab, err := Open(crashTablePath, Options{FS: memFS{img}, Repair: AutoRepair})
					if err != nil {
						t.Fatalf("seed %d/%d op %d %s: first recovery: %v", seed, si, k, mode, err)
					}
					want, err := sortedContentsErr(tab)
					must(t, err)
					must(t, tab.Close())
					recoveries++
					for k2 := from; k2 <= img.Ops(); k2++ {
						for _, m2 := range []crashfs.Mode{crashfs.SyncedOnly, crashfs.AllWritten, crashfs.Subset, crashfs.Torn512, crashfs.Torn4096, crashfs.ZeroTail} {
							cases++
							what := fmt.Sprintf("seed %d/%d op %d %s, recovery crashed after its op %d (%s)", seed, si, k, mode, k2-from, m2)
							img2 := img.Image(k2, m2, r)
							tab, err := Open(crashTablePath, Options{FS: memFS{img2}, Repair: AutoRepair})
							if err != nil {
								t.Fatalf("%s: second recovery: %v", what, err)
							}
							got := settledContents(t, memFS{img2}, tab, what)
							if !slices.Equal(got, want) {
								t.Fatalf("%s: %d objects, the first recovery gave %d (missing %v, extra %v)",
									what, len(got), len(want), showEncodings(mdl.Missing(want, got)), showEncodings(mdl.Missing(got, want)))
							}
						}
					}
				}
			}
		}
		t.Logf("native %s: %d recoveries, crashed at every step: %d images, each recovered again to the first recovery's state", kind, recoveries, cases)
	}
}

// TestNativeCrashTornMeta: every meta a checkpoint writes, lost (the page
// as before the write) or torn at 512-byte sectors, right after the write:
// the open must give the checkpoint's state, from the other meta plus its
// log where the new one does not pass (§10.4: "torn meta write"; after a
// Close, "a meta lost after Close").
func TestNativeCrashTornMeta(t *testing.T) {
	seed := uint64(testSeed(t))
	kinds, tries := allKinds, 9
	if testing.Short() {
		kinds, tries = allKinds[:1], 3
	}
	for _, kind := range kinds {
		r := rand.New(rand.NewPCG(seed, uint64(kind)|0x20))
		ops := ncWorkload(r, 40, true, true)
		cfs := crashfs.New()
		steps, tab, failAt, err := runWorkloadFormat(t, cfs, kind, Native, ops)
		if err != nil {
			t.Fatalf("seed %d: workload failed at step %d: %v", seed, failAt, err)
		}
		steps = ncSaves(steps)
		must(t, tab.Close())
		log := cfs.Log()
		counts := map[string]int{}
		for _, s := range steps {
			if !s.isSave {
				continue
			}
			for i := s.start; i < s.end; i++ {
				rec := log[i]
				if rec.Kind != crashfs.OpWrite || (rec.Off != nativeMetaAOff && rec.Off != nativeMetaBOff) || len(rec.Data) != nativePageSize {
					continue
				}
				after := cfs.Image(i+1, crashfs.AllWritten, r).Get(crashTablePath)
				old := cfs.Image(i, crashfs.AllWritten, r).Get(crashTablePath)
				for try := range tries {
					b := bytes.Clone(after)
					how := "lost"
					for sec := range nativePageSize / 512 {
						// try 0: every sector old (lost); else each at random.
						if try == 0 || r.IntN(2) == 0 {
							at := int(rec.Off) + 512*sec
							copy(b[at:at+512], old[at:at+512])
						}
					}
					if try > 0 {
						how = "torn"
					}
					if bytes.Equal(b, after) {
						how = "whole"
					}
					counts[s.op.what+" "+how]++
					img := crashfs.New()
					img.Put(crashTablePath, b)
					what := fmt.Sprintf("seed %d %s: meta of %s at op %d %s", seed, kind, s.op.what, i, how)
					tab, err := Open(crashTablePath, Options{FS: memFS{img}, Repair: AutoRepair})
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					got := settledContents(t, memFS{img}, tab, what)
					// A delete_all_objects is a checkpoint of a new tree: its
					// meta lost gives the state before it, whole the one after.
					if want := s.pre.Objects(); !slices.Equal(got, want) && !(s.op.what == "deleteall" && slices.Equal(got, s.post.Objects())) {
						t.Fatalf("%s: %d objects, the checkpoint's state has %d (missing %v, extra %v)",
							what, len(got), len(want), showEncodings(mdl.Missing(want, got)), showEncodings(mdl.Missing(got, want)))
					}
				}
			}
		}
		t.Logf("native %s: meta writes checked: %v", kind, counts)
		// The loop must have met the saves' meta writes, lost and torn:
		// a change of their offset or size would make it check nothing.
		lost, torn := 0, 0
		for k, n := range counts {
			switch {
			case strings.HasSuffix(k, " lost"):
				lost += n
			case strings.HasSuffix(k, " torn"):
				torn += n
			}
		}
		if lost == 0 || torn == 0 {
			t.Fatalf("seed %d %s: meta writes checked %v: none lost or none torn", seed, kind, counts)
		}
	}
}
