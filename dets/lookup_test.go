package dets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/godets/godets/etf"
)

// TestLookupChecksTheMatch: a lookup checks only the keys of the other
// objects in its bucket, and the object it returns (or, for Member, finds)
// whole. So a damaged value answers with ErrCorrupt to its own key, and
// not to a key that shares its bucket; Check still finds it. On native a
// read verifies every object record of the bucket (docs/format-native.md
// §6.3), so the key that shares the bucket gets ErrCorrupt too.
func TestLookupChecksTheMatch(t *testing.T) {
	forEachFormat(t, testLookupChecksTheMatch)
}

func testLookupChecksTheMatch(t *testing.T, format Format) {
	for _, kind := range []Kind{Set, Bag} {
		t.Run(kind.String(), func(t *testing.T) {
			path := tmpFile(t, "t.dets")
			tab, err := Open(path, Options{Kind: kind, Format: format})
			if err != nil {
				t.Fatal(err)
			}
			key := func(i int) etf.Binary { return etf.Binary(fmt.Sprintf("key-%04d", i)) }
			val := func(i int) etf.Binary { return etf.Binary(bytes.Repeat([]byte{byte('a' + i%26)}, 40)) }
			// Two keys in one slot: the first key whose slot is taken.
			bySlot := map[uint64]int{}
			a, b := -1, -1
			for i := 0; b < 0; i++ {
				if err := tab.Insert(tup(key(i), val(i))); err != nil {
					t.Fatal(err)
				}
				s := tab.slotFor(tab.hashKey(key(i)))
				if j, ok := bySlot[s]; ok {
					a, b = j, i
				}
				bySlot[s] = i
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}

			// Damage the value of bad, which comes first in the bucket
			// (keys sort in term order), so that a lookup of good passes
			// it: its BINARY_EXT tag becomes an unknown one.
			bad, good := a, b
			ro, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			e, err := ro.entry(ro.slotFor(ro.hashKey(key(bad))))
			ro.Close()
			if err != nil {
				t.Fatal(err)
			}
			data := readFileT(t, path)
			bucket := data[e.ptr : e.ptr+e.size]
			enc, err := etf.Encode(tup(key(bad), val(bad)))
			if err != nil {
				t.Fatal(err)
			}
			at := bytes.Index(bucket, enc)
			if at < 0 {
				t.Fatalf("object %d not in its bucket", bad)
			}
			at += int(e.ptr)
			tag := at + len(enc) - len(val(bad)) - 5
			if data[tag] != 109 {
				t.Fatalf("byte %d is %d, want BINARY_EXT", tag, data[tag])
			}
			data[tag] = 0xee
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}

			open := func() *Table {
				t.Helper()
				tab, err := Open(path, Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tab.Close() })
				return tab
			}
			tab = open()
			if format == Native {
				for _, k := range []etf.Term{key(good), key(bad)} {
					if objs, err := tab.Lookup(k); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("Lookup(%s) = %v, %v; want ErrCorrupt", k, objs, err)
					}
					if ok, err := open().Member(k); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("Member(%s) = %v, %v; want ErrCorrupt", k, ok, err)
					}
				}
				if err := open().Check(); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Check = %v, want ErrCorrupt", err)
				}
				return
			}
			objs, err := tab.Lookup(key(good))
			if err != nil || len(objs) != 1 || !etf.Equal(objs[0], tup(key(good), val(good))) {
				t.Fatalf("Lookup(%s) = %v, %v; want its object", key(good), objs, err)
			}
			if ok, err := tab.Member(key(good)); !ok || err != nil {
				t.Fatalf("Member(%s) = %v, %v", key(good), ok, err)
			}
			if objs, err := tab.Lookup(key(bad)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Lookup(%s) = %v, %v; want ErrCorrupt", key(bad), objs, err)
			}
			if ok, err := open().Member(key(bad)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Member(%s) = %v, %v; want ErrCorrupt", key(bad), ok, err)
			}
			if err := open().Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want ErrCorrupt", err)
			}
		})
	}
}
