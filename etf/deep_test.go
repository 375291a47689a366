package etf

import (
	"bytes"
	"errors"
	"testing"
)

// Terms nested deeper than MaxDepth: OTP writes and reads them, Decode
// refuses them with ErrTooDeep, and Validate walks them to their end so
// that a store can tell such a term from damage (TestOTPLimits has erl
// read the deep cases of limitCases).

// deepList is [[[...[Leaf]...]]] n levels deep, as term_to_binary writes
// it: each level a LIST_EXT of one element and the tail [].
func deepList(n int, leaf []byte) []byte {
	b := []byte{tagVersion}
	for range n {
		b = append(b, tagList, 0, 0, 0, 1)
	}
	b = append(b, leaf...)
	return append(b, bytes.Repeat([]byte{tagNil}, n)...)
}

// deepTuple is {{{...{Leaf}...}}}: each tuple's only element is its last,
// so the walk keeps nothing open.
func deepTuple(n int, leaf []byte) []byte {
	b := []byte{tagVersion}
	for range n {
		b = append(b, tagSmallTuple, 1)
	}
	return append(b, leaf...)
}

// deepPairs is {{{...{Leaf, a}..., a}, a}: every level still has an
// element to come when the walk enters the next.
func deepPairs(n int, leaf []byte) []byte {
	b := []byte{tagVersion}
	for range n {
		b = append(b, tagSmallTuple, 2)
	}
	b = append(b, leaf...)
	for range n {
		b = append(b, atomExt("a")...)
	}
	return b
}

// splitList is a list of n elements written as n LIST_EXTs of one
// element, each the tail of the one before: long, but flat.
func splitList(n int) []byte {
	b := []byte{tagVersion}
	for range n {
		b = append(b, tagList, 0, 0, 0, 1, tagSmallInteger, 7)
	}
	return append(b, tagNil)
}

func TestDeepTerms(t *testing.T) {
	x := atomExt("x")
	deep := MaxDepth + 1
	cases := []struct {
		name string
		enc  []byte
		want string // "ok", "deep" (ErrTooDeep) or "damage" (ErrDecode only)
	}{
		{"list at MaxDepth", deepList(MaxDepth, x), "ok"},
		{"list past MaxDepth", deepList(deep, x), "deep"},
		{"list 200000 deep", deepList(200000, x), "deep"},
		{"tuple at MaxDepth", deepTuple(MaxDepth, x), "ok"},
		{"tuple 200000 deep", deepTuple(200000, x), "deep"},
		{"pairs 50000 deep", deepPairs(50000, x), "deep"},
		{"split list of 200000", splitList(200000), "ok"},
		{"deep list, a leaf with a bad tag", deepList(deep, []byte{99}), "damage"},
		{"deep list, truncated", deepList(deep, x)[:len(deepList(deep, x))-1], "damage"},
		{"deep list, trailing byte", append(deepList(deep, x), tagNil), "damage"},
		{"deep pairs, a bad tag on the way out", append(deepPairs(deep, x)[:len(deepPairs(deep, x))-len(atomExt("a"))], 99), "damage"},
		{"deep list, a map at the bottom", deepList(deep, []byte{tagMap, 0, 0, 0, 0}), "deep"},
		{"deep list, compressed", compressedEnc(deepList(deep, x)[1:], uint32(len(deepList(deep, x))-1)), "deep"},
		{"deep list, compressed, bad leaf", compressedEnc(deepList(deep, []byte{99})[1:], uint32(len(deepList(deep, x))-1-len(x)+1)), "damage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verr := Validate(c.enc)
			_, derr := Decode(c.enc)
			switch c.want {
			case "ok":
				if verr != nil || derr != nil {
					t.Fatalf("Validate %v, Decode %v; want both nil", verr, derr)
				}
				return
			case "deep":
				if !errors.Is(verr, ErrTooDeep) || !errors.Is(verr, ErrDecode) {
					t.Fatalf("Validate %v; want ErrTooDeep and ErrDecode", verr)
				}
			case "damage":
				if verr == nil || errors.Is(verr, ErrTooDeep) || !errors.Is(verr, ErrDecode) {
					t.Fatalf("Validate %v; want ErrDecode without ErrTooDeep", verr)
				}
			}
			var de *DecodeError
			if !errors.As(derr, &de) || !de.Deep || !errors.Is(derr, ErrTooDeep) {
				t.Fatalf("Decode %v; want a *DecodeError with Deep", derr)
			}
		})
	}
}

// TestDeepTermOffsets: for a sound deep term, Validate and Decode name the
// same byte, the first term past MaxDepth.
func TestDeepTermOffsets(t *testing.T) {
	enc := deepList(MaxDepth+5, atomExt("x"))
	verr, derr := Validate(enc), func() error { _, err := Decode(enc); return err }()
	var v, d *DecodeError
	if !errors.As(verr, &v) || !errors.As(derr, &d) {
		t.Fatalf("Validate %v, Decode %v", verr, derr)
	}
	if want := 1 + 5*(MaxDepth+1); v.Offset != want || d.Offset != want || verr.Error() != derr.Error() {
		t.Fatalf("Validate %v (byte %d), Decode %v (byte %d); want byte %d, one message", verr, v.Offset, derr, d.Offset, want)
	}
}

// TestDeepWalkBound: past maxOpen open tuples and lists Validate stops
// with ErrTooDeep rather than hold more, and still says damage for a bad
// term under fewer.
func TestDeepWalkBound(t *testing.T) {
	over := deepList(maxOpen+1, []byte{99}) // damage it cannot reach
	if err := Validate(over); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Validate of %d open lists: %v; want ErrTooDeep", maxOpen+1, err)
	}
	under := deepList(maxOpen-1, []byte{99})
	if err := Validate(under); err == nil || errors.Is(err, ErrTooDeep) {
		t.Fatalf("Validate of %d open lists with a bad leaf: %v; want damage", maxOpen-1, err)
	}
}

// TestDeepKeySpan: the key of an object whose other element is deep can
// still be sliced out (a store keeps such an object OTP wrote).
func TestDeepKeySpan(t *testing.T) {
	val := deepList(MaxDepth+10, atomExt("x"))[1:]
	obj := append([]byte{tagVersion, tagSmallTuple, 2}, val...)
	obj = append(obj, atomExt("k")...)
	s, e, ok := raw.TupleElement(obj, 2)
	if !ok || !bytes.Equal(obj[s:e], atomExt("k")) {
		t.Fatalf("TupleElement(obj, 2) = %d, %d, %v", s, e, ok)
	}
	if _, ok := raw.BodyEnd(obj, 3); ok {
		t.Fatalf("BodyEnd accepted a body Decode refuses")
	}
}

// TestDeepOpaqueDoesNotEncode: Encode refuses what Decode would refuse, a
// fun whose free variable nests past MaxDepth, though its bytes are sound.
func TestDeepOpaqueDoesNotEncode(t *testing.T) {
	fun := newFunExt(0, 0, 1, atomExt("m"), cat(tagSmallInteger, 0), cat(tagSmallInteger, 0), limitPid,
		deepList(MaxDepth, atomExt("x"))[1:])
	if err := Validate(fun); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Validate: %v; want ErrTooDeep", err)
	}
	if _, err := Encode(&Opaque{Raw: fun[1:]}); !errors.Is(err, ErrEncode) {
		t.Fatalf("Encode: %v; want ErrEncode", err)
	}
}
