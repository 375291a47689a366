package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// querySizes are the table sizes of the query comparison: BENCH_SIZES, or
// 100k, plus 1M with BENCH_LARGE=1.
func querySizes(t testing.TB) []int {
	if os.Getenv("BENCH_SIZES") != "" {
		return sizes(t)
	}
	ns := []int{100000}
	if os.Getenv("BENCH_LARGE") == "1" {
		ns = append(ns, 1000000)
	}
	return ns
}

// benchSelect: one op is one select over the whole table (a non-key
// pattern with a guard on a byte of the value); ns/object is compared
// with OTP's dets:select.
func benchSelect(b *testing.B, n int) {
	t, err := dets.Open(closedTable(b, n), dets.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	ms := SelectSpec()
	want := SelectMatches(n)
	b.ReportAllocs()
	for b.Loop() {
		res, err := t.Select(ms)
		if err != nil || len(res) != want {
			b.Fatalf("select: %d results, want %d (%v)", len(res), want, err)
		}
	}
	perItem(b, n, "object")
}

// benchMatchObjectKey: one op is one match_object with the key bound, for
// a random present key; compared with benchLookup.
func benchMatchObjectKey(b *testing.B, n int) {
	t, err := dets.Open(closedTable(b, n), dets.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	patterns := make([]etf.Term, n)
	for j, k := range lookupKeys(n) {
		patterns[j] = etf.Tuple{k, etf.Atom("_")}
	}
	b.ReportAllocs()
	j := 0
	for b.Loop() {
		objs, err := t.MatchObject(patterns[j])
		if err != nil || len(objs) != 1 {
			b.Fatal(len(objs), err)
		}
		if j++; j == n {
			j = 0
		}
	}
}

func BenchmarkSelect(b *testing.B)         { forQuerySizes(b, benchSelect) }
func BenchmarkMatchObjectKey(b *testing.B) { forQuerySizes(b, benchMatchObjectKey) }

func forQuerySizes(b *testing.B, f func(*testing.B, int)) {
	for _, n := range querySizes(b) {
		b.Run(strconv.Itoa(n), func(b *testing.B) { f(b, n) })
	}
}

// TestCompareQuery: issue 21's speed targets. select with a guard on a
// byte of the value over the bench workload, against OTP's dets:select on
// a copy of the same file (ns/object, target >= 5x); a bound-key
// match_object against a Lookup in godets (target within 2x), with OTP's
// match_object and lookup for reference. Medians of BENCH_ROUNDS
// interleaved rounds (default 3), as TestCompareEngine.
func TestCompareQuery(t *testing.T) {
	if os.Getenv("BENCH_COMPARE") != "1" {
		t.Skip("bench: set BENCH_COMPARE=1 (or use run.sh) to compare with OTP")
	}
	o, err := NewQueryOTP(t.TempDir())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	rounds := 3
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("bench: bad BENCH_ROUNDS %q", v)
		}
	}
	for _, n := range querySizes(t) {
		// OTP reads a copy of the file Go reads: the same layout.
		otpFile := copyFile(t, closedTable(t, n), filepath.Join(t.TempDir(), "otp.dets"))
		goNs, otpNs, allocs := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		for range rounds {
			res, err := o.Run(30*time.Minute, "select", fmt.Sprint(n), otpFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := res["select"].Int("found"); got != int64(SelectMatches(n)) {
				t.Fatalf("OTP's select found %d objects, want %d", got, SelectMatches(n))
			}
			otpNs["select"] = append(otpNs["select"], float64(res["select"].Int("total_ns"))/float64(n))
			res, err = o.Run(30*time.Minute, "match_object", fmt.Sprint(n), otpFile)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range []string{"match_object", "lookup"} {
				if res[op].Int("total_ns") <= 0 {
					t.Fatalf("OTP gave no %s result: %v", op, res)
				}
				otpNs[op] = append(otpNs[op], float64(res[op].Int("total_ns"))/float64(n))
			}
			for op, f := range map[string]func(*testing.B, int){
				"select": benchSelect, "match_object": benchMatchObjectKey, "lookup": benchLookup,
			} {
				r := testing.Benchmark(func(b *testing.B) { f(b, n) })
				if r.N == 0 {
					t.Fatalf("go %s benchmark failed", op)
				}
				per := float64(r.N)
				if op == "select" {
					per *= float64(n)
				}
				goNs[op] = append(goNs[op], float64(r.T.Nanoseconds())/per)
				allocs[op] = append(allocs[op], float64(r.MemAllocs)/per)
			}
		}
		med := func(op string) (float64, float64, float64) {
			return median(goNs[op]), median(otpNs[op]), median(allocs[op])
		}
		sg, so, sa := med("select")
		mg, mo, ma := med("match_object")
		lg, lo, la := med("lookup")
		within := mg / lg
		rows := []row{
			speedRow("select (per object)", sg, so, sa, 5),
			refRow(speedRow("match_object, key", mg, mo, ma, 1)),
			refRow(speedRow("lookup", lg, lo, la, 1)),
			{"match_object/lookup", fmt.Sprintf("%.2fx", within), fmt.Sprintf("%.2fx", mo/lo), "", "", "<= 2x (godets)", verdict(within <= 2)},
		}
		printRows(fmt.Sprintf("queries, N=%d (16-byte keys, 100-byte values, set; select: a guard on byte 3 of the value, %d matches), medians of %d interleaved rounds",
			n, SelectMatches(n), rounds), rows)
		for _, op := range []string{"select", "match_object", "lookup"} {
			report("  %-12s godets %s; OTP %s; ratio %s\n", op, nsList(goNs[op]), nsList(otpNs[op]), ratioList(otpNs[op], goNs[op]))
		}
	}
}
