package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

func lookupT(t *testing.T, tab *Table, key etf.Term) []etf.Term {
	t.Helper()
	objs, err := tab.Lookup(key)
	if err != nil {
		t.Fatalf("Lookup(%v): %v", key, err)
	}
	return objs
}

func sameTerms(a, b []etf.Term) bool {
	return slices.EqualFunc(a, b, func(x, y etf.Term) bool { return etf.Equal(x, y) })
}

func wantLookup(t *testing.T, tab *Table, key etf.Term, want ...etf.Term) {
	t.Helper()
	if got := lookupT(t, tab, key); !sameTerms(got, want) {
		t.Fatalf("Lookup(%v) = %v, want %v", key, got, want)
	}
}

func TestSetSemantics(t *testing.T) { forEachFormat(t, testSetSemantics) }

func testSetSemantics(t *testing.T, format Format) {
	forEachFormat(t, func(t *testing.T, format Format) {
		tab := openT(t, tmpFile(t, "s.dets"), Options{Format: format, Kind: Set})
		must(t, tab.Insert(tup(etf.Int(1), bin("a")), tup(etf.Float(1), bin("f"))))
		wantLookup(t, tab, etf.Int(1), tup(etf.Int(1), bin("a")))
		wantLookup(t, tab, etf.Float(1), tup(etf.Float(1), bin("f")))
		must(t, tab.Insert(tup(etf.Int(1), bin("b")), tup(etf.Int(1), bin("c"))))
		wantLookup(t, tab, etf.Int(1), tup(etf.Int(1), bin("c")))
		info, _ := tab.Info()
		if info.Size != 2 || info.NoKeys != 2 {
			t.Fatalf("info %+v", info)
		}
		// delete_object only removes an identical object.
		must(t, tab.DeleteObject(tup(etf.Int(1), bin("zzz"))))
		wantLookup(t, tab, etf.Int(1), tup(etf.Int(1), bin("c")))
		must(t, tab.DeleteObject(tup(etf.Int(1), bin("c"))))
		wantLookup(t, tab, etf.Int(1))
		ok, err := tab.InsertNew(tup(etf.Float(1), bin("x")))
		if err != nil || ok {
			t.Fatalf("InsertNew existing = %v, %v", ok, err)
		}
		ok, err = tab.InsertNew(tup(etf.Int(1), bin("x")), tup(etf.Int(1), bin("y")))
		if err != nil || !ok {
			t.Fatalf("InsertNew new = %v, %v", ok, err)
		}
		wantLookup(t, tab, etf.Int(1), tup(etf.Int(1), bin("y")))
		must(t, tab.Delete(etf.Float(1)))
		if m, _ := tab.Member(etf.Float(1)); m {
			t.Fatal("member after delete")
		}
		if m, _ := tab.Member(etf.Int(1)); !m {
			t.Fatal("not member")
		}
		mustCheck(t, tab)
	})
}

func TestBagSemantics(t *testing.T) { forEachFormat(t, testBagSemantics) }

func testBagSemantics(t *testing.T, format Format) {
	forEachFormat(t, func(t *testing.T, format Format) {
		tab := openT(t, tmpFile(t, "b.dets"), Options{Format: format, Kind: Bag})
		k := etf.Atom("k")
		must(t, tab.Insert(tup(k, etf.Int(1)), tup(k, etf.Int(2))))
		must(t, tab.Insert(tup(k, etf.Int(1))))
		wantLookup(t, tab, k, tup(k, etf.Int(2)), tup(k, etf.Int(1)))
		// Within one call the last identical object decides the position.
		must(t, tab.Insert(tup(k, etf.Int(2)), tup(k, etf.Int(3)), tup(k, etf.Int(1))))
		wantLookup(t, tab, k, tup(k, etf.Int(2)), tup(k, etf.Int(3)), tup(k, etf.Int(1)))
		if info, _ := tab.Info(); info.Size != 3 || info.NoKeys != 1 {
			t.Fatalf("info %+v", info)
		}
		ok, err := tab.InsertNew(tup(k, etf.Int(9)))
		if err != nil || ok {
			t.Fatalf("InsertNew on bag with existing key = %v, %v", ok, err)
		}
		must(t, tab.DeleteObject(tup(k, etf.Int(3))))
		wantLookup(t, tab, k, tup(k, etf.Int(2)), tup(k, etf.Int(1)))
		if _, err := tab.UpdateCounter(k, 2, 1); !errors.Is(err, ErrBadArgument) {
			t.Fatalf("UpdateCounter on bag: %v", err)
		}
	})
}

