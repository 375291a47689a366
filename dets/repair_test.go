package dets

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

var repairSeed = flag.Uint64("repair.seed", 0, "seed for the randomized repair tests (0: from the clock)")

func rpSeed(t testing.TB) uint64 {
	s := *repairSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -repair.seed=%d)", s, s)
	return s
}

var rpKinds = []Kind{Set, Bag, DuplicateBag}

// obj builds the test object {K, V, Pad} with a payload whose size varies so
// that buckets land in several size classes.
func rpObj(k, v int, pad int) etf.Term {
	return etf.Tuple{etf.Int(k), etf.Int(v), etf.Binary(bytes.Repeat([]byte{byte(k)}, pad))}
}

// model is a multiset of encoded objects with the kind's insert rules.
type rpModel struct {
	kind Kind
	objs map[string][]string // key encoding -> object encodings in order
}

func newRPModel(kind Kind) *rpModel { return &rpModel{kind: kind, objs: map[string][]string{}} }

func rpEnc(t testing.TB, x etf.Term) string {
	b, err := etf.Encode(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (m *rpModel) insert(t testing.TB, o etf.Term) {
	k := rpEnc(t, o.(etf.Tuple)[0])
	e := rpEnc(t, o)
	switch m.kind {
	case Set:
		m.objs[k] = []string{e}
	case Bag:
		l := slices.DeleteFunc(m.objs[k], func(s string) bool { return s == e })
		m.objs[k] = append(l, e)
	default:
		m.objs[k] = append(m.objs[k], e)
	}
}

func (m *rpModel) delete(t testing.TB, key etf.Term) { delete(m.objs, rpEnc(t, key)) }

func (m *rpModel) sorted() []string {
	var out []string
	for _, l := range m.objs {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}

// contents returns the sorted encodings of every object in t.
func rpContents(t testing.TB, tab *Table) []string {
	t.Helper()
	var out []string
	for o, err := range tab.All() {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		out = append(out, rpEnc(t, o))
	}
	slices.Sort(out)
	return out
}

// rpReopenClean opens path with NoRepair, runs Check and returns the
// contents.
func rpReopenClean(t testing.TB, path string) []string {
	t.Helper()
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen with NoRepair: %v", err)
	}
	defer tab.Close()
	if err := tab.Check(); err != nil {
		t.Fatalf("Check after repair: %v", err)
	}
	return rpContents(t, tab)
}

// rpDirtyImage runs ops on a table of kind in dir and returns the bytes of the
// file as a kill -9 would leave them after the last op (the table is not
// closed when the bytes are taken), plus the model of the state.
func rpDirtyImage(t testing.TB, dir string, kind Kind, r *rand.Rand, nOps int) ([]byte, *rpModel) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("src-%d.dets", r.Uint64()))
	tab, err := Open(path, Options{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer tab.Close()
	m := newRPModel(kind)
	keys := max(nOps/4, 4)
	for i := range nOps {
		k := r.IntN(keys)
		switch x := r.IntN(100); {
		case x < 70:
			o := rpObj(k, r.IntN(3), r.IntN(3)*r.IntN(300))
			if err := tab.Insert(o); err != nil {
				t.Fatal(err)
			}
			m.insert(t, o)
		case x < 85:
			if err := tab.Delete(etf.Int(k)); err != nil {
				t.Fatal(err)
			}
			m.delete(t, etf.Int(k))
		case x < 88:
			if err := tab.Sync(); err != nil {
				t.Fatal(err)
			}
		default:
			o := rpObj(k, i, 10)
			if err := tab.Insert(o); err != nil {
				t.Fatal(err)
			}
			m.insert(t, o)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, m
}

func rpWriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func rpNoTemps(t testing.TB, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".TMP") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestRepairGoDirtyFiles repairs files left dirty by the Go engine (the
// state a kill -9 leaves, since the engine has no write cache) and expects
// exactly the model's objects back.
func TestRepairGoDirtyFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(rpSeed(t), 1))
	for _, kind := range rpKinds {
		for _, nOps := range []int{0, 1, 10, 300, 2000} {
			t.Run(fmt.Sprintf("%s/%d", kind, nOps), func(t *testing.T) {
				dir := t.TempDir()
				img, m := rpDirtyImage(t, dir, kind, r, nOps)
				path := filepath.Join(dir, "t.dets")
				rpWriteFile(t, path, img)
				if nOps > 0 {
					if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
						t.Fatalf("NoRepair on a dirty file: %v, want ErrNeedsRepair", err)
					}
					if b, _ := os.ReadFile(path); !bytes.Equal(b, img) {
						t.Fatal("NoRepair changed the file")
					}
				}
				tab, err := Open(path, Options{Repair: AutoRepair})
				if err != nil {
					t.Fatalf("AutoRepair: %v", err)
				}
				got := rpContents(t, tab)
				if err := tab.Check(); err != nil {
					t.Fatalf("Check: %v", err)
				}
				if err := tab.Close(); err != nil {
					t.Fatal(err)
				}
				if want := m.sorted(); !slices.Equal(got, want) {
					t.Fatalf("repaired table has %d objects, model %d", len(got), len(want))
				}
				if again := rpReopenClean(t, path); !slices.Equal(again, got) {
					t.Fatal("contents changed on reopen")
				}
				rpNoTemps(t, dir)
			})
		}
	}
}

// TestRepairForceCompacts: ForceRepair on a good file keeps every object and
// leaves a file no larger than before.
func TestRepairForceCompacts(t *testing.T) {
	r := rand.New(rand.NewPCG(rpSeed(t), 2))
	for _, kind := range rpKinds {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "t.dets")
			tab, err := Open(path, Options{Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			m := newRPModel(kind)
			for i := range 3000 {
				o := rpObj(i%1000, r.IntN(5), r.IntN(200))
				if err := tab.Insert(o); err != nil {
					t.Fatal(err)
				}
				m.insert(t, o)
			}
			for k := 0; k < 1000; k += 3 {
				if err := tab.Delete(etf.Int(k)); err != nil {
					t.Fatal(err)
				}
				m.delete(t, etf.Int(k))
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(path)
			tab, err = Open(path, Options{Repair: ForceRepair})
			if err != nil {
				t.Fatalf("ForceRepair: %v", err)
			}
			if err := tab.Check(); err != nil {
				t.Fatal(err)
			}
			got := rpContents(t, tab)
			tab.Close()
			if !slices.Equal(got, m.sorted()) {
				t.Fatalf("compaction changed the contents: %d objects, want %d", len(got), len(m.sorted()))
			}
			after, _ := os.Stat(path)
			t.Logf("%s: %d -> %d bytes", kind, before.Size(), after.Size())
			if after.Size() > before.Size() {
				t.Errorf("compacted file grew: %d -> %d", before.Size(), after.Size())
			}
			rpReopenClean(t, path)
			rpNoTemps(t, dir)
		})
	}
}
