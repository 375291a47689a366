package dets

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/godets/godets/etf"
)

// A file open in this process may get a second handle only when neither
// handle can write (ErrAlreadyOpen docs).

// closedTable creates a closed table of n objects (reObj) and returns its
// path.
func closedTable(t *testing.T, n int) string {
	t.Helper()
	path := tmpFile(t, "shared.dets")
	tab, err := Open(path, Options{})
	must(t, err)
	for i := range n {
		must(t, tab.Insert(reObj(i)))
	}
	must(t, tab.Close())
	return path
}

func wantAlreadyOpen(t *testing.T, what string, tab *Table, err error) {
	t.Helper()
	if !errors.Is(err, ErrAlreadyOpen) || tab != nil {
		if tab != nil {
			tab.Close()
		}
		t.Fatalf("%s: %v, want ErrAlreadyOpen", what, err)
	}
}

// TestSecondWriterRefused is the scenario: two read-write opens
// of one file, inserts through both. The second open is refused, and
// every object inserted through the first survives its close.
func TestSecondWriterRefused(t *testing.T) {
	path := closedTable(t, 0)
	first, err := Open(path, Options{})
	must(t, err)
	second, err := Open(path, Options{})
	wantAlreadyOpen(t, "second read-write open", second, err)
	for i := range 600 {
		must(t, first.Insert(reObj(i)))
		if second != nil {
			must(t, second.Insert(reObj(1000+i)))
		}
	}
	must(t, first.Close())
	tab := openT(t, path, Options{Repair: NoRepair})
	mustCheck(t, tab)
	if info, _ := tab.Info(); info.Size != 600 {
		t.Fatalf("%d objects after the close, want 600", info.Size)
	}
	for i := range 600 {
		wantLookup(t, tab, etf.Int(i), reObj(i))
	}
}

// TestOpenModes: read-only handles share a file; a writer shares it with
// nobody, whichever came first; a closed or refused handle leaves room.
func TestOpenModes(t *testing.T) {
	path := closedTable(t, 10)
	ro := Options{ReadOnly: true}
	a, err := Open(path, ro)
	must(t, err)
	b, err := Open(path, ro)
	must(t, err)
	wantLookup(t, b, etf.Int(3), reObj(3))
	w, err := Open(path, Options{})
	wantAlreadyOpen(t, "read-write open beside two readers", w, err)
	w, err = Open(path, Options{Repair: ForceRepair})
	wantAlreadyOpen(t, "forced repair beside two readers", w, err)
	must(t, a.Close())
	w, err = Open(path, Options{})
	wantAlreadyOpen(t, "read-write open beside a reader", w, err)
	must(t, b.Close())
	w, err = Open(path, Options{})
	must(t, err)
	r, err := Open(path, ro)
	wantAlreadyOpen(t, "read-only open beside a writer", r, err)
	f, err := os.Open(path)
	must(t, err)
	r, err = OpenFile(f, ro)
	wantAlreadyOpen(t, "OpenFile beside a writer", r, err)
	if _, err := f.Stat(); err == nil {
		t.Fatal("a refused OpenFile left its file open")
	}
	must(t, w.Insert(reObj(10)))
	must(t, w.Close())
	if IsOpen(path) {
		t.Fatal("registered after every handle closed")
	}
	// A failed open (here a kind mismatch) deregisters too.
	if _, err := Open(path, Options{Kind: Bag}); !errors.Is(err, ErrKindMismatch) {
		t.Fatalf("open as a bag: %v", err)
	}
	w, err = Open(path, Options{})
	must(t, err)
	wantLookup(t, w, etf.Int(10), reObj(10))
	must(t, w.Close())
}

