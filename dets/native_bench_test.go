package dets

import (
	"fmt"
	"testing"
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

func BenchmarkNativeInsert(b *testing.B) { benchInserts(b, Native) }

func BenchmarkNativeLookup(b *testing.B) { benchLookups(b, benchNativeTable) }

func BenchmarkNativeScan(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchScan(b, benchNativeTable(b, n), n) })
	}
}

func BenchmarkNativeOpen(b *testing.B) { benchOpens(b, benchNativeTable) }
