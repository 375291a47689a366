package propertytest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/leanovate/gopter/gen"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	"github.com/godets/godets/internal/model"
)

// Crash points inside the sequences, not only between commands:
//
//   - crashInCmd runs a mutating command, then takes the crash image at a
//     point of the file operations that command made (at/65536 of the way
//     in), and reopens it with AutoRepair. What otp9 guarantees there
//     (dets/crash_test.go, A4 and A5): after a power loss, exactly the last
//     saved state, or the acknowledged state when a save was in flight;
//     after a kill, exactly the acknowledged state when a save was in
//     flight, else every object in the state before or after the command,
//     and every object in both. duplicate_bag copy counts are not checked
//     inside a command (a bucket move leaves two copies otp9 cannot tell
//     apart).
//   - crashRepairCmd kills the process (an image with every write), then
//     crashes the AutoRepair that follows at a point of its operations, and
//     reopens that image with AutoRepair: the result is exactly the
//     acknowledged state and no temporary file is left.
//
// A kill inside a command leaves one of several states, and the model must
// know which one the sequence goes on from: the postcondition of crashInCmd
// brings every key whose objects differ to the target state (the state
// after the command for a kill, the last saved one for a power loss, the
// acknowledged one for a save in flight) with Delete and Insert, then Syncs.
// That is the only postcondition with side effects; gopter calls it once,
// right after Run and NextState, before the next command runs.

// crashInCmd is inner with a crash at a point of its file operations.
type crashInCmd struct {
	inner commands.Command
	mode  crashfs.Mode // SyncedOnly or AllWritten
	at    uint16
}

func isSave(c commands.Command) bool {
	switch c.(type) {
	case syncCmd, reopenCmd:
		return true
	}
	return false
}

func (c crashInCmd) Run(s commands.SystemUnderTest) commands.Result {
	u := s.(*sut)
	k0 := u.cfs.Ops()
	if r := c.inner.Run(s).(result); r.err != nil {
		return r
	}
	k := k0
	if k1 := u.cfs.Ops(); k1 > k0 {
		k = k0 + int(c.at)*(k1-k0)/65536
	}
	u.stats.inside++
	img := u.cfs.Image(k, c.mode, nil)
	image := img.Get(path)
	u.tab.Close() // on the old file system: the image is already taken
	u.cfs = img
	tab, err := dets.Open(path, dets.Options{FS: memFS(img), Repair: dets.AutoRepair, Kind: u.kind})
	if err != nil {
		return withImage(result{err: fmt.Errorf("AutoRepair open of the image at op %d: %w", k, err)}, image)
	}
	u.tab = tab
	if err := tab.Check(); err != nil {
		return withImage(result{err: err}, image)
	}
	objs, err := contents(tab)
	return withImage(result{err: err, objs: objs, u: u}, image)
}

func (c crashInCmd) NextState(st commands.State) commands.State {
	s := st.(*state)
	n := s.clone()
	n.inPre, n.inPost, n.inSaved = s.cur.Clone(), c.inner.NextState(s).(*state).cur, s.saved.Clone()
	target := n.inPost
	switch {
	case isSave(c.inner):
		target = n.inPre
	case c.mode == crashfs.SyncedOnly:
		target = n.inSaved
	}
	n.cur, n.saved = target.Clone(), target.Clone()
	return n
}

func (crashInCmd) PreCondition(commands.State) bool { return true }

func (c crashInCmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	if res := okIfNoErr(r); !res.Success() {
		return res
	}
	s := st.(*state)
	got := r.(result).objs
	if msg := c.recovered(s, got); msg != "" {
		return gopter.NewPropResult(false, fmt.Sprintf("crash inside %v (%s): %s%s", c.inner, c.mode, msg, keepImage(r)))
	}
	if err := settle(r.(result).u.tab, s.cur, got); err != nil {
		return &gopter.PropResult{Status: gopter.PropError, Error: err}
	}
	return gopter.NewPropResult(true, "")
}

