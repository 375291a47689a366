package bench

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/kinds"
)

// measure is one figure of one round: time and allocations per unit.
type measure struct{ ns, allocs float64 }

// fromBench converts a benchmark result into per-op or, with per > 1,
// per-object figures.
func fromBench(r testing.BenchmarkResult, per int) measure {
	ops := float64(r.N) * float64(per)
	return measure{float64(r.T.Nanoseconds()) / ops, float64(r.MemAllocs) / ops}
}

// runBench runs f as a benchmark and fails the test when f failed.
func runBench(t *testing.T, what string, per int, f func(b *testing.B)) measure {
	t.Helper()
	r := testing.Benchmark(f)
	if r.N == 0 {
		t.Fatalf("%s: the benchmark failed (see above)", what)
	}
	return fromBench(r, per)
}

// buildStore creates the store at path in the fast mode, puts every
// object of d one by one, syncs and closes it.
func buildStore(sys System, path string, d *Dataset) error {
	s, err := sys.Open(path, d.Layout, Fast)
	if err != nil {
		return err
	}
	for i := range d.N {
		if err := s.Put(d, i); err != nil {
			s.Close()
			return fmt.Errorf("%s: put %d: %w", sys.Name, i, err)
		}
	}
	if err := s.Sync(); err != nil {
		s.Close()
		return err
	}
	return s.Close()
}

// benchPeerInsert: one op is a whole store: create, N single puts in the
// fast mode, a sync, close. Reported per object.
func benchPeerInsert(t *testing.T, sys System, dir string, d *Dataset) measure {
	path := filepath.Join(dir, sys.Name+"-insert")
	return runBench(t, sys.Name+" insert", d.N, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			if err := os.RemoveAll(path); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := buildStore(sys, path, d); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchPeerLookup: one op is the next lookup of d in the open store.
func benchPeerLookup(t *testing.T, sys System, path string, d *Dataset) measure {
	s, err := sys.Open(path, d.Layout, Fast)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return runBench(t, sys.Name+" lookup", 1, func(b *testing.B) {
		b.ReportAllocs()
		j := 0
		for b.Loop() {
			got, err := s.Get(d, j)
			if err != nil || got != d.Want(j) {
				b.Fatalf("%s: lookup %d found %d objects (%v), want %d", sys.Name, j, got, err, d.Want(j))
			}
			if j++; j == d.N {
				j = 0
			}
		}
	})
}

// benchPeerScan: one op is a full traversal; reported per object.
func benchPeerScan(t *testing.T, sys System, path string, d *Dataset) measure {
	s, err := sys.Open(path, d.Layout, Fast)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return runBench(t, sys.Name+" scan", d.N, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got, err := s.Scan(); err != nil || got != d.N {
				b.Fatalf("%s: scan saw %d objects (%v), want %d", sys.Name, got, err, d.N)
			}
		}
	})
}

// benchPeerOpen: one op is an open of the closed store; close not timed.
func benchPeerOpen(t *testing.T, sys System, path string, d *Dataset) measure {
	return runBench(t, sys.Name+" open", 1, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := sys.Open(path, d.Layout, Fast)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// openTyped opens the closed godets set under a kinds.Set[string, string].
func openTyped(t *testing.T, path string) (*kinds.Set[string, string], func()) {
	tab, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := kinds.NewSet(tab, kinds.String, kinds.String)
	if err != nil {
		tab.Close()
		t.Fatal(err)
	}
	return s, func() { tab.Close() }
}

// benchTypedLookup: kinds.Set[string, string].Lookup of the j-th key.
func benchTypedLookup(t *testing.T, path string, d *Dataset) measure {
	s, done := openTyped(t, path)
	defer done()
	return runBench(t, "typed lookup", 1, func(b *testing.B) {
		b.ReportAllocs()
		j := 0
		for b.Loop() {
			v, err := s.Lookup(d.LookupStrs[j])
			if err != nil || len(v) != ValueSize {
				b.Fatalf("typed lookup %d: %d bytes, %v", j, len(v), err)
			}
			if j++; j == d.N {
				j = 0
			}
		}
	})
}

// benchTypedScan: kinds.Set[string, string].All, per object.
func benchTypedScan(t *testing.T, path string, d *Dataset) measure {
	s, done := openTyped(t, path)
	defer done()
	return runBench(t, "typed scan", d.N, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			n := 0
			for k, v := range s.All(&err) {
				if len(k) != KeySize || len(v) != ValueSize {
					b.Fatalf("typed scan: key %d bytes, value %d bytes", len(k), len(v))
				}
				n++
			}
			if err != nil || n != d.N {
				b.Fatalf("typed scan saw %d objects (%v), want %d", n, err, d.N)
			}
		}
	})
}

// rawTraverser is the borrowed raw traversal dets is gaining: each
// object's ETF bytes, valid until the next step.
type rawTraverser interface {
	RawAll() iter.Seq2[[]byte, error]
}

// rawTraversalName says which traversal the "godets raw" row measures.
func rawTraversalName() string {
	if _, ok := any(&dets.Table{}).(rawTraverser); ok {
		return "godets raw = (*dets.Table).RawAll"
	}
	return "godets raw = (*dets.Table).All: this dets has no RawAll yet"
}