func TestDuplicateBagSemantics(t *testing.T) { forEachFormat(t, testDuplicateBagSemantics) }

func testDuplicateBagSemantics(t *testing.T, format Format) {
	forEachFormat(t, func(t *testing.T, format Format) {
		tab := openT(t, tmpFile(t, "d.dets"), Options{Format: format, Kind: DuplicateBag})
		k := etf.Atom("k")
		must(t, tab.Insert(tup(k, etf.Int(1)), tup(k, etf.Int(2)), tup(k, etf.Int(1))))
		wantLookup(t, tab, k, tup(k, etf.Int(1)), tup(k, etf.Int(2)), tup(k, etf.Int(1)))
		must(t, tab.DeleteObject(tup(k, etf.Int(1))))
		wantLookup(t, tab, k, tup(k, etf.Int(2)))
		if info, _ := tab.Info(); info.Size != 1 {
			t.Fatalf("info %+v", info)
		}
		ok, _ := tab.InsertNew(tup(k, etf.Int(3)), tup(k, etf.Int(3)))
		if ok {
			t.Fatal("InsertNew with existing key succeeded")
		}
		ok, _ = tab.InsertNew(tup(etf.Atom("j"), etf.Int(3)), tup(etf.Atom("j"), etf.Int(3)))
		if !ok {
			t.Fatal("InsertNew new key failed")
		}
		wantLookup(t, tab, etf.Atom("j"), tup(etf.Atom("j"), etf.Int(3)), tup(etf.Atom("j"), etf.Int(3)))
	})
}

func TestUpdateCounter(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		tab := openT(t, tmpFile(t, "c.dets"), Options{Format: format, KeyPos: 2})
		must(t, tab.Insert(tup(etf.Int(5), etf.Atom("c"), etf.Int(math.MaxInt64-1))))
		v, err := tab.UpdateCounter(etf.Atom("c"), 1, 10)
		if err != nil || !etf.Equal(v, etf.Int(15)) {
			t.Fatalf("got %v %v", v, err)
		}
		v, err = tab.UpdateCounter(etf.Atom("c"), 0, 5)
		want := etf.NewBigInt(new(big.Int).Add(big.NewInt(math.MaxInt64-1), big.NewInt(5)))
		if err != nil || !etf.Equal(v, want) {
			t.Fatalf("got %v %v, want %v", v, err, want)
		}
		v, err = tab.UpdateCounter(etf.Atom("c"), 3, -10)
		if err != nil || !etf.Equal(v, etf.Int(math.MaxInt64-6)) {
			t.Fatalf("back to small: %v %v", v, err)
		}
		wantLookup(t, tab, etf.Atom("c"), tup(etf.Int(15), etf.Atom("c"), etf.Int(math.MaxInt64-6)))
		for _, pos := range []int{2, 4, -1} {
			if _, err := tab.UpdateCounter(etf.Atom("c"), pos, 1); !errors.Is(err, ErrBadArgument) {
				t.Fatalf("pos %d: %v", pos, err)
			}
		}
		if _, err := tab.UpdateCounter(etf.Atom("missing"), 0, 1); !errors.Is(err, ErrBadArgument) {
			t.Fatalf("missing key: %v", err)
		}
	})
}

// TestUpdateCounterIfRefused: a result that accept refuses leaves the
// object and the file's bytes as they were, and comes back as accept's
// error; an accepted one is written.
func TestUpdateCounterIfRefused(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		path := tmpFile(t, "c.dets")
		tab := openT(t, path, Options{Format: format})
		must(t, tab.Insert(tup(etf.Atom("c"), etf.Int(math.MaxInt64))))
		must(t, tab.Sync())
		before, err := os.ReadFile(path)
		must(t, err)
		errTooBig := errors.New("too big")
		var seen etf.Term
		_, err = tab.UpdateCounterIf(etf.Atom("c"), 0, 1, func(r etf.Term) error {
			seen = r
			if _, small := r.(etf.Int); !small {
				return errTooBig
			}
			return nil
		})
		if err != errTooBig {
			t.Fatalf("got %v, want accept's own error", err)
		}
		if want := etf.NewBigInt(new(big.Int).Add(big.NewInt(math.MaxInt64), big.NewInt(1))); !etf.Equal(seen, want) {
			t.Fatalf("accept saw %v, want %v", seen, want)
		}
		wantLookup(t, tab, etf.Atom("c"), tup(etf.Atom("c"), etf.Int(math.MaxInt64)))
		must(t, tab.Sync())
		after, err := os.ReadFile(path)
		must(t, err)
		if !bytes.Equal(before, after) {
			t.Fatal("a refused update changed the file")
		}
		v, err := tab.UpdateCounterIf(etf.Atom("c"), 0, -1, func(etf.Term) error { return nil })
		if err != nil || !etf.Equal(v, etf.Int(math.MaxInt64-1)) {
			t.Fatalf("accepted update: %v %v", v, err)
		}
		wantLookup(t, tab, etf.Atom("c"), tup(etf.Atom("c"), etf.Int(math.MaxInt64-1)))
	})
}

