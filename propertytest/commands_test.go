package propertytest

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/leanovate/gopter/gen"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	"github.com/godets/godets/internal/model"
	"github.com/godets/godets/internal/testutil"
	"github.com/godets/godets/internal/testutil/tabletest"
)

var (
	minFlag = flag.Int("prop.min", 300, "successful sequences per kind")
	// The old seed flag and variable still replay (the kit's are -seed
	// and GODETS_SEED).
	_ = testutil.SeedAlias("prop.seed", "GODETS_PROP_SEED")
)

// propSeed is the run's gopter seed (testutil.Seed); it also names the
// directory where failing crash images are kept.
func propSeed(t *testing.T) int64 {
	t.Helper()
	s := testutil.Seed(t)
	evidenceDir = filepath.Join(os.TempDir(), fmt.Sprintf("godets-prop-%d", s))
	return s
}

// sequences is the number of successful sequences per kind: -prop.min, or
// 10,000 in the soak mode (GODETS_SOAK=1) unless -prop.min is given.
func sequences() int {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "prop.min" })
	if !given && os.Getenv("GODETS_SOAK") == "1" {
		return 10_000
	}
	return *minFlag
}

// memFS is cfs as the engine's file system, lying on fsync when a test
// set lyingSync.
func memFS(cfs *crashfs.FS) tabletest.MemFS {
	return tabletest.MemFS{FS: cfs, LyingSync: lyingSync}
}

// lyingSync makes every file's Sync a no-op that reports success: the
// broken disk TestShrinksLyingSync needs the property to catch.
var lyingSync bool

const path = "p.dets"

// state is the model side: the content now and at the last save.
type state struct {
	kind       dets.Kind
	format     dets.Format
	cur, saved *model.Model
	expectNew  bool // InsertNew's expected result, set by NextState

	// Set by crashInCmd.NextState for its postcondition: the states before
	// and after the command in flight, and the last save before it.
	inPre, inPost, inSaved *model.Model
}

// String is what a failure report prints as the initial state.
func (s *state) String() string {
	return fmt.Sprintf("%s %s model with %d objects", s.format, s.kind, s.cur.Len())
}

func (s *state) clone() *state {
	return &state{kind: s.kind, format: s.format, cur: s.cur.Clone(), saved: s.saved.Clone(), expectNew: s.expectNew}
}

// sut is the system under test.
type sut struct {
	kind  dets.Kind
	cfs   *crashfs.FS
	tab   *dets.Table
	stats *propStats
}

// propStats counts, for one kind, what the runs did; the summary line is
// computed from it.
type propStats struct {
	runs, between, inside, inRepair int
}

// result of a command.
type result struct {
	err  error
	objs []string // Lookup (in order) or the whole content after a crash (sorted)
	ok   bool
	u    *sut // crashInCmd: the table its postcondition settles
	// image is the table file a crash left, before the AutoRepair open;
	// a failing postcondition keeps it (keepImage).
	image   []byte
	crashed bool // image is set (nil when the crash left no file)
}

func encs(objs []etf.Term) []string {
	var out []string
	for _, o := range objs {
		out = append(out, model.Enc(o))
	}
	return out
}

func contents(tab *dets.Table) ([]string, error) {
	var out []string
	for o, err := range tab.All() {
		if err != nil {
			return nil, err
		}
		out = append(out, model.Enc(o))
	}
	slices.Sort(out)
	return out, nil
}

func okIfNoErr(r commands.Result) *gopter.PropResult {
	if err := r.(result).err; err != nil {
		if kept := keepImage(r); kept != "" {
			err = fmt.Errorf("%w%s", err, kept)
		}
		return &gopter.PropResult{Status: gopter.PropError, Error: err}
	}
	return gopter.NewPropResult(true, "")
}

type insertCmd struct{ objs []etf.Term }

func (c insertCmd) Run(s commands.SystemUnderTest) commands.Result {
	return result{err: s.(*sut).tab.Insert(c.objs...)}
}
func (c insertCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.cur.Insert(c.objs...)
	return n
}
func (insertCmd) PreCondition(commands.State) bool { return true }
func (insertCmd) PostCondition(_ commands.State, r commands.Result) *gopter.PropResult {
	return okIfNoErr(r)
}
func (c insertCmd) String() string { return fmt.Sprintf("Insert%v", c.objs) }

