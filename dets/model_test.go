package dets

import (
	"fmt"
	"math/big"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
	mdl "github.com/godets/godets/internal/model"
)

// newModel returns an empty reference model (internal/model) of a table of
// kind with the key at position 1.
func newModel(kind Kind) *mdl.Model { return mdl.New(mdl.Kind(kind), 1) }

func sortTerms(l []etf.Term) []etf.Term {
	l = slices.Clone(l)
	slices.SortStableFunc(l, etf.CompareExact)
	return l
}

// diffTerms compares two sorted object lists as multisets.
func diffTerms(got, want []etf.Term) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d objects, want %d", len(got), len(want))
	}
	for i := range got {
		if !etf.Equal(got[i], want[i]) {
			return fmt.Sprintf("object %d is %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

// tableObjects reads every object of tab, sorted.
func tableObjects(t testing.TB, tab *Table) []etf.Term {
	t.Helper()
	return sortTerms(scanAll(t, tab))
}

func checkAgainstModel(t testing.TB, tab *Table, m *mdl.Model) {
	t.Helper()
	if d := diffTerms(tableObjects(t, tab), m.Terms()); d != "" {
		t.Fatalf("table content differs from model: %s", d)
	}
	info, err := tab.Info()
	if err != nil {
		t.Fatal(err)
	}
	if o, k := m.Len(), m.NumKeys(); info.Size != o || info.NoKeys != k {
		t.Fatalf("info size %d keys %d, model %d %d", info.Size, info.NoKeys, o, k)
	}
}

// randKey returns a key of a random type; small ranges make collisions
// (re-inserts, 1 vs 1.0) likely.
func randKey(r *rand.Rand, spread int) etf.Term {
	n := r.Intn(spread)
	switch r.Intn(9) {
	case 0:
		return etf.Binary(fmt.Sprintf("key-%d", n))
	case 1:
		return etf.Int(n)
	case 2:
		return etf.Float(float64(n))
	case 3:
		v := new(big.Int).Lsh(big.NewInt(int64(n)+1), 70)
		return etf.NewBigInt(v.Neg(v))
	case 4:
		return etf.Atom(fmt.Sprintf("atom_%d", n%500))
	case 5:
		return etf.Tuple{etf.Atom("t"), etf.Int(n), etf.Binary("x")}
	case 6:
		return etf.Str(fmt.Sprintf("list%d", n))
	case 7:
		return etf.List{etf.Int(n), etf.Float(0.5), etf.Atom("z")}
	default:
		return etf.Int(int64(n) * 1_000_000_007)
	}
}

func randValue(r *rand.Rand) etf.Term {
	switch r.Intn(40) {
	case 0:
		return etf.Binary(strings.Repeat(string(rune('a'+r.Intn(26))), 65*1024+r.Intn(10000)))
	case 1, 2:
		return etf.Binary(make([]byte, 1000+r.Intn(4000)))
	}
	return etf.Tuple{etf.Int(r.Intn(5)), etf.Binary(fmt.Sprintf("v%d", r.Intn(1000)))}
}

func randObject(r *rand.Rand, spread int) etf.Term {
	return etf.Tuple{randKey(r, spread), randValue(r)}
}
