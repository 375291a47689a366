package dets

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// nonCanonical is {K, V} with both integers as INTEGER_EXT, which
// etf.Encode writes as SMALL_INTEGER_EXT for 0..255: a valid encoding
// that OTP accepts and etf.Encode would not write.
func nonCanonical(k, v byte) []byte {
	return []byte{131, 104, 2, 98, 0, 0, 0, k, 98, 0, 0, 0, v}
}

// TestConvertToNativeStreams: conversion to native through the repair's
// index and nativeBuilder keeps every object and each key's order, also
// for objects the source holds in an encoding etf.Encode would not write
// (encoded anew, so the native key hash finds them) next to canonical
// ones, and with the index spilled to DST.TMP.sort (removed after).
func TestConvertToNativeStreams(t *testing.T) {
	smallIndex := ConvertOptions{tune: withTuning(Options{}, func(tn *tuning) { tn.repairMemEntries = 500 }).tune}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "o.dets"), filepath.Join(dir, "n.dets")
	tab := openT(t, src, Options{Kind: Bag})
	const keys = 1500
	for i := range keys {
		must(t, tab.Insert(tup(etf.Int(1000+i), etf.Int(1)), tup(etf.Int(1000+i), etf.Int(2))))
	}
	for k := range byte(200) {
		must(t, tab.InsertRaw(nonCanonical(k, 1)))
		must(t, tab.Insert(tup(etf.Int(int64(k)), etf.Int(2))))
		must(t, tab.InsertRaw(nonCanonical(k, 3)))
	}
	must(t, tab.Close())
	if !bytes.Contains(readFileT(t, src), nonCanonical(7, 3)) {
		t.Fatal("the source does not hold the encodings as given")
	}
	st, err := Convert(src, dst, Native, smallIndex)
	must(t, err)
	if st.Objects != 2*keys+600 || st.Keys != keys+200 || !st.ExternalSort {
		t.Fatalf("stats %+v, want %d objects, %d keys, an external sort", st, 2*keys+600, keys+200)
	}
	if _, err := os.Stat(sortPath(dst)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s left behind (%v)", sortPath(dst), err)
	}
	out := openT(t, dst, Options{ReadOnly: true})
	mustCheck(t, out)
	for k := range int64(200) {
		objs, err := out.Lookup(etf.Int(k))
		must(t, err)
		if len(objs) != 3 {
			t.Fatalf("Lookup(%d) = %v", k, objs)
		}
		for i, o := range objs {
			if !etf.Equal(o.(etf.Tuple)[1], etf.Int(int64(i+1))) {
				t.Fatalf("Lookup(%d) = %v, want values 1, 2, 3 in order", k, objs)
			}
		}
	}
	for _, i := range []int64{0, 777, keys - 1} {
		objs, err := out.Lookup(etf.Int(1000 + i))
		must(t, err)
		if len(objs) != 2 || !etf.Equal(objs[0].(etf.Tuple)[1], etf.Int(1)) || !etf.Equal(objs[1].(etf.Tuple)[1], etf.Int(2)) {
			t.Fatalf("Lookup(%d) = %v", 1000+i, objs)
		}
	}
}
