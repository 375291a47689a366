package kinds

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// TestViewsShareBytes: the views are the bytes they were made from (no
// copy, the point of them), and read as the copying conversions do.
func TestViewsShareBytes(t *testing.T) {
	b := []byte("key and value")
	s := stringView(b)
	if s != string(b) || unsafe.StringData(s) != &b[0] {
		t.Fatalf("stringView copied or changed the bytes: %q", s)
	}
	if stringView(nil) != "" || stringView(b[:0]) != "" {
		t.Fatal("stringView of no bytes is not empty")
	}
	v := bytesView(s)
	if string(v) != s || &v[0] != &b[0] || len(v) != len(b) {
		t.Fatalf("bytesView copied or changed the string: %q", v)
	}
	if len(bytesView("")) != 0 {
		t.Fatal("bytesView of an empty string is not empty")
	}
}

// TestCastStringOnlyToString: base.strings, the guard of castString, is
// set for two binary string codecs and for nothing else, so the cast is
// only ever the identity.
func TestCastStringOnlyToString(t *testing.T) {
	if got := castString[string]("x"); got != "x" {
		t.Fatalf("castString[string] = %q", got)
	}
	tab := openTable(t, dets.Set, 1)
	guard := func(b bool, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	strs := func(kc, vc Codec[string]) (bool, error) {
		b, err := newBase(tab, dets.Set, kc, vc)
		return b.strings, err
	}
	if !guard(strs(String, String)) {
		t.Fatal("String, String: the one-copy path is off")
	}
	if guard(strs(String, Atom)) || guard(strs(Charlist, String)) {
		t.Fatal("a codec that does not read binaries took the string path")
	}
	b, err := newBase(tab, dets.Set, String, Bytes)
	if guard(b.strings, err) {
		t.Fatal("String, Bytes took the string path")
	}
	type named string
	n, err := newBase(tab, dets.Set, Codec[named](Codec[named]{Encode: func(v named) (etf.Term, error) { return etf.Binary(v), nil }, Decode: func(etf.Term) (named, error) { return "", nil }}), String)
	if guard(n.strings, err) {
		t.Fatal("a named string type took the string path")
	}
	if reflect.TypeFor[named]() == reflect.TypeFor[string]() {
		t.Fatal("named is string")
	}
}

// TestClosureID: closureID tells apart two closures of one literal (two
// Records' Encode, whose code is the same) and two functions, gives
// copies of one value the same identity, and 0 for nil; a func value is
// one pointer, the layout it reads.
func TestClosureID(t *testing.T) {
	if unsafe.Sizeof(func() {}) != unsafe.Sizeof(uintptr(0)) {
		t.Fatal("a func value is not one pointer")
	}
	a, b := counterFrom(1), counterFrom(2)
	if reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
		t.Fatal("the two closures have different code: the test proves nothing")
	}
	if closureID(a) == closureID(b) {
		t.Fatal("two closures of one literal have one identity")
	}
	c := a
	if closureID(c) != closureID(a) || closureID(a) == 0 {
		t.Fatal("a copy of a closure has another identity")
	}
	var none func() int
	if closureID(none) != 0 {
		t.Fatal("nil has an identity")
	}
	if closureID(strings.ToUpper) == closureID(strings.ToLower) {
		t.Fatal("two functions have one identity")
	}
}

// counterFrom makes closures of one literal (not inlined, so both calls
// share its code).
//
//go:noinline
func counterFrom(n int) func() int { return func() int { return n } }
