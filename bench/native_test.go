package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

// The native format against otp9 in the same run (issue 19, "Speed and
// size"; docs/format-native.md §14, §15.6): the engine workloads of
// TestCompareEngine and the session insert of TestCompareSessions, for
// both formats, round by round with the order of the two formats swapped
// each round, so that neither always runs first on a loaded machine.

// nativeSizeEstimate is §14's estimate of a native file at 1M objects of
// the benchmark workload, in bytes an object.
const nativeSizeEstimate = 172

var (
	formatBuiltMu sync.Mutex
	formatBuilt   = map[string]string{}
)

// closedTableOf is closedTable for a format: a properly closed set of
// objects 0..n-1, inserted one by one, built once per process.
func closedTableOf(tb testing.TB, n int, f dets.Format) string {
	formatBuiltMu.Lock()
	defer formatBuiltMu.Unlock()
	name := fmt.Sprintf("closed-%s-%d.dets", f, n)
	if p, ok := formatBuilt[name]; ok {
		return p
	}
	p := filepath.Join(workDir, name)
	if err := buildFormat(p, n, f); err != nil {
		tb.Fatal(err)
	}
	formatBuilt[name] = p
	return p
}

func buildFormat(path string, n int, f dets.Format) error {
	t, err := dets.Open(path, dets.Options{Kind: dets.Set, Format: f})
	if err != nil {
		return err
	}
	for i := range n {
		if err := t.Insert(Object(i)); err != nil {
			t.Close()
			return fmt.Errorf("bench: insert %d: %w", i, err)
		}
	}
	return t.Close()
}

func formatInsert(b *testing.B, n int, f dets.Format) {
	benchInsertWith(b, n, dets.Options{Format: f})
}

func formatLookup(b *testing.B, n int, f dets.Format) {
	benchLookupIn(b, closedTableOf(b, n, f), n)
}

func formatScan(b *testing.B, n int, f dets.Format) {
	benchScanIn(b, closedTableOf(b, n, f), n)
}

func formatOpen(b *testing.B, n int, f dets.Format) { benchOpenOf(b, closedTableOf(b, n, f)) }

// TestCompareNative prints, per size, native's time over otp9's for
// insert, lookup, scan and open (medians of the interleaved rounds), the
// file sizes against §14's estimate, and the session insert on a
// 1,000-object table. Like the other comparisons it never fails on speed.
func TestCompareNative(t *testing.T) {
	if os.Getenv("BENCH_COMPARE") != "1" && os.Getenv("BENCH_NATIVE") != "1" {
		t.Skip("bench: set BENCH_NATIVE=1 (or BENCH_COMPARE=1) to compare native with otp9")
	}
	rounds := benchRounds(t)
	formats := []dets.Format{dets.OTP9, dets.Native}
	type op struct {
		name   string
		perObj bool
		run    func(*testing.B, int, dets.Format)
		within float64 // target: native / otp9 at most this
	}
	ops := []op{
		{"insert (per object)", true, formatInsert, 1.15},
		{"lookup (random)", false, formatLookup, 1.15},
		{"scan (per object)", true, formatScan, 1.15},
		{"open (closed file)", false, formatOpen, 1.20},
	}
	for _, n := range sizes(t) {
		times := map[string]map[dets.Format][]float64{}
		allocs := map[string]map[dets.Format][]float64{}
		for _, o := range ops {
			times[o.name], allocs[o.name] = map[dets.Format][]float64{}, map[dets.Format][]float64{}
		}
		for round := range rounds {
			for i := range formats {
				f := formats[(i+round)%len(formats)]
				for _, o := range ops {
					r := testing.Benchmark(func(b *testing.B) { o.run(b, n, f) })
					if r.N == 0 {
						t.Fatalf("%s %s benchmark failed", f, o.name)
					}
					per := float64(r.N)
					if o.perObj {
						per *= float64(n)
					}
					times[o.name][f] = append(times[o.name][f], float64(r.T.Nanoseconds())/per)
					allocs[o.name][f] = append(allocs[o.name][f], float64(r.MemAllocs)/per)
				}
			}
		}
		var rows []row
		for _, o := range ops {
			ot, nt := median(times[o.name][dets.OTP9]), median(times[o.name][dets.Native])
			rows = append(rows, row{o.name, ns(nt), ns(ot), fmt.Sprintf("%.2f", nt/ot),
				fmt.Sprintf("%.1f / %.1f", median(allocs[o.name][dets.Native]), median(allocs[o.name][dets.OTP9])),
				fmt.Sprintf("<= %.2f", o.within), verdict(nt/ot <= o.within)})
		}
		size := map[dets.Format]int64{}
		for _, f := range formats {
			fi, err := os.Stat(closedTableOf(t, n, f))
			if err != nil {
				t.Fatal(err)
			}
			size[f] = fi.Size()
		}
		rows = append(rows, row{"file size", fmt.Sprintf("%d B", size[dets.Native]), fmt.Sprintf("%d B", size[dets.OTP9]),
			fmt.Sprintf("%.2f", float64(size[dets.Native])/float64(size[dets.OTP9])), "", "<= otp9", verdict(size[dets.Native] <= size[dets.OTP9])})
		rows = append(rows, row{"bytes an object", fmt.Sprintf("%.0f", float64(size[dets.Native])/float64(n)),
			fmt.Sprintf("%.0f", float64(size[dets.OTP9])/float64(n)), "", "",
			fmt.Sprintf("§14: ~%d at 1M", nativeSizeEstimate), ""})
		printRows(fmt.Sprintf("native against otp9, N=%d (16-byte keys, 100-byte values, set), medians of %d interleaved rounds; "+
			"columns: native, otp9, native/otp9, allocs native / otp9", n, rounds), rows)
		for _, o := range ops {
			report("  %-20s native %s; otp9 %s\n", o.name, nsList(times[o.name][dets.Native]), nsList(times[o.name][dets.OTP9]))
		}
	}

	// The session insert: lock, open, 1 insert, close, release.
	const iters = 1000
	dir := t.TempDir()
	sess := map[dets.Format][]float64{}
	for round := range rounds {
		for i := range formats {
			f := formats[(i+round)%len(formats)]
			p := filepath.Join(dir, fmt.Sprintf("s-%s-%d.dets", f, round))
			if err := buildFormat(p, 1000, f); err != nil {
				t.Fatal(err)
			}
			d := timeIt(t, iters, func(i int) error {
				return exclusive.With(p, exclusive.Options{}, func(tb *dets.Table) error {
					return tb.Insert(Object(1000 + i))
				})
			})
			sess[f] = append(sess[f], d.med)
		}
	}
	ot, nt := median(sess[dets.OTP9]), median(sess[dets.Native])
	printRows(fmt.Sprintf("session insert (exclusive.With, 1 insert, 1,000-object set), medians of %d rounds of %d", rounds, iters),
		[]row{{"session insert median", ns(nt), ns(ot), fmt.Sprintf("%.2f", nt/ot), "", "<= 1.00", verdict(nt <= ot)}})
	report("  session insert       native %s; otp9 %s\n", nsList(sess[dets.Native]), nsList(sess[dets.OTP9]))
}