// recovered checks the recovered content got against the guarantees above;
// it returns what is wrong, or "".
func (c crashInCmd) recovered(s *state, got []string) string {
	pre, post, saved := s.inPre.Objects(), s.inPost.Objects(), s.inSaved.Objects()
	switch {
	case c.mode == crashfs.SyncedOnly:
		if slices.Equal(got, saved) || (isSave(c.inner) && slices.Equal(got, pre)) {
			return ""
		}
		return fmt.Sprintf("%d objects (missing %d, extra %d), the last save had %d", len(got),
			len(model.Missing(saved, got)), len(model.Missing(got, saved)), len(saved))
	case isSave(c.inner):
		if slices.Equal(got, pre) {
			return ""
		}
		return fmt.Sprintf("%d objects, acknowledged %d", len(got), len(pre))
	}
	if s.format == dets.Native {
		return nativeRecovered(s, got)
	}
	either := map[string]bool{}
	for _, e := range slices.Concat(pre, post) {
		either[e] = true
	}
	have := map[string]bool{}
	for _, e := range got {
		have[e] = true
		if !either[e] {
			return fmt.Sprintf("an object in neither the state before nor after: %x", e)
		}
	}
	for _, e := range model.Missing(pre, model.Missing(pre, post)) { // pre ∩ post
		if !have[e] {
			return fmt.Sprintf("lost an object present before and after: %x", e)
		}
	}
	return ""
}

// nativeRecovered is recovered's kill case on native: each key holds
// exactly its objects before the command or exactly those after (a
// command's groups are slots, and recovery replays a prefix of them), so
// duplicate_bag counts are exact.
func nativeRecovered(s *state, got []string) string {
	byKey := map[string][]string{}
	for _, e := range got {
		o, err := etf.Decode([]byte(e))
		if err != nil {
			return err.Error()
		}
		k, ok := s.inPre.KeyOf(o)
		if !ok {
			return fmt.Sprintf("recovered object %v has no key", o)
		}
		byKey[model.Enc(k)] = append(byKey[model.Enc(k)], e)
	}
	keys := map[string]bool{}
	for _, k := range slices.Concat(s.inPre.Keys(), s.inPost.Keys()) {
		keys[k] = true
	}
	for k := range byKey {
		keys[k] = true
	}
	for k := range keys {
		if g := byKey[k]; !slices.Equal(g, s.inPre.KeyObjects(k)) && !slices.Equal(g, s.inPost.KeyObjects(k)) {
			return fmt.Sprintf("key %x holds %d objects, %d before the command and %d after", k, len(g),
				len(s.inPre.KeyObjects(k)), len(s.inPost.KeyObjects(k)))
		}
	}
	return ""
}

// settle brings tab from its content got to the model target: every key
// whose objects (in order) differ is deleted and inserted again, then the
// table is synced and compared as a whole.
func settle(tab *dets.Table, target *model.Model, got []string) error {
	keys := map[string]etf.Term{}
	for _, e := range slices.Concat(got, target.Objects()) {
		o, err := etf.Decode([]byte(e))
		if err != nil {
			return err
		}
		k, ok := target.KeyOf(o)
		if !ok {
			return fmt.Errorf("recovered object %v has no key", o)
		}
		keys[model.Enc(k)] = k
	}
	for _, k := range keys {
		objs, err := tab.Lookup(k)
		if err != nil {
			return err
		}
		want := target.Lookup(k)
		if slices.EqualFunc(objs, want, etf.Equal) {
			continue
		}
		if err := tab.Delete(k); err != nil {
			return err
		}
		if len(want) > 0 {
			if err := tab.Insert(want...); err != nil {
				return err
			}
		}
	}
	if err := tab.Sync(); err != nil {
		return err
	}
	now, err := contents(tab)
	if err != nil {
		return err
	}
	if want := target.Objects(); !slices.Equal(now, want) {
		return fmt.Errorf("after settling: %d objects, model %d", len(now), len(want))
	}
	return nil
}

func (c crashInCmd) String() string {
	return fmt.Sprintf("CrashIn(%v, %s, %d/65536)", c.inner, c.mode, c.at)
}

// crashRepairCmd: a kill, then a crash inside the repair that follows.
type crashRepairCmd struct {
	mode crashfs.Mode // of the crash inside the repair
	at   uint16
}

var errFilesLeft = errors.New("files left after a repair")