type insertNewCmd struct{ obj etf.Term }

func (c insertNewCmd) Run(s commands.SystemUnderTest) commands.Result {
	ok, err := s.(*sut).tab.InsertNew(c.obj)
	return result{err: err, ok: ok}
}
func (c insertNewCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.expectNew = n.cur.InsertNew(c.obj)
	return n
}
func (insertNewCmd) PreCondition(commands.State) bool { return true }
func (insertNewCmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	if res := okIfNoErr(r); !res.Success() {
		return res
	}
	return gopter.NewPropResult(r.(result).ok == st.(*state).expectNew, "InsertNew result differs from the model")
}
func (c insertNewCmd) String() string { return fmt.Sprintf("InsertNew(%v)", c.obj) }

type deleteCmd struct{ key etf.Term }

func (c deleteCmd) Run(s commands.SystemUnderTest) commands.Result {
	return result{err: s.(*sut).tab.Delete(c.key)}
}
func (c deleteCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.cur.Delete(c.key)
	return n
}
func (deleteCmd) PreCondition(commands.State) bool { return true }
func (deleteCmd) PostCondition(_ commands.State, r commands.Result) *gopter.PropResult {
	return okIfNoErr(r)
}
func (c deleteCmd) String() string { return fmt.Sprintf("Delete(%v)", c.key) }

type deleteObjectCmd struct{ obj etf.Term }

func (c deleteObjectCmd) Run(s commands.SystemUnderTest) commands.Result {
	return result{err: s.(*sut).tab.DeleteObject(c.obj)}
}
func (c deleteObjectCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.cur.DeleteObject(c.obj)
	return n
}
func (deleteObjectCmd) PreCondition(commands.State) bool { return true }
func (deleteObjectCmd) PostCondition(_ commands.State, r commands.Result) *gopter.PropResult {
	return okIfNoErr(r)
}
func (c deleteObjectCmd) String() string { return fmt.Sprintf("DeleteObject(%v)", c.obj) }

type lookupCmd struct{ key etf.Term }

func (c lookupCmd) Run(s commands.SystemUnderTest) commands.Result {
	objs, err := s.(*sut).tab.Lookup(c.key)
	return result{err: err, objs: encs(objs)}
}
func (lookupCmd) NextState(st commands.State) commands.State { return st }
func (lookupCmd) PreCondition(commands.State) bool           { return true }
func (c lookupCmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	if res := okIfNoErr(r); !res.Success() {
		return res
	}
	want := encs(st.(*state).cur.Lookup(c.key))
	return gopter.NewPropResult(slices.Equal(r.(result).objs, want), fmt.Sprintf("Lookup: %d objects, model %d (or a different order)", len(r.(result).objs), len(want)))
}
func (c lookupCmd) String() string { return fmt.Sprintf("Lookup(%v)", c.key) }

type syncCmd struct{}

func (syncCmd) Run(s commands.SystemUnderTest) commands.Result {
	return result{err: s.(*sut).tab.Sync()}
}
func (syncCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.saved = n.cur.Clone()
	return n
}
func (syncCmd) PreCondition(commands.State) bool { return true }
func (syncCmd) PostCondition(_ commands.State, r commands.Result) *gopter.PropResult {
	return okIfNoErr(r)
}
func (syncCmd) String() string { return "Sync" }

// reopenCmd closes and reopens with NoRepair, then checks the whole content.
type reopenCmd struct{}

func (reopenCmd) Run(s commands.SystemUnderTest) commands.Result {
	u := s.(*sut)
	if err := u.tab.Close(); err != nil {
		return result{err: err}
	}
	tab, err := dets.Open(path, dets.Options{FS: memFS(u.cfs)})
	if err != nil {
		return result{err: err}
	}
	u.tab = tab
	if err := tab.Check(); err != nil {
		return result{err: err}
	}
	objs, err := contents(tab)
	return result{err: err, objs: objs}
}
func (reopenCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	n.saved = n.cur.Clone()
	return n
}
func (reopenCmd) PreCondition(commands.State) bool { return true }
func (reopenCmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	if res := okIfNoErr(r); !res.Success() {
		return res
	}
	want := st.(*state).cur.Objects()
	return gopter.NewPropResult(slices.Equal(r.(result).objs, want), fmt.Sprintf("after reopen: %d objects, model %d", len(r.(result).objs), len(want)))
}
func (reopenCmd) String() string { return "Reopen" }