func TestBadObjects(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		tab := openT(t, tmpFile(t, "x.dets"), Options{Format: format, KeyPos: 2})
		for _, o := range []etf.Term{etf.Atom("a"), tup(etf.Int(1)), etf.List{etf.Int(1), etf.Int(2)}} {
			if err := tab.Insert(tup(etf.Int(1), etf.Int(2)), o); !errors.Is(err, ErrBadObject) {
				t.Fatalf("Insert(%v): %v", o, err)
			}
		}
		if info, _ := tab.Info(); info.Size != 0 {
			t.Fatal("a refused batch inserted something")
		}
	})
}

// TestFirstNextAndAll is otp9-only until native traversal (step 5 of
// docs/format-native.md §16).
func TestFirstNextAndAll(t *testing.T) { forEachFormat(t, testFirstNextAndAll) }

func testFirstNextAndAll(t *testing.T, format Format) {
	tab := openT(t, tmpFile(t, "fn.dets"), Options{Format: format, Kind: Bag})
	var want []etf.Term
	for i := range 1000 {
		o := tup(etf.Int(i%300), etf.Int(i))
		want = append(want, o)
	}
	must(t, tab.Insert(want...))
	var got []etf.Term
	for o, err := range tab.All() {
		must(t, err)
		got = append(got, o)
	}
	if len(got) != 1000 {
		t.Fatalf("All gave %d objects", len(got))
	}
	var keys []etf.Term
	k, ok, err := tab.First()
	for ok && err == nil {
		keys = append(keys, k)
		k, ok, err = tab.Next(k)
	}
	must(t, err)
	var keys2 []etf.Term
	for k, err := range tab.Keys() {
		must(t, err)
		keys2 = append(keys2, k)
	}
	if len(keys) != 300 || !sameTerms(keys, keys2) {
		t.Fatalf("First/Next gave %d keys, Keys %d", len(keys), len(keys2))
	}
}

func TestDeleteAllObjectsAndReopen(t *testing.T) { forEachFormat(t, testDeleteAllObjectsAndReopen) }

func testDeleteAllObjectsAndReopen(t *testing.T, format Format) {
	path := tmpFile(t, "da.dets")
	tab, err := Open(path, Options{Kind: DuplicateBag, MinSlots: 1000, Format: format})
	must(t, err)
	for i := range 3000 {
		must(t, tab.Insert(tup(etf.Int(i), bin(fmt.Sprint(i)))))
	}
	info, _ := tab.Info()
	if info.NoSlots.Next*int(tab.lay.keysPerSlot) < 3000 || info.NoSlots.Min != 1024 {
		t.Fatalf("no growth: %+v", info.NoSlots)
	}
	mustCheck(t, tab)
	must(t, tab.DeleteAllObjects())
	mustCheck(t, tab)
	info, _ = tab.Info()
	if info.Size != 0 || info.NoSlots.Next != 1024 {
		t.Fatalf("after delete_all: %+v", info)
	}
	must(t, tab.Insert(tup(etf.Int(1), etf.Int(2))))
	must(t, tab.Close())
	must(t, tab.Close()) // idempotent
	if err := tab.Insert(tup(etf.Int(1))); !errors.Is(err, ErrClosed) {
		t.Fatalf("insert after close: %v", err)
	}
	tab = openT(t, path, Options{})
	wantLookup(t, tab, etf.Int(1), tup(etf.Int(1), etf.Int(2)))
	if info, _ := tab.Info(); info.Kind != DuplicateBag {
		t.Fatal(info.Kind)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
