package kinds

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// The benchmarks compare the raw engine with the typed handle on the same
// table and keys; the typed layer should cost at most about 10% more.
//
//	go test -run '^$' -bench 'Lookup|Insert' -benchmem ./kinds

const benchKeys = 1000

func benchTable(b *testing.B) (*dets.Table, []string, []etf.Term) {
	b.Helper()
	tab, err := dets.Open(filepath.Join(b.TempDir(), "bench.dets"), dets.Options{Kind: dets.Set, KeyPos: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tab.Close() })
	keys := make([]string, benchKeys)
	raw := make([]etf.Term, benchKeys)
	for i := range keys {
		keys[i] = "package-" + strconv.Itoa(i)
		raw[i] = etf.Binary(keys[i])
		if err := tab.Insert(etf.Tuple{raw[i], etf.Binary("metadata-" + strconv.Itoa(i))}); err != nil {
			b.Fatal(err)
		}
	}
	return tab, keys, raw
}

func BenchmarkRawLookup(b *testing.B) {
	tab, _, raw := benchTable(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		objs, err := tab.Lookup(raw[i%benchKeys])
		if err != nil || len(objs) != 1 {
			b.Fatal(objs, err)
		}
	}
}

func BenchmarkSetLookup(b *testing.B) {
	tab, keys, _ := benchTable(b)
	s, err := NewSet(tab, String, String)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Lookup(keys[i%benchKeys]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawInsert(b *testing.B) {
	tab, _, raw := benchTable(b)
	val := etf.Binary("new metadata")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := tab.Insert(etf.Tuple{raw[i%benchKeys], val}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetInsert(b *testing.B) {
	tab, keys, _ := benchTable(b)
	s, err := NewSet(tab, String, String)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Insert(keys[i%benchKeys], "new metadata"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawMember(b *testing.B) {
	tab, _, raw := benchTable(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if ok, err := tab.Member(raw[i%benchKeys]); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkSetMember(b *testing.B) {
	tab, keys, _ := benchTable(b)
	s, err := NewSet(tab, String, String)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if ok, err := s.Member(keys[i%benchKeys]); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkCodecs measures the codec calls alone, the whole of what the
// typed layer adds per call.
func BenchmarkCodecs(b *testing.B) {
	b.Run("String", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			t, _ := String.Encode("package-123")
			if _, err := String.Decode(t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Int", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			t, _ := Int.Encode(int64(i))
			if _, err := Int.Decode(t); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The typed counter reads the object first to check the result's range
// (see Set.UpdateCounter), so it costs about one lookup more than the raw
// update.
func BenchmarkRawUpdateCounter(b *testing.B) {
	tab, _, raw := benchTable(b)
	for _, k := range raw {
		if err := tab.Insert(etf.Tuple{k, etf.Int(0)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := tab.UpdateCounter(raw[i%benchKeys], 2, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetUpdateCounter(b *testing.B) {
	tab, keys, _ := benchTable(b)
	s, err := NewSet(tab, String, Int)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		if err := s.Insert(k, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.UpdateCounter(keys[i%benchKeys], 1); err != nil {
			b.Fatal(err)
		}
	}
}

// The typed benchmarks run the bench/ workload (16-byte keys, 100-byte
// values, a set of 10k or 100k objects built by single inserts) through a
// Set[string, string], by the direct path and, for comparison, by the
// term path that handles took before it (termOnly codecs), at 10k and
// 100k objects (bench/'s peer sizes):
//
//	go test -run '^$' -bench 'Typed' -benchmem -count 6 ./kinds
var typedSizes = []int{10_000, 100_000}

func typedKey(i int) string {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:], uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return string(k[:])
}

func typedValue(i int) string {
	var v [100]byte
	binary.BigEndian.PutUint64(v[:], uint64(i))
	return string(v[:])
}

// typedSets returns a table of n objects with a direct and a term-only
// handle over it.
func typedSets(b *testing.B, n int) (direct, term *Set[string, string]) {
	b.Helper()
	tab, err := dets.Open(filepath.Join(b.TempDir(), "typed.dets"), dets.Options{Kind: dets.Set, KeyPos: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tab.Close() })
	direct, err = NewSet(tab, String, String)
	if err != nil {
		b.Fatal(err)
	}
	term, err = NewSet(tab, termOnly(String), termOnly(String))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := direct.Insert(typedKey(i), typedValue(i)); err != nil {
			b.Fatal(err)
		}
	}
	return direct, term
}

func typedPaths(b *testing.B, run func(b *testing.B, s *Set[string, string], n int)) {
	for _, n := range typedSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			direct, term := typedSets(b, n)
			b.Run("path=direct", func(b *testing.B) { run(b, direct, n) })
			b.Run("path=term", func(b *testing.B) { run(b, term, n) })
		})
	}
}

func BenchmarkTypedLookup(b *testing.B) {
	typedPaths(b, func(b *testing.B, s *Set[string, string], n int) {
		r := rand.New(rand.NewPCG(1, 2))
		keys := make([]string, 4096)
		for i := range keys {
			keys[i] = typedKey(r.IntN(n))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.Lookup(keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTypedAll: one op is a full traversal; ns/object is the figure
// to compare with the peers' iterators.
func BenchmarkTypedAll(b *testing.B) {
	typedPaths(b, func(b *testing.B, s *Set[string, string], want int) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			var err error
			n := 0
			for range s.All(&err) {
				n++
			}
			if err != nil || n != want {
				b.Fatal(n, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*want), "ns/object")
	})
}

// BenchmarkTypedRawAll is the engine's borrowed traversal under the typed
// one, for the bound it sets.
func BenchmarkTypedRawAll(b *testing.B) {
	for _, want := range typedSizes {
		b.Run(fmt.Sprintf("n=%d", want), func(b *testing.B) {
			s, _ := typedSets(b, want)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				n := 0
				for _, err := range s.Table().RawAll() {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != want {
					b.Fatal(n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*want), "ns/object")
		})
	}
}

// BenchmarkTypedInsert replaces values of existing keys (the table does
// not grow, so the figure is the insert's own).
func BenchmarkTypedInsert(b *testing.B) {
	typedPaths(b, func(b *testing.B, s *Set[string, string], _ int) {
		keys, vals := make([]string, 4096), make([]string, 4096)
		for i := range keys {
			keys[i], vals[i] = typedKey(i*7), typedValue(i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.Insert(keys[i%len(keys)], vals[i%len(vals)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
