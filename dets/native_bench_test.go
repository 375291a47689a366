package dets

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/godets/godets/etf"
)

// Native counterparts of bench_test.go's benchmarks (issue 19, "Speed and
// size"): the same objects, tables built by single inserts as the bench/
// comparison builds them.

func benchNativeTable(b *testing.B, n int) string {
	b.Helper()
	path := tmpFile(b, "native.dets")
	tab, err := Open(path, Options{Format: Native})
	must(b, err)
	for i := range n {
		must(b, tab.Insert(benchObj(i)))
	}
	must(b, tab.Close())
	return path
}

func BenchmarkNativeInsert(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			objs := make([]etf.Term, n)
			for i := range objs {
				objs[i] = benchObj(i)
			}
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				path := tmpFile(b, "ins.dets")
				tab, err := Open(path, Options{Format: Native})
				must(b, err)
				b.StartTimer()
				for _, o := range objs {
					if err := tab.Insert(o); err != nil {
						b.Fatal(err)
					}
				}
				must(b, tab.Close())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}

func BenchmarkNativeLookup(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tab, err := Open(benchNativeTable(b, n), Options{ReadOnly: true})
			must(b, err)
			defer tab.Close()
			r := rand.New(rand.NewSource(1))
			keys := make([]etf.Term, 4096)
			for i := range keys {
				keys[i] = benchKey(r.Intn(n))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				objs, err := tab.Lookup(keys[i%len(keys)])
				if err != nil || len(objs) != 1 {
					b.Fatal(objs, err)
				}
			}
		})
	}
}

func BenchmarkNativeScan(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchScan(b, benchNativeTable(b, n), n) })
	}
}

func BenchmarkNativeOpen(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := benchNativeTable(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				tab, err := Open(path, Options{ReadOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				tab.Close()
			}
		})
	}
}
