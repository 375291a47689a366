package dets

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkRawScan is BenchmarkScanInserted through RawAll: the objects'
// bytes, no terms.
//
//	go test -run '^$' -bench 'Scan|RawScan|RawLookup' -benchmem ./dets
func BenchmarkRawScan(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tab, err := Open(benchInsertedTable(b, n), Options{ReadOnly: true})
			must(b, err)
			defer tab.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				got := 0
				for _, err := range tab.RawAll() {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				if got != n {
					b.Fatalf("%d objects, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}

// BenchmarkRawLookup is BenchmarkLookup through LookupRaw.
func BenchmarkRawLookup(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tab, err := Open(benchTable(b, n), Options{ReadOnly: true})
			must(b, err)
			defer tab.Close()
			r := rand.New(rand.NewSource(1))
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = encodeT(b, benchKey(r.Intn(n)))
			}
			found := 0
			count := func([]byte) error { found++; return nil }
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := tab.LookupRaw(keys[i%len(keys)], count); err != nil {
					b.Fatal(err)
				}
			}
			if found != b.N {
				b.Fatalf("found %d objects in %d lookups", found, b.N)
			}
		})
	}
}