func (c crashRepairCmd) Run(s commands.SystemUnderTest) commands.Result {
	u := s.(*sut)
	killed := u.cfs.Crash(crashfs.AllWritten, nil)
	u.tab.Close()
	k0 := killed.Ops()
	first, err := dets.Open(path, dets.Options{FS: memFS(killed), Repair: dets.AutoRepair, Kind: u.kind})
	if err != nil {
		return result{err: fmt.Errorf("the first repair: %w", err)}
	}
	k := k0
	if k1 := killed.Ops(); k1 > k0 {
		k = k0 + int(c.at)*(k1-k0)/65536
		u.stats.inRepair++
	}
	img := killed.Image(k, c.mode, nil)
	image := img.Get(path)
	first.Close()
	u.cfs = img
	tab, err := dets.Open(path, dets.Options{FS: memFS(img), Repair: dets.AutoRepair, Kind: u.kind})
	if err != nil {
		return withImage(result{err: fmt.Errorf("open after a crash at op %d of %d of the repair: %w", k-k0, killed.Ops()-k0, err)}, image)
	}
	u.tab = tab
	if n := img.Names(); len(n) != 1 {
		return withImage(result{err: fmt.Errorf("%w: %v", errFilesLeft, n)}, image)
	}
	if err := tab.Check(); err != nil {
		return withImage(result{err: err}, image)
	}
	objs, err := contents(tab)
	return withImage(result{err: err, objs: objs}, image)
}

func (crashRepairCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.saved = n.cur.Clone()
	return n
}

func (crashRepairCmd) PreCondition(commands.State) bool { return true }

func (c crashRepairCmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	if res := okIfNoErr(r); !res.Success() {
		return res
	}
	want, got := st.(*state).cur.Objects(), r.(result).objs
	if slices.Equal(got, want) {
		return gopter.NewPropResult(true, "")
	}
	return gopter.NewPropResult(false, fmt.Sprintf("after a crash inside a repair (%s): %d objects, acknowledged %d (missing %d, extra %d)%s",
		c.mode, len(got), len(want), len(model.Missing(want, got)), len(model.Missing(got, want)), keepImage(r)))
}

func (c crashRepairCmd) String() string {
	return fmt.Sprintf("CrashInRepair(%s, %d/65536)", c.mode, c.at)
}

// genCrashIn generates crashInCmd over the mutating commands.
func genCrashIn() gopter.Gen {
	inner := gen.Weighted([]gen.WeightedGen{
		{Weight: 6, Gen: genObj().Map(func(o etf.Term) commands.Command { return insertCmd{[]etf.Term{o}} })},
		{Weight: 2, Gen: gen.SliceOfN(3, genObj()).Map(func(os []etf.Term) commands.Command { return insertCmd{os} })},
		{Weight: 2, Gen: genKey().Map(func(k etf.Term) commands.Command { return deleteCmd{k} })},
		{Weight: 1, Gen: genObj().Map(func(o etf.Term) commands.Command { return deleteObjectCmd{o} })},
		{Weight: 2, Gen: gen.Const(commands.Command(syncCmd{}))},
		{Weight: 1, Gen: gen.Const(commands.Command(reopenCmd{}))},
	})
	return gopter.CombineGens(inner, genCrashMode(), gen.UInt16()).Map(func(v []any) commands.Command {
		return crashInCmd{inner: v[0].(commands.Command), mode: v[1].(crashfs.Mode), at: v[2].(uint16)}
	})
}

func genCrashRepair() gopter.Gen {
	return gopter.CombineGens(genCrashMode(), gen.UInt16()).Map(func(v []any) commands.Command {
		return crashRepairCmd{mode: v[0].(crashfs.Mode), at: v[1].(uint16)}
	})
}

func genCrashMode() gopter.Gen { return gen.OneConstOf(crashfs.SyncedOnly, crashfs.AllWritten) }

func withImage(r result, image []byte) result {
	r.image, r.crashed = image, true
	return r
}

// evidenceDir is where failing crash images are kept: under the system's
// temporary directory, named by the run's seed (set by propSeed), so that
// it outlives the test.
var evidenceDir string

// keepImage writes the crash image of a failing result to evidenceDir and
// returns the text that names it, or "" when there is none. During
// shrinking each failure overwrites the last, so the file kept is the
// image of the shortest failing sequence.
func keepImage(r commands.Result) string {
	res := r.(result)
	img := res.image
	switch {
	case !res.crashed || evidenceDir == "":
		return ""
	case img == nil:
		return " (the crash left no table file)"
	}
	if err := os.MkdirAll(evidenceDir, 0o755); err != nil {
		return fmt.Sprintf(" (image not kept: %v)", err)
	}
	f := filepath.Join(evidenceDir, "crash-image.dets")
	if err := os.WriteFile(f, img, 0o644); err != nil {
		return fmt.Sprintf(" (image not kept: %v)", err)
	}
	return fmt.Sprintf(" (the crash image, before its repair, is kept in %s)", f)
}
