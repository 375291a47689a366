package exclusive

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// #16 item 12: every combination of Repair and ReadOnly in Options and in
// Options.Table. A setting made on one side applies; two different repair
// modes, an unknown mode, and a forced repair of a read-only session are
// *OptionsError before any file system access; nothing else changes.
func TestOptionsMerge(t *testing.T) {
	modes := []dets.RepairMode{dets.NoRepair, dets.AutoRepair, dets.ForceRepair, dets.RepairMode(7)}
	for _, r := range modes {
		for _, tr := range modes {
			for _, ro := range []bool{false, true} {
				for _, tro := range []bool{false, true} {
					opts := Options{Repair: r, ReadOnly: ro, Table: dets.Options{Repair: tr, ReadOnly: tro, Kind: dets.Bag, KeyPos: 2}}
					name := fmt.Sprintf("Repair=%v,ReadOnly=%v,Table.Repair=%v,Table.ReadOnly=%v", r, ro, tr, tro)
					t.Run(name, func(t *testing.T) { checkMerge(t, opts) })
				}
			}
		}
	}
}

func checkMerge(t *testing.T, opts Options) {
	// The rule, spelled out independently of tableOptions.
	wantRepair := opts.Repair
	if wantRepair == dets.NoRepair {
		wantRepair = opts.Table.Repair
	}
	wantReadOnly := opts.ReadOnly || opts.Table.ReadOnly
	badRepair := opts.Repair > dets.ForceRepair || opts.Table.Repair > dets.ForceRepair ||
		opts.Repair != dets.NoRepair && opts.Table.Repair != dets.NoRepair && opts.Repair != opts.Table.Repair
	forcedReadOnly := !badRepair && wantReadOnly && wantRepair == dets.ForceRepair
	conflict := badRepair || forcedReadOnly

	got, err := opts.tableOptions()
	if !conflict {
		want := opts.Table
		want.Repair, want.ReadOnly = wantRepair, wantReadOnly
		if err != nil || got.Repair != want.Repair || got.ReadOnly != want.ReadOnly || got.Kind != want.Kind || got.KeyPos != want.KeyPos {
			t.Fatalf("got %+v, %v; want Repair %v, ReadOnly %v, Kind and KeyPos kept", got, err, want.Repair, want.ReadOnly)
		}
		return
	}
	dir := t.TempDir()
	called := false
	err = With(filepath.Join(dir, "t.dets"), opts, func(*dets.Table) error { called = true; return nil })
	var oe *OptionsError
	if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, dets.ErrInvalidOptions) || called {
		t.Fatalf("got %v, called %v; want an *OptionsError", err, called)
	}
	if errors.Is(err, dets.ErrReadOnly) != forcedReadOnly {
		t.Fatalf("%v: matches dets.ErrReadOnly %v, want %v", err, !forcedReadOnly, forcedReadOnly)
	}
	if Code(err) != "invalid_options" || strings.Contains(Message(err), dir) {
		t.Fatalf("code %s, message %q", Code(err), Message(err))
	}
	if _, err := Do(filepath.Join(dir, "t.dets"), opts, func(*dets.Table) (int, error) { return 0, nil }); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Do: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("touched the file system: %v", ents)
	}
}

// dirtyTable returns the path of a set file that was not closed properly
// (a copy taken while it was open for writing) holding key k, and its bytes.
func dirtyTable(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "src.dets"), filepath.Join(dir, "t.dets")
	tb, err := dets.Open(src, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Insert(etf.Tuple{etf.Atom("k"), etf.Int(1)}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dets.Open(path, dets.Options{ReadOnly: true}); !errors.Is(err, dets.ErrNeedsRepair) {
		t.Fatalf("the copy is not dirty: %v", err)
	}
	return path, b
}

// The two examples on a file that needs repair: Repair in Options
// with ReadOnly in Table is a read-only open that refuses to repair (it used
// to open read-write and repair), and Repair in Table alone repairs (it
// used to give needs_repair).
func TestOptionsMergeOnDirtyFile(t *testing.T) {
	path, orig := dirtyTable(t)
	err := With(path, Options{Repair: dets.AutoRepair, Table: dets.Options{ReadOnly: true}}, noop)
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != OpenFailure || !errors.Is(err, dets.ErrNotClosed) {
		t.Fatalf("read-only with AutoRepair: %v, want dets.ErrNotClosed", err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, orig) {
		t.Fatalf("the refused file changed (%v)", err)
	}
	n, err := Do(path, Options{Table: dets.Options{Repair: dets.AutoRepair}}, func(tb *dets.Table) (int, error) {
		objs, err := tb.Lookup(etf.Atom("k"))
		return len(objs), err
	})
	if err != nil || n != 1 {
		t.Fatalf("AutoRepair in Table: %d objects, %v", n, err)
	}
}

// ReadOnly set in Table only makes a read-only session.
func TestTableReadOnlyApplies(t *testing.T) {
	path := newSet1000(t)
	err := With(path, Options{Table: dets.Options{ReadOnly: true}}, func(tb *dets.Table) error {
		return tb.Insert(etf.Tuple{etf.Int(1), etf.Int(2)})
	})
	if !errors.Is(err, dets.ErrReadOnly) || Code(err) != "callback_failed" {
		t.Fatalf("got %v, want the read-only refusal from the callback", err)
	}
}
