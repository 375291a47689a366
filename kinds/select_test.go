package kinds

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// TestSelect: Select and SelectSeq give exactly the rows of All that the
// predicate accepts, in All's order, for every kind; SelectSeq stops
// when the loop breaks. Seeded: -seed or GODETS_SEED.
func TestSelect(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	for _, kind := range []dets.Kind{dets.Set, dets.Bag, dets.DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(kind)))
			tab := openTable(t, kind, 1)
			b, err := newBase(tab, kind, String, Int)
			must(t, err)
			for range 2000 {
				must(t, b.insert(fmt.Sprint("k", r.IntN(500)), int64(r.IntN(100))))
			}
			keep := func(k string, v int64) bool { return v%3 == 0 && strings.HasSuffix(k, "7") }
			var want []Row[string, int64]
			var err2 error
			for k, v := range b.all(&err2) {
				if keep(k, v) {
					want = append(want, Row[string, int64]{k, v})
				}
			}
			must(t, err2)
			if len(want) == 0 {
				t.Fatal("the predicate accepts no row: the test checks nothing")
			}
			got, err := b.selectRows(keep)
			must(t, err)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Select: %d rows, want %d (or another order)", len(got), len(want))
			}
			var seq []Row[string, int64]
			for k, v := range b.selectSeq(keep, &err2) {
				seq = append(seq, Row[string, int64]{k, v})
				if len(seq) == 3 {
					break
				}
			}
			must(t, err2)
			if !reflect.DeepEqual(seq, want[:min(3, len(want))]) {
				t.Fatalf("SelectSeq with a break: %v, want %v", seq, want[:3])
			}
			if none, err := b.selectRows(func(string, int64) bool { return false }); none != nil || err != nil {
				t.Fatalf("Select of no rows: %v, %v; want nil, nil", none, err)
			}
		})
	}
}

// TestSelectErrors: a row the codecs cannot read ends Select with the
// error All gives and no rows, whatever the predicate; a closed table
// gives dets.ErrClosed; nil arguments panic at the call, before any read.
func TestSelectErrors(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, Int)
	must(t, err)
	must(t, s.Insert("a", 1))
	must(t, tab.Insert(etf.Tuple{etf.Binary("b"), etf.Atom("many")}))
	var allErr error
	for range s.All(&allErr) {
	}
	rows, err := s.Select(func(string, int64) bool { return true })
	if rows != nil || err == nil || err.Error() != allErr.Error() || !errors.Is(err, ErrDecode) {
		t.Fatalf("Select over a bad row: %v, %v; want no rows and All's %v", rows, err, allErr)
	}
	var seqErr error
	for range s.SelectSeq(func(string, int64) bool { return false }, &seqErr) {
	}
	if seqErr == nil || seqErr.Error() != allErr.Error() {
		t.Fatalf("SelectSeq over a bad row: %v, want %v", seqErr, allErr)
	}
	must(t, tab.Close())
	if _, err := s.Select(func(string, int64) bool { return true }); !errors.Is(err, dets.ErrClosed) {
		t.Fatalf("Select of a closed table: %v, want dets.ErrClosed", err)
	}
	for name, call := range map[string]func(){
		"Select(nil)":          func() { s.Select(nil) },
		"SelectSeq(nil, &e)":   func() { s.SelectSeq(nil, &seqErr) },
		"SelectSeq(keep, nil)": func() { s.SelectSeq(func(string, int64) bool { return true }, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			call()
		}()
	}
}
