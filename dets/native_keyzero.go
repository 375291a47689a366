package dets

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/godets/godets/etf"
)

// OTP 25 holds 0.0 and -0.0 to be the same key (=:=; OTP 27 parts them),
// and so do lookups here, but their encodings differ in the sign bit. The
// native key hash (§9) therefore hashes a key with every -0.0 in it
// written as 0.0, so that both land in one slot, as phash2 (which hashes
// them alike) makes them do in otp9.

// negZeroBits is -0.0's NEW_FLOAT_EXT payload.
const negZeroBits = 1 << 63

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

// hasNegZero reports whether the body b holds a NEW_FLOAT_EXT of -0.0,
// walking the tags of plain terms; ok is false for a term it does not
// walk (pids, references, funs, ports), which the caller decodes.
func hasNegZero(b []byte) (has, ok bool) {
	n, has, ok := walkZero(b, 0)
	return has, ok && n == len(b)
}

// walkZero walks the term at b[p:] and returns where it ends.
func walkZero(b []byte, p int) (end int, has, ok bool) {
	if p >= len(b) {
		return 0, false, false
	}
	need := func(n int) bool { return n >= 0 && n <= len(b)-p }
	u32 := func(at int) int {
		if at+4 > len(b) {
			return -1
		}
		return int(binary.BigEndian.Uint32(b[at:]))
	}
	elems := func(start, count int) (int, bool, bool) {
		q, any := start, false
		for range count {
			e, h, ok := walkZero(b, q)
			if !ok {
				return 0, false, false
			}
			q, any = e, any || h
		}
		return q, any, true
	}
	switch b[p] {
	case 106: // []
		return p + 1, false, true
	case 97: // small integer
		return p + 2, false, need(2)
	case 98:
		return p + 5, false, need(5)
	case 70:
		if !need(9) {
			return 0, false, false
		}
		return p + 9, binary.BigEndian.Uint64(b[p+1:]) == negZeroBits, true
	case 119, 115: // small atoms
		if !need(2) {
			return 0, false, false
		}
		n := 2 + int(b[p+1])
		return p + n, false, need(n)
	case 118, 100, 107: // atoms, string: 2-byte length
		if !need(3) {
			return 0, false, false
		}
		n := 3 + int(binary.BigEndian.Uint16(b[p+1:]))
		return p + n, false, need(n)
	case 109: // binary
		n := 5 + u32(p+1)
		return p + n, false, n >= 5 && need(n)
	case 77: // bit string
		n := 6 + u32(p+1)
		return p + n, false, n >= 6 && need(n)
	case 110: // small bignum
		if !need(2) {
			return 0, false, false
		}
		n := 3 + int(b[p+1])
		return p + n, false, need(n)
	case 111:
		n := 6 + u32(p+1)
		return p + n, false, n >= 6 && need(n)
	case 104:
		if !need(2) {
			return 0, false, false
		}
		return elems(p+2, int(b[p+1]))
	case 105, 108, 116: // large tuple, list (and its tail), map (keys and values)
		n := u32(p + 1)
		if n < 0 || n > len(b) {
			return 0, false, false
		}
		switch b[p] {
		case 108:
			n++
		case 116:
			n *= 2
		}
		return elems(p+5, n)
	}
	return 0, false, false
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
