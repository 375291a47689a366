package dets

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	"github.com/godets/godets/internal/testutil"
)

// The package's old seed names stay accepted (internal/testutil owns
// -seed and GODETS_SEED).
var (
	_ = testutil.SeedAlias("", "DETS_SEED")
	_ = testutil.SeedAlias("repair.seed", "")
)

// testSeed returns the seed for a randomized test and logs it with the
// command that replays it.
func testSeed(t testing.TB) int64 { return testutil.Seed(t) }

// memFS adapts the in-memory crashfs.FS to the FS interface (Go needs
// OpenFile's result type to match exactly). Crash and damage tests run
// tens of thousands of opens and repairs on it, where file-system
// syscalls would dominate; the embedded FS keeps crashfs's fault
// injection, log and crash images. internal/testutil/tabletest has the
// same adapter for the other packages, which dets's own tests cannot
// import.
type memFS struct{ *crashfs.FS }

func newMemFS() memFS { return memFS{crashfs.New()} }

func (m memFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := m.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (m memFS) put(name string, b []byte) { m.FS.Put(name, b) }
func (m memFS) get(name string) []byte    { return m.FS.Get(name) }
func (m memFS) names() []string           { return m.FS.Names() }

// setForTest sets *v to x until the end of t.
func setForTest[T any](t testing.TB, v *T, x T) {
	old := *v
	*v = x
	t.Cleanup(func() { *v = old })
}

// withTuning returns opts with its tuning (defaultTuning unless set), as
// change alters it, in force for the table and its repairs: a test sets
// its own thresholds, not the package's, so that it can run in parallel
// with others.
func withTuning(opts Options, change func(*tuning)) Options {
	tn := opts.tuned()
	change(&tn)
	opts.tune = &tn
	return opts
}

// countMoves counts the blocks compactTail moves in tab from now on.
func countMoves(tab *Table) *atomic.Int64 {
	n := new(atomic.Int64)
	tab.mu.Lock()
	tab.tune.blockMoved = func() { n.Add(1) }
	tab.mu.Unlock()
	return n
}

// countSplits makes the repairs run with opts count the builds that ran on
// two goroutines into the result.
func countSplits(opts Options) (Options, *atomic.Int64) {
	n := new(atomic.Int64)
	return withTuning(opts, func(tn *tuning) { tn.buildSplit = func() { n.Add(1) } }), n
}

// openT opens a table and registers a cleanup that runs Check, then Close.
func openT(t testing.TB, path string, opts Options) *Table {
	t.Helper()
	tab, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := tab.Check(); err != nil && err != ErrClosed {
			t.Errorf("Check at cleanup: %v", err)
		}
		if err := tab.Close(); err != nil {
			t.Errorf("Close at cleanup: %v", err)
		}
	})
	return tab
}

// mustCheck fails the test if Check finds problems.
func mustCheck(t testing.TB, tab *Table) {
	t.Helper()
	if err := tab.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func tmpFile(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}

func fileHash(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func tup(elems ...etf.Term) etf.Tuple { return etf.Tuple(elems) }

func bin(s string) etf.Binary { return etf.Binary(s) }

func readFileT(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