// crashCmd builds a crash image of the current file system, abandons the
// table and reopens the image with AutoRepair.
type crashCmd struct{ mode crashfs.Mode }

func (c crashCmd) Run(s commands.SystemUnderTest) commands.Result {
	u := s.(*sut)
	u.stats.between++
	img := u.cfs.Crash(c.mode, nil)
	image := img.Get(path)
	u.tab.Close() // on the old file system: the image is already taken
	u.cfs = img
	tab, err := dets.Open(path, dets.Options{FS: memFS(img), Repair: dets.AutoRepair, Kind: u.kind})
	if err != nil {
		return withImage(result{err: err}, image)
	}
	u.tab = tab
	if err := tab.Check(); err != nil {
		return withImage(result{err: err}, image)
	}
	objs, err := contents(tab)
	return withImage(result{err: err, objs: objs}, image)
}
func (c crashCmd) NextState(st commands.State) commands.State {
	n := st.(*state).clone()
	if c.mode == crashfs.SyncedOnly {
		n.cur = n.saved.Clone()
	}
	n.saved = n.cur.Clone() // a repaired (or clean) file is durable
	return n
}
func (crashCmd) PreCondition(commands.State) bool { return true }
func (c crashCmd) PostCondition(st commands.State, r commands.Result) *gopter.PropResult {
	if res := okIfNoErr(r); !res.Success() {
		return res
	}
	want := st.(*state).cur.Objects()
	got := r.(result).objs
	if slices.Equal(got, want) {
		return gopter.NewPropResult(true, "")
	}
	return gopter.NewPropResult(false, fmt.Sprintf("after crash (%s): %d objects, model %d (missing %d, extra %d)%s",
		c.mode, len(got), len(want), len(model.Missing(want, got)), len(model.Missing(got, want)), keepImage(r)))
}
func (c crashCmd) String() string { return fmt.Sprintf("Crash(%s)", c.mode) }

// Generators. Keys are small integers or the same values as floats (1 and
// 1.0 are different keys); values include one over 512 bytes.
func genKey() gopter.Gen {
	return gen.IntRange(0, 11).FlatMap(func(v any) gopter.Gen {
		k := v.(int)
		return gen.OneConstOf(etf.Term(etf.Int(k)), etf.Term(etf.Int(k)), etf.Term(etf.Float(k)))
	}, nil)
}

func genObj() gopter.Gen {
	return gopter.CombineGens(genKey(), gen.IntRange(0, 2), gen.OneConstOf(0, 3, 40, 700)).Map(func(v []any) etf.Term {
		pad := v[2].(int)
		return etf.Tuple{v[0].(etf.Term), etf.Int(v[1].(int)), etf.Binary(bytes.Repeat([]byte{byte(pad)}, pad))}
	})
}

func kindCommands(kind dets.Kind, format dets.Format, stats *propStats) *commands.ProtoCommands {
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(commands.State) commands.SystemUnderTest {
			cfs := crashfs.New()
			tab, err := dets.Open(path, dets.Options{Kind: kind, Format: format, FS: memFS(cfs)})
			if err != nil {
				panic(err) // an in-memory create cannot fail
			}
			stats.runs++
			return &sut{kind: kind, cfs: cfs, tab: tab, stats: stats}
		},
		DestroySystemUnderTestFunc: func(s commands.SystemUnderTest) { s.(*sut).tab.Close() },
		InitialStateGen: gen.Const(&state{kind: kind, format: format,
			cur: model.New(model.Kind(kind), 1), saved: model.New(model.Kind(kind), 1)}),
		GenCommandFunc: func(commands.State) gopter.Gen {
			return gen.Weighted([]gen.WeightedGen{
				{Weight: 30, Gen: genObj().Map(func(o etf.Term) commands.Command { return insertCmd{[]etf.Term{o}} })},
				{Weight: 4, Gen: gen.SliceOfN(3, genObj()).Map(func(os []etf.Term) commands.Command { return insertCmd{os} })},
				{Weight: 6, Gen: genObj().Map(func(o etf.Term) commands.Command { return insertNewCmd{o} })},
				{Weight: 8, Gen: genKey().Map(func(k etf.Term) commands.Command { return deleteCmd{k} })},
				{Weight: 6, Gen: genObj().Map(func(o etf.Term) commands.Command { return deleteObjectCmd{o} })},
				{Weight: 12, Gen: genKey().Map(func(k etf.Term) commands.Command { return lookupCmd{k} })},
				{Weight: 6, Gen: gen.Const(commands.Command(syncCmd{}))},
				{Weight: 3, Gen: gen.Const(commands.Command(reopenCmd{}))},
				{Weight: 3, Gen: gen.Const(commands.Command(crashCmd{crashfs.SyncedOnly}))},
				{Weight: 3, Gen: gen.Const(commands.Command(crashCmd{crashfs.AllWritten}))},
				{Weight: 5, Gen: genCrashIn()},
				{Weight: 2, Gen: genCrashRepair()},
			})
		},
	}
}

