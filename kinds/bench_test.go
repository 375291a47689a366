package kinds

import (
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
