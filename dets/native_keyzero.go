package dets

import (
	"bytes"
	"math"

	"github.com/godets/godets/etf"
)

// OTP 25 holds 0.0 and -0.0 to be the same key (=:=; OTP 27 parts them),
// and so do lookups here, but their encodings differ in the sign bit. The
// native key hash (§9) therefore hashes a key with every -0.0 in it
// written as 0.0, so that both land in one slot, as phash2 (which hashes
// them alike) makes them do in otp9.

// keyForHash returns the bytes the native key hash covers: kenc itself,
// or, for a key that holds a -0.0, its encoding with 0.0 there.
func keyForHash(kenc []byte) []byte {
	if bytes.IndexByte(kenc, 70) < 0 { // no NEW_FLOAT_EXT tag can be there
		return kenc
	}
	has, ok := hasNegZero(kenc)
	if ok && !has {
		return kenc
	}
	var raw etf.Raw
	t, err := raw.DecodeBody(kenc)
	if err != nil {
		return kenc // not a sound key: its record fails elsewhere
	}
	t, changed := positiveZeros(t)
	if !changed {
		return kenc
	}
	enc, err := etf.Encode(t)
	if err != nil {
		return kenc
	}
	return enc[1:]
}

// hasNegZero reports whether the body b holds a NEW_FLOAT_EXT of -0.0;
// ok is false for a term etf does not walk (pids, references, funs,
// ports), which the caller decodes.
func hasNegZero(b []byte) (has, ok bool) {
	var raw etf.Raw
	return raw.HasNegativeZero(b)
}

// positiveZeros returns t with every -0.0 in it as 0.0, and whether there
// was one.
func positiveZeros(t etf.Term) (etf.Term, bool) {
	switch v := t.(type) {
	case etf.Float:
		if v == 0 && math.Signbit(float64(v)) {
			return etf.Float(0), true
		}
	case etf.Tuple:
		return positiveZerosIn(v, func(n etf.Tuple) etf.Term { return n })
	case etf.List:
		return positiveZerosIn(v, func(n etf.List) etf.Term { return n })
	case *etf.ImproperList:
		if v == nil {
			return t, false
		}
		elems, c1 := positiveZerosIn(v.Elems, func(n []etf.Term) []etf.Term { return n })
		tail, c2 := positiveZeros(v.Tail)
		if c1 || c2 {
			return &etf.ImproperList{Elems: elems, Tail: tail}, true
		}
	case etf.Map:
		out, changed := make(etf.Map, len(v)), false
		for i, p := range v {
			k, ck := positiveZeros(p.Key)
			x, cv := positiveZeros(p.Value)
			out[i], changed = etf.Pair{Key: k, Value: x}, changed || ck || cv
		}
		if changed {
			return out, true
		}
	}
	return t, false
}

// positiveZerosIn maps positiveZeros over a slice of terms, copying it
// only when an element changed.
func positiveZerosIn[S ~[]etf.Term, R any](s S, wrap func(S) R) (R, bool) {
	var out S
	for i, e := range s {
		if x, changed := positiveZeros(e); changed {
			if out == nil {
				out = append(S(nil), s...)
			}
			out[i] = x
		}
	}
	if out == nil {
		return wrap(s), false
	}
	return wrap(out), true
}

// sameStoredKey reports whether two stored keys (canonical bodies) are one
// key (=:=): the same bytes, or the same once each -0.0 is 0.0, since OTP
// 25 takes -0.0 and 0.0 for equal and a bucket keeps each object's key as
// it came. A native bucket's groups and key counts go by this, as the
// engine's inserts and lookups do, never by the bytes alone.
//
// Every parse of a native bucket compares neighbouring keys with it, so
// the usual answer comes from the bytes alone: keys of other lengths, or
// without the bytes of a NEW_FLOAT_EXT -0.0 in either (a native key is
// canonical: a float is always NEW_FLOAT_EXT), are not one key unless
// equal.
func sameStoredKey(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) != len(b) || !holdsNegZero(a) && !holdsNegZero(b) {
		return false
	}
	return bytes.Equal(keyForHash(a), keyForHash(b))
}

// holdsNegZero reports whether b has the bytes of a NEW_FLOAT_EXT -0.0
// anywhere; it looks for the tag byte first, which most keys lack (a
// bytes.Contains of the pattern cost 2% of a native insert).
func holdsNegZero(b []byte) bool {
	for {
		i := bytes.IndexByte(b, negZeroNew[0])
		if i < 0 || len(b)-i < len(negZeroNew) {
			return false
		}
		if bytes.Equal(b[i:i+len(negZeroNew)], negZeroNew) {
			return true
		}
		b = b[i+1:]
	}
}
