package dets

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/godets/godets/etf"
	mdl "github.com/godets/godets/internal/model"
	"github.com/godets/godets/internal/otptest"
)

func seqOf(objs []etf.Term) func(func(etf.Term, error) bool) {
	return func(yield func(etf.Term, error) bool) {
		for _, o := range objs {
			if !yield(o, nil) {
				return
			}
		}
	}
}

// TestInitTable replaces a table's content with a bulk build for each kind
// (duplicates, re-inserts, 1 vs 1.0 keys and big objects included), checks
// it against the model, and has OTP read the three otp9 files.
func TestInitTable(t *testing.T) { forEachFormat(t, testInitTable) }

func testInitTable(t *testing.T, format Format) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	var specs []erlSpec
	var models []*mdl.Model
	n := 30000
	if testing.Short() {
		n = 3000
	}
	for _, kind := range allKinds {
		path := filepath.Join(dir, kind.String()+".dets")
		tab := openT(t, path, Options{Kind: kind, Format: format})
		must(t, tab.Insert(tup(etf.Atom("old"), etf.Int(1))))
		var objs []etf.Term
		for range n {
			objs = append(objs, randObject(rng, n/2))
		}
		m := newModel(kind)
		m.Insert(objs...)
		must(t, tab.InitTable(seqOf(objs)))
		checkAgainstModel(t, tab, m)
		mustCheck(t, tab)
		info, _ := tab.Info()
		if info.NoSlots.Next*int(tab.lay.keysPerSlot) < info.NoKeys || !info.Clean {
			t.Fatalf("%s: after InitTable %+v", kind, info)
		}
		// An error from the source leaves the table unchanged.
		boom := errors.New("boom")
		err := tab.InitTable(func(yield func(etf.Term, error) bool) {
			if yield(tup(etf.Int(1)), nil) {
				yield(nil, boom)
			}
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InitTable with a failing source: %v", err)
		}
		if err := tab.InitTable(seqOf([]etf.Term{etf.Atom("x")})); !errors.Is(err, ErrBadObject) {
			t.Fatalf("InitTable with a bad object: %v", err)
		}
		checkAgainstModel(t, tab, m)
		// The table works normally afterwards.
		extra := randOps(rng, m, 200, n/2)
		goApply(t, tab, extra)
		checkAgainstModel(t, tab, m)
		must(t, tab.Close())
		specs = append(specs, erlSpec{path, etf.List{etf.Tuple{etf.Atom("type"), kindAtom(kind)}}, nil})
		models = append(models, m)
	}
	if format == Native {
		return // OTP cannot read native files
	}
	r := otptest.Erl(t)
	res := runErl(t, r, specs)
	for i, s := range specs {
		if d := diffTerms(res[i].after, models[i].Terms()); d != "" {
			t.Fatalf("%s: OTP read of a bulk-built table: %s", s.path, d)
		}
	}
}

func TestInitTableEmpty(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		path := tmpFile(t, "e.dets")
		tab := openT(t, path, Options{MinSlots: 2048, Format: format})
		must(t, tab.Insert(tup(etf.Int(1))))
		must(t, tab.InitTable(seqOf(nil)))
		info, _ := tab.Info()
		if info.Size != 0 || info.NoSlots.Next != 2048 {
			t.Fatalf("%+v", info)
		}
		must(t, tab.Close())
		tab = openT(t, path, Options{})
		if info, _ := tab.Info(); info.Size != 0 || info.NoSlots.Next != 2048 {
			t.Fatalf("reopened: %+v", info)
		}
	})
}

// TestConcurrentUse runs writers and readers on one table from several
// goroutines (run it with -race).
func TestConcurrentUse(t *testing.T) { forScanWindows(t, testConcurrentUse) }

