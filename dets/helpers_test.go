package dets

import (
	"crypto/sha256"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0: time-based)")

// testSeed returns the seed for a randomized test and logs it.
func testSeed(t testing.TB) int64 {
	s := *seedFlag
	if s == 0 {
		if v, err := strconv.ParseInt(os.Getenv("DETS_SEED"), 10, 64); err == nil {
			s = v
		} else {
			s = time.Now().UnixNano()
		}
	}
	t.Logf("seed %d (rerun with -seed=%d)", s, s)
	return s
}

// setForTest sets *v to x until the end of t.
func setForTest[T any](t testing.TB, v *T, x T) {
	old := *v
	*v = x
	t.Cleanup(func() { *v = old })
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
