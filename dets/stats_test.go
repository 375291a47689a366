package dets

import (
	"errors"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

func init() {
	// Kept here rather than in zero_test.go, next to the method.
	tableCalls["Stats"] = func(t *Table) []error {
		_, err := t.Stats()
		return []error{err}
	}
}

// statsModel is what Stats must find, computed from the objects alone.
type statsModel struct {
	objects, keys, keyBytes, valueBytes, largest int64
}

func modelOf(t *testing.T, objs map[string][]etf.Term, keyPos int) statsModel {
	t.Helper()
	var m statsModel
	for _, list := range objs {
		m.keys++
		for _, o := range list {
			n, err := etf.EncodedSize(o)
			must(t, err)
			k, err := etf.EncodedSize(o.(etf.Tuple)[keyPos-1])
			must(t, err)
			m.objects++
			m.keyBytes += int64(k - 1)
			m.valueBytes += int64(n) - int64(k-1) // the version byte counts as value
			m.largest = max(m.largest, int64(n))
		}
	}
	return m
}

// TestStats: Stats' counts, byte shares and histograms agree with a model
// of the objects inserted, for a set and a bag, after deletions too.
func TestStats(t *testing.T) { forEachFormat(t, testStats) }

func testStats(t *testing.T, format Format) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	for _, kind := range []Kind{Set, Bag} {
		t.Run(kind.String(), func(t *testing.T) {
			tab := openT(t, tmpFile(t, "s.dets"), Options{Format: format, Kind: kind, KeyPos: 2})
			model := map[string][]etf.Term{}
			for i := range 3000 {
				k := etf.Int(rng.Intn(1500))
				v := make([]byte, rng.Intn(300))
				rng.Read(v)
				o := tup(etf.Atom("r"), k, etf.Binary(v), etf.Int(i))
				must(t, tab.Insert(o))
				ks := etf.Format(k)
				if kind == Set {
					model[ks] = []etf.Term{o}
				} else {
					model[ks] = append(model[ks], o)
				}
			}
			for i := range 300 {
				k := etf.Int(i * 5)
				must(t, tab.Delete(k))
				delete(model, etf.Format(k))
			}
			st, err := tab.Stats()
			must(t, err)
			want := modelOf(t, model, 2)
			in, err := tab.Info()
			must(t, err)
			if st.Objects != want.objects || st.Keys != want.keys || int(st.Objects) != in.Size || int(st.Keys) != in.NoKeys {
				t.Errorf("objects %d keys %d; model %d %d; info %d %d", st.Objects, st.Keys, want.objects, want.keys, in.Size, in.NoKeys)
			}
			if st.KeyBytes != want.keyBytes || st.ValueBytes != want.valueBytes || st.LargestObject != want.largest {
				t.Errorf("key bytes %d value bytes %d largest %d; model %d %d %d",
					st.KeyBytes, st.ValueBytes, st.LargestObject, want.keyBytes, want.valueBytes, want.largest)
			}
			if st.Slots != in.NoSlots {
				t.Errorf("slots %+v, info %+v", st.Slots, in.NoSlots)
			}
			var slots, inBuckets, buckets, classBuckets int64
			exact := true
			for _, b := range st.BucketObjects {
				slots += b.Count
				if b.Min == 0 {
					continue
				}
				buckets += b.Count
				inBuckets += b.Count * b.Min // exact for bins of width 1
				exact = exact && b.Min == b.Max
			}
			if !exact {
				inBuckets = st.Objects
			}
			for _, c := range st.BucketClasses {
				classBuckets += c.Count
			}
			if slots != int64(in.NoSlots.Next) || inBuckets != st.Objects || buckets != st.Buckets || classBuckets != st.Buckets {
				t.Errorf("histogram: %d slots, %d objects in %d buckets, %d by class; stats %+v", slots, inBuckets, buckets, classBuckets, st)
			}
			if st.FreeBytes <= 0 || st.Fragmentation <= 0 || st.Fragmentation >= 1 {
				t.Errorf("after deletions: free %d bytes, fragmentation %v", st.FreeBytes, st.Fragmentation)
			}
			if lf := float64(st.Keys) / float64(in.NoSlots.Next); st.LoadFactor != lf || st.GrowthDue {
				t.Errorf("load factor %v (want %v), growth due %v", st.LoadFactor, lf, st.GrowthDue)
			}
		})
	}
}

// TestStatsFreeSpaceMatchesBuddy: the free bytes are the free blocks below
// the end of the data, which with the used blocks tile the data area.
func TestStatsFreeSpaceMatchesBuddy(t *testing.T) {
	tab := openT(t, tmpFile(t, "f.dets"), Options{})
	for i := range 500 {
		must(t, tab.Insert(tup(etf.Int(i), make(etf.Binary, i%200))))
	}
	for i := 0; i < 500; i += 3 {
		must(t, tab.Delete(etf.Int(i)))
	}
	st, err := tab.Stats()
	must(t, err)
	used := st.BlockBytes + int64(len(tab.segs))*segmentSize + partSize*int64((len(tab.segs)+segsPerPart-1)/segsPerPart)
	if got := baseAddr + used + st.FreeBytes; got != tab.fileEnd {
		t.Errorf("base + used %d + free %d = %d, data ends at %d", used, st.FreeBytes, got, tab.fileEnd)
	}
}

// TestStatsCorruptBucket: a damaged bucket is an ErrCorrupt, not a panic
// or wrong numbers.
func TestStatsCorruptBucket(t *testing.T) {
	path := tmpFile(t, "c.dets")
	tab := openT(t, path, Options{})
	must(t, tab.Insert(tup(etf.Int(1), bin("value"))))
	e, err := tab.entry(slotOf(keyHash(etf.Int(1)), tab.h.m, tab.h.n))
	must(t, err)
	must(t, tab.Close())
	b := readFileT(t, path)
	be.PutUint32(b[e.ptr+8:], 3) // the object's size field
	must(t, os.WriteFile(path, b, 0o644))
	tab, err = Open(path, Options{ReadOnly: true})
	must(t, err)
	defer tab.Close()
	_, err = tab.Stats()
	var ce *CorruptionError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Offset != int64(e.ptr) {
		t.Fatalf("Stats of a damaged bucket: %v", err)
	}
}

// BenchmarkStats1M measures Stats on a table of 1M objects; `dets stats`
// must answer in under a second there. The table is built once.
func BenchmarkStats1M(b *testing.B) {
	const n = 1_000_000
	path := tmpFile(b, "stats1m.dets")
	tab, err := Open(path, Options{})
	must(b, err)
	objs := make([]etf.Term, n)
	for i := range objs {
		objs[i] = benchObj(i)
	}
	must(b, tab.InitTable(seqOf(objs)))
	must(b, tab.Close())
	objs = nil
	b.Run("open+stats", func(b *testing.B) {
		for range b.N {
			start := time.Now()
			tab, err := Open(path, Options{ReadOnly: true})
			must(b, err)
			st, err := tab.Stats()
			must(b, err)
			must(b, tab.Close())
			if st.Objects != n {
				b.Fatalf("%d objects", st.Objects)
			}
			if d := time.Since(start); d > time.Second {
				b.Errorf("stats of 1M objects took %v, want under a second", d)
			}
		}
	})
}