func testConcurrentUse(t *testing.T, windows func(Options) Options) {
	tab := openT(t, tmpFile(t, "c.dets"), windows(Options{Kind: Bag}))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				k := etf.Int(g*1000 + i)
				if err := tab.Insert(tup(k, etf.Int(i))); err != nil {
					t.Error(err)
					return
				}
				objs, err := tab.Lookup(k)
				if err != nil || len(objs) != 1 {
					t.Errorf("lookup %v: %v %v", k, objs, err)
					return
				}
				if i%3 == 0 {
					if err := tab.Delete(k); err != nil {
						t.Error(err)
						return
					}
				}
				if i%50 == 0 {
					if err := tab.Sync(); err != nil {
						t.Error(err)
					}
					if _, err := tab.Info(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			for _, err := range tab.All() {
				if err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	wg.Wait()
	info, _ := tab.Info()
	if info.Size != 4*200 {
		t.Fatalf("size %d, want 800", info.Size)
	}
	if tab.mm == nil {
		t.Fatal("the table was never mapped: the test misses the memory-mapped path")
	}
	mustCheck(t, tab)
}

// TestInteropFreshIdentical: an empty table created by Go is byte-identical
// to the one OTP creates with the same options.
func TestInteropFreshIdentical(t *testing.T) {
	r := otptest.Erl(t)
	dir := t.TempDir()
	type c struct {
		kind     Kind
		min, max int
	}
	cases := []c{{Set, 0, 0}, {Bag, 1000, 3000}, {DuplicateBag, 200000, 0}}
	code := `[begin
	   {F, Os} = binary_to_term(S),
	   {ok, T} = dets:open_file(make_ref(), [{file, F} | Os]),
	   ok = dets:close(T),
	   {ok, B} = file:read_file(F), B end || S <- In]`
	var in [][]byte
	for i, cs := range cases {
		os := etf.List{etf.Tuple{etf.Atom("type"), kindAtom(cs.kind)}}
		if cs.min > 0 {
			os = append(os, etf.Tuple{etf.Atom("min_no_slots"), etf.Int(cs.min)})
		}
		if cs.max > 0 {
			os = append(os, etf.Tuple{etf.Atom("max_no_slots"), etf.Int(cs.max)})
		}
		b, err := etf.Encode(etf.Tuple{etf.Str(filepath.Join(dir, fmt.Sprintf("otp%d.dets", i))), os})
		must(t, err)
		in = append(in, b)
	}
	out := r.Eval(t, code, in...)
	for i, cs := range cases {
		path := filepath.Join(dir, fmt.Sprintf("go%d.dets", i))
		tab, err := Open(path, Options{Kind: cs.kind, MinSlots: cs.min, MaxSlots: cs.max})
		must(t, err)
		must(t, tab.Close())
		got := readFileT(t, path)
		if string(got) != string(out[i]) {
			t.Errorf("case %+v: Go file (%d bytes) differs from OTP's (%d bytes)", cs, len(got), len(out[i]))
		}
	}
}

// TestInitTableFromItself: InitTable's iterator may read the table it
// rebuilds. InitTable(tab.All()) used to run All under the lock InitTable
// held and never returned, keeping every other caller out for good.
func TestInitTableFromItself(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		for _, kind := range allKinds {
			// Not openT: its cleanup would wait forever on a deadlocked table.
			tab := mustOpen(t, tmpFile(t, "self.dets"), Options{Kind: kind, Format: format})
			for i := range 300 {
				must(t, tab.Insert(paddedObj(i%200, i%2, i%50)))
			}
			before := sortedContents(t, tab)
			// All of it, and then a filter that looks keys up as it goes.
			for _, odd := range []bool{false, true} {
				src := func(yield func(etf.Term, error) bool) {
					for o, err := range tab.All() {
						if err == nil && odd {
							key := o.(etf.Tuple)[0]
							if int(key.(etf.Int))%2 == 0 {
								continue
							}
							if _, err = tab.Lookup(key); err != nil {
								yield(nil, err)
								return
							}
						}
						if !yield(o, err) {
							return
						}
					}
				}
				done := make(chan error, 1)
				go func() { done <- tab.InitTable(src) }()
				select {
				case err := <-done:
					must(t, err)
				case <-time.After(20 * time.Second):
					t.Fatalf("%s: InitTable from the table's own All did not return in 20 s", kind)
				}
			}
			var want []string
			for _, enc := range before {
				o, err := etf.Decode([]byte(enc))
				must(t, err)
				if int(o.(etf.Tuple)[0].(etf.Int))%2 == 1 {
					want = append(want, enc)
				}
			}
			if got := sortedContents(t, tab); !slices.Equal(got, want) {
				t.Fatalf("%s: %d objects after the rebuilds, want the %d odd-keyed of %d", kind, len(got), len(want), len(before))
			}
			mustCheck(t, tab)
			must(t, tab.Close())
		}
	})
}

// TestInitTableConcurrent: two goroutines rebuild one table over and over.
// Each InitTable prepares its objects unlocked while the other builds;
// under -race this found build rewriting the key position that prepare
// reads. The table ends holding one of the two contents, whole.
func TestInitTableConcurrent(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		tab := openT(t, tmpFile(t, "race.dets"), Options{Format: format})
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					src := func(yield func(etf.Term, error) bool) {
						for i := range 200 + 100*g {
							if !yield(tup(etf.Int(i), etf.Int(g)), nil) {
								return
							}
						}
					}
					if err := tab.InitTable(src); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		info, err := tab.Info()
		must(t, err)
		g := 0
		if info.Size == 300 {
			g = 1
		} else if info.Size != 200 {
			t.Fatalf("%d objects, want 200 or 300", info.Size)
		}
		for o, err := range tab.All() {
			must(t, err)
			if o.(etf.Tuple)[1] != etf.Int(g) {
				t.Fatalf("object %s in a table that should hold goroutine %d's", etf.Format(o), g)
			}
		}
	})
}