// rawTraversal is the traversal the "godets raw" row measures.
//
// HOOK(raw traversal): once dets has RawAll (the typed engineer's
// borrowed traversal), the type assertion finds it and the row measures
// it; until then the row is (*dets.Table).All, the same as "godets". If
// the method lands under another name, change rawTraverser.
func rawTraversal(t *dets.Table) (int, error) {
	n := 0
	if r, ok := any(t).(rawTraverser); ok {
		for obj, err := range r.RawAll() {
			if err != nil {
				return n, err
			}
			if len(obj) == 0 {
				return n, fmt.Errorf("raw traversal: object %d is empty", n)
			}
			n++
		}
		return n, nil
	}
	for obj, err := range t.All() {
		if err != nil {
			return n, err
		}
		if _, ok := obj.(etf.Tuple); !ok {
			return n, fmt.Errorf("raw traversal: object %d is %T", n, obj)
		}
		n++
	}
	return n, nil
}

func benchRawScan(t *testing.T, path string, d *Dataset) measure {
	tab, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	return runBench(t, "raw scan", d.N, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n, err := rawTraversal(tab); err != nil || n != d.N {
				b.Fatalf("raw scan saw %d objects (%v), want %d", n, err, d.N)
			}
		}
	})
}

// sessionIters is the number of timed session cycles a system and round
// (BENCH_SESSION_ITERS, default 1,000).
func sessionIters(t *testing.T) int {
	n := 1000
	if v := os.Getenv("BENCH_SESSION_ITERS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			t.Fatalf("bench: bad BENCH_SESSION_ITERS %q", v)
		}
	}
	return n
}

const (
	sessionSize   = 1000 // objects in a session's table
	sessionWarmup = 20
)

// cycles times iters calls of f after a warm-up and returns the median
// and the allocations per call. f gets the call's index from 0 on (the
// warm-up calls come first).
func cycles(t *testing.T, iters int, f func(i int) error) measure {
	t.Helper()
	for i := range sessionWarmup {
		if err := f(i); err != nil {
			t.Fatal(err)
		}
	}
	d := make([]float64, iters)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range d {
		start := time.Now()
		if err := f(sessionWarmup + i); err != nil {
			t.Fatal(err)
		}
		d[i] = float64(time.Since(start).Nanoseconds())
	}
	runtime.ReadMemStats(&after)
	slices.Sort(d)
	return measure{d[iters/2], float64(after.Mallocs-before.Mallocs) / float64(iters)}
}

// sessionData are the objects of the session cycles: look is the table of
// sessionSize objects (and its lookups), ins holds the objects the insert
// cycles add, from index sessionSize on.
type sessionData struct{ look, ins *Dataset }

func newSessionData(iters int) sessionData {
	return sessionData{NewDataset(sessionSize, SetLayout), NewDataset(sessionSize+sessionWarmup+iters, SetLayout)}
}

// peerSessions times a peer's session cycles on a fresh copy of base (a
// store of sd.look): open, one lookup, close; then open in the durable
// mode, one insert of a new object, close.
func peerSessions(t *testing.T, sys System, base, dir string, sd sessionData, iters int) (lookup, insert measure) {
	path := filepath.Join(dir, sys.Name+"-session")
	os.RemoveAll(path)
	if err := CopyTree(base, path); err != nil {
		t.Fatal(err)
	}
	lookup = cycles(t, iters, func(i int) error {
		s, err := sys.Open(path, SetLayout, Fast)
		if err != nil {
			return err
		}
		j := i % sessionSize
		got, err := s.Get(sd.look, j)
		if err == nil && got != 1 {
			err = fmt.Errorf("%s: session lookup %d found %d objects", sys.Name, j, got)
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		return err
	})
	insert = cycles(t, iters, func(i int) error {
		s, err := sys.Open(path, SetLayout, Durable)
		if err != nil {
			return err
		}
		err = s.Put(sd.ins, sessionSize+i)
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		return err
	})
	return lookup, insert
}

// godetsSessions are the same cycles as exclusive sessions: exclusive.Do
// for the lookup, exclusive.With with the default Durability (Ordered) for
// the insert.
func godetsSessions(t *testing.T, base, dir string, sd sessionData, iters int) (lookup, insert measure) {
	path := filepath.Join(dir, "godets-session.dets")
	os.Remove(path)
	if err := CopyTree(base, path); err != nil {
		t.Fatal(err)
	}
	lookup = cycles(t, iters, func(i int) error {
		j := i % sessionSize
		n, err := exclusive.Do(path, exclusive.Options{}, func(tb *dets.Table) (int, error) {
			objs, err := tb.Lookup(sd.look.LookupTerms[j])
			return len(objs), err
		})
		if err == nil && n != 1 {
			err = fmt.Errorf("godets: session lookup %d found %d objects", j, n)
		}
		return err
	})
	insert = cycles(t, iters, func(i int) error {
		return exclusive.With(path, exclusive.Options{}, func(tb *dets.Table) error {
			return tb.Insert(sd.ins.Objects[sessionSize+i])
		})
	})
	return lookup, insert
}
