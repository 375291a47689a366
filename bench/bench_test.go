package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var workDir string // shared by every benchmark; removed by TestMain

func TestMain(m *testing.M) {
	if os.Getenv(peerChildEnv) != "" { // a writer of the open-after-kill workload
		os.Exit(peerWriterChild())
	}
	d, err := os.MkdirTemp("", "godets-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// sizes are the table sizes: BENCH_SIZES (comma-separated) or 10k and 100k,
// plus 1M with BENCH_LARGE=1.
func sizes(tb testing.TB) []int {
	spec := os.Getenv("BENCH_SIZES")
	if spec == "" {
		spec = "10000,100000"
		if os.Getenv("BENCH_LARGE") == "1" {
			spec += ",1000000"
		}
	}
	var ns []int
	for _, s := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			tb.Fatalf("bench: bad BENCH_SIZES %q", spec)
		}
		ns = append(ns, n)
	}
	return ns
}

var (
	builtMu sync.Mutex
	built   = map[int]string{}
)

// closedTable returns a properly closed Go-built set of objects 0..n-1,
// built once per process. Benchmarks only read it.
func closedTable(tb testing.TB, n int) string {
	builtMu.Lock()
	defer builtMu.Unlock()
	if p, ok := built[n]; ok {
		return p
	}
	p := filepath.Join(workDir, fmt.Sprintf("closed-%d.dets", n))
	if err := Build(p, n); err != nil {
		tb.Fatal(err)
	}
	built[n] = p
	return p
}

func lookupKeys(n int) []etf.Term {
	keys := make([]etf.Term, n)
	for j := range keys {
		keys[j] = Key(LookupIndex(j, n))
	}
	return keys
}

// benchInsert: one op is a whole table: create, n single inserts, close.
// ns/insert is the figure compared with OTP.
func benchInsert(b *testing.B, n int) { benchInsertWith(b, n, dets.Options{}) }

// benchInsertWith is benchInsert into a set opened with opts: its
// Durability (the default, Ordered, fsyncs the data before Close writes
// the closed header, which OTP's close does not) and its Format.
func benchInsertWith(b *testing.B, n int, opts dets.Options) {
	opts.Kind = dets.Set
	objs := make([]etf.Term, n)
	for i := range objs {
		objs[i] = Object(i)
	}
	path := filepath.Join(b.TempDir(), "insert.dets")
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		os.Remove(path)
		b.StartTimer()
		t, err := dets.Open(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range objs {
			if err := t.Insert(o); err != nil {
				b.Fatal(err)
			}
		}
		if err := t.Close(); err != nil {
			b.Fatal(err)
		}
	}
	perItem(b, n, "insert")
}

// benchLookup: one op is one lookup of a random present key.
func benchLookup(b *testing.B, n int) { benchLookupIn(b, closedTable(b, n), n) }

// benchLookupIn times lookups of random present keys in the closed table
// of n objects at path.
func benchLookupIn(b *testing.B, path string, n int) {
	t, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	keys := lookupKeys(n)
	b.ReportAllocs()
	j := 0
	for b.Loop() {
		objs, err := t.Lookup(keys[j])
		if err != nil || len(objs) != 1 {
			b.Fatal(len(objs), err)
		}
		if j++; j == n {
			j = 0
		}
	}
}

// benchScan: one op is a full traversal; ns/object is compared with OTP.
func benchScan(b *testing.B, n int) { benchScanIn(b, closedTable(b, n), n) }

// benchScanIn times full traversals of the closed table of n objects at
// path.
func benchScanIn(b *testing.B, path string, n int) {
	t, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	b.ReportAllocs()
	for b.Loop() {
		c := 0
		for _, err := range t.All() {
			if err != nil {
				b.Fatal(err)
			}
			c++
		}
		if c != n {
			b.Fatalf("scan saw %d objects, want %d", c, n)
		}
	}
	perItem(b, n, "object")
}

// benchOpen: one op is opening a properly closed file (read-write, as OTP's
// default); the close is not timed.
func benchOpen(b *testing.B, n int) { benchOpenOf(b, closedTable(b, n)) }

// benchOpenOf times the read-write open of the closed table at path.
func benchOpenOf(b *testing.B, path string) {
	b.ReportAllocs()
	for b.Loop() {
		t, err := dets.Open(path, dets.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := t.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func perItem(b *testing.B, n int, unit string) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/"+unit)
	}
}

func BenchmarkInsert(b *testing.B) { forSizes(b, benchInsert) }
func BenchmarkLookup(b *testing.B) { forSizes(b, benchLookup) }
func BenchmarkScan(b *testing.B)   { forSizes(b, benchScan) }
func BenchmarkOpen(b *testing.B)   { forSizes(b, benchOpen) }

func forSizes(b *testing.B, f func(*testing.B, int)) {
	for _, n := range sizes(b) {
		b.Run(strconv.Itoa(n), func(b *testing.B) { f(b, n) })
	}
}