// TestAliasRefused: a symlink, a hard link and another spelling of the
// path name the same file.
func TestAliasRefused(t *testing.T) {
	path := closedTable(t, 1)
	dir := filepath.Dir(path)
	sym, hard := filepath.Join(dir, "sym.dets"), filepath.Join(dir, "hard.dets")
	must(t, os.Symlink(path, sym))
	must(t, os.Link(path, hard))
	w, err := Open(path, Options{})
	must(t, err)
	for _, alias := range []string{sym, hard, filepath.Join(dir, ".", "..", filepath.Base(dir), filepath.Base(path))} {
		for _, ro := range []bool{false, true} {
			tab, err := Open(alias, Options{ReadOnly: ro})
			wantAlreadyOpen(t, alias, tab, err)
		}
	}
	must(t, w.Close())
	r, err := Open(sym, Options{ReadOnly: true})
	must(t, err)
	tab, err := Open(hard, Options{})
	wantAlreadyOpen(t, "writer by hard link beside a reader by symlink", tab, err)
	must(t, r.Close())
}

// TestRepairOfOpenFileRefused: Repair replaces the file it repairs with a
// new one, so it must not run under an open handle, nor let an open run
// while it works.
func TestRepairOfOpenFileRefused(t *testing.T) {
	path := closedTable(t, 50)
	for _, ro := range []bool{false, true} {
		tab, err := Open(path, Options{ReadOnly: ro})
		must(t, err)
		before := fileHash(t, path)
		if _, err := Repair(path, Options{}, nil); !errors.Is(err, ErrAlreadyOpen) {
			t.Fatalf("Repair of a file open (read-only %v): %v, want ErrAlreadyOpen", ro, err)
		}
		if fileHash(t, path) != before {
			t.Fatal("a refused repair changed the file")
		}
		wantLookup(t, tab, etf.Int(7), reObj(7))
		must(t, tab.Close())
	}
	if _, err := Repair(path, Options{}, nil); err != nil {
		t.Fatalf("Repair of a closed file: %v", err)
	}
	// During a repair of an open (ForceRepair here), the file is held.
	var during []error
	real := repairFile
	setForTest(t, &repairFile, func(p string, opts Options, h *header) error {
		for _, ro := range []bool{true, false} {
			tab, err := Open(path, Options{ReadOnly: ro})
			if tab != nil {
				tab.Close()
			}
			during = append(during, err)
		}
		_, err := Repair(path, Options{}, nil)
		during = append(during, err)
		return real(p, opts, h)
	})
	tab, err := Open(path, Options{Repair: ForceRepair})
	must(t, err)
	defer tab.Close()
	wantLookup(t, tab, etf.Int(7), reObj(7))
	if len(during) != 3 {
		t.Fatalf("the repair seam ran %d opens, want 3", len(during))
	}
	for i, err := range during {
		if !errors.Is(err, ErrAlreadyOpen) {
			t.Fatalf("open #%d during the repair: %v, want ErrAlreadyOpen", i, err)
		}
	}
}

// TestConcurrentOpens: goroutines open one file again and again, each
// time read-only or read-write at random, use it and close it. At no
// moment is a writer open beside any other handle, and a refusal is
// always ErrAlreadyOpen. Seeded: -seed.
func TestConcurrentOpens(t *testing.T) {
	seed := uint64(testSeed(t))
	path := closedTable(t, 20)
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	var readers, writers, opened, refused atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range rounds {
				ro := r.IntN(3) == 0
				tab, err := Open(path, Options{ReadOnly: ro})
				if err != nil {
					if !errors.Is(err, ErrAlreadyOpen) {
						errc <- err
						return
					}
					refused.Add(1)
					continue
				}
				opened.Add(1)
				var ok bool
				if ro {
					readers.Add(1)
					ok = writers.Load() == 0
					_, err = tab.Lookup(etf.Int(i % 20))
					readers.Add(-1)
				} else {
					ok = writers.Add(1) == 1 && readers.Load() == 0
					err = tab.Insert(tup(etf.Int(100+g), etf.Int(i)))
					writers.Add(-1)
				}
				if cerr := tab.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					errc <- err
					return
				}
				if !ok {
					errc <- errors.New("a writer was open beside another handle")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("%d opens, %d refused", opened.Load(), refused.Load())
	if opened.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("%d opens, %d refused: the race was not run", opened.Load(), refused.Load())
	}
	tab := openT(t, path, Options{Repair: NoRepair})
	mustCheck(t, tab)
}