// TestCommands runs the stateful property for each kind, on both formats.
// On native a crash inside a command is held to exact duplicate_bag
// counts (crashInCmd.recovered), and the crash inside the AutoRepair that
// follows a kill is a crash inside a recovery (docs/format-native.md §11.2).
func TestCommands(t *testing.T) {
	seed := propSeed(t)
	for fi, format := range []dets.Format{dets.OTP9, dets.Native} {
		for _, kind := range []dets.Kind{dets.Set, dets.Bag, dets.DuplicateBag} {
			propCommands(t, seed+int64(16*fi)+int64(kind), kind, format)
		}
	}
}

func propCommands(t *testing.T, seed int64, kind dets.Kind, format dets.Format) {
	{
		t.Run(format.String()+"/"+kind.String(), func(t *testing.T) {
			params := gopter.DefaultTestParametersWithSeed(seed)
			params.MinSuccessfulTests = sequences()
			if testing.Short() {
				params.MinSuccessfulTests = max(1, *minFlag/4)
			}
			params.MaxShrinkCount = 200
			props := gopter.NewProperties(params)
			var stats propStats
			props.Property(kind.String()+" against the model", commands.Prop(kindCommands(kind, format, &stats)))
			props.TestingRun(t)
			t.Logf("property %s %s: %d sequences passed (%d runs), %d crashes between commands, %d inside commands, %d inside repairs",
				format, kind, params.MinSuccessfulTests, stats.runs, stats.between, stats.inside, stats.inRepair)
		})
	}
}

// TestCrashRecoveryExample pins one sequence by hand: a bag insert, sync,
// re-insert (moves to the end), insert of a float key, then a power loss.
func TestCrashRecoveryExample(t *testing.T) {
	cfs := crashfs.New()
	tab, err := dets.Open(path, dets.Options{Kind: dets.Bag, FS: memFS(cfs)})
	if err != nil {
		t.Fatal(err)
	}
	a := etf.Tuple{etf.Int(1), etf.Atom("a")}
	b := etf.Tuple{etf.Int(1), etf.Atom("b")}
	f := etf.Tuple{etf.Float(1), etf.Atom("a")}
	for _, o := range []etf.Term{a, b} {
		if err := tab.Insert(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(a, f); err != nil {
		t.Fatal(err)
	}
	got, _ := tab.Lookup(etf.Int(1))
	if !slices.EqualFunc(got, []etf.Term{b, a}, etf.Equal) {
		t.Fatalf("bag re-insert did not move the object to the end: %v", got)
	}
	img := cfs.Crash(crashfs.SyncedOnly, rand.New(rand.NewPCG(1, 1)))
	tab.Close()
	tab, err = dets.Open(path, dets.Options{FS: memFS(img), Repair: dets.AutoRepair})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	if got, _ := tab.Lookup(etf.Float(1)); len(got) != 0 {
		t.Fatalf("an unsynced insert survived a power loss: %v", got)
	}
	if got, _ := tab.Lookup(etf.Int(1)); !slices.EqualFunc(got, []etf.Term{a, b}, etf.Equal) {
		t.Fatalf("after the power loss Lookup(1) = %v, want the synced [a b]", got)
	}
}
