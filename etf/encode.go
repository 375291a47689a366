package etf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// Encode returns the external encoding of t, byte-equal to OTP 25's
// term_to_binary/1 (minor version 1, no compression):
//
//   - integers 0..255 as SMALL_INTEGER, other int32 values as INTEGER,
//     larger ones as SMALL_BIG (up to 255 magnitude bytes) or LARGE_BIG;
//   - floats as NEW_FLOAT;
//   - atoms whose characters are all Latin-1 as ATOM_EXT, others as
//     SMALL_ATOM_UTF8 (up to 255 UTF-8 bytes) or ATOM_UTF8;
//   - proper lists of 1..65535 integers in 0..255 as STRING_EXT;
//   - maps with their pairs in map key order (integers before floats,
//     otherwise term order).
//
// OTP stores maps of more than 32 keys as hash tries and writes their pairs
// in internal hash order. Encode writes every map in key order, so for
// those large maps the bytes differ from OTP's, although binary_to_term
// gives the same map. Opaque terms are written as their Raw bytes, after
// checking that Raw is one well-formed pid, port, reference or fun.
//
// Errors are *EncodeError (errors.Is(err, ErrEncode)): a nil Term, a NaN or
// infinite Float, an atom that is not UTF-8 or has more than 255
// characters, a Bitstring with Bits outside 1..7 or no bytes, an
// ImproperList with no elements or a list or nil tail, a map with two
// Equal keys or with keys that OTP 25 misorders (as Decode refuses them),
// an invalid Opaque, or nesting deeper than MaxDepth.
func Encode(t Term) ([]byte, error) {
	n, err := EncodedSize(t)
	if err != nil {
		return nil, err
	}
	return AppendEncode(make([]byte, 0, n), t)
}

// AppendEncode appends the encoding of t (starting with the version byte
// 131) to dst and returns the extended slice. It allocates only to grow dst
// and, for a map whose pairs are not already in key order, to sort a copy.
// On error dst is returned unchanged (truncated to its original length).
func AppendEncode(dst []byte, t Term) ([]byte, error) {
	n := len(dst)
	out, err := appendTerm(append(dst, tagVersion), t, 0)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// EncodedSize returns len(Encode(t)) without encoding, or the error
// Encode would return.
func EncodedSize(t Term) (int, error) {
	n, err := termSize(t, 0)
	if err != nil {
		return 0, err
	}
	return 1 + n, nil
}

func eerr(format string, args ...any) *EncodeError {
	return &EncodeError{Reason: fmt.Sprintf(format, args...)}
}

// atomShape checks an atom and reports whether every character is
// Latin-1 (ATOM_EXT) and how many characters it has.
func atomShape(a Atom) (latin1 bool, chars int, err error) {
	latin1 = true
	for i, r := range a {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(string(a[i:])); size == 1 {
				return false, 0, eerr("atom is not valid UTF-8")
			}
		}
		if r > 0xFF {
			latin1 = false
		}
		chars++
	}
	if chars > maxAtomChars {
		return false, 0, eerr("atom has %d characters, more than %d", chars, maxAtomChars)
	}
	return latin1, chars, nil
}

func atomSize(a Atom) (int, error) {
	latin1, chars, err := atomShape(a)
	switch {
	case err != nil:
		return 0, err
	case latin1:
		return 3 + chars, nil
	case len(a) <= 255:
		return 2 + len(a), nil
	}
	return 3 + len(a), nil
}

func appendAtom(b []byte, a Atom) ([]byte, error) {
	latin1, chars, err := atomShape(a)
	switch {
	case err != nil:
		return b, err
	case latin1:
		b = append(b, tagAtom)
		b = binary.BigEndian.AppendUint16(b, uint16(chars))
		for _, r := range a {
			b = append(b, byte(r))
		}
		return b, nil
	case len(a) <= 255:
		b = append(b, tagSmallAtomUTF8, byte(len(a)))
	default:
		b = append(b, tagAtomUTF8)
		b = binary.BigEndian.AppendUint16(b, uint16(len(a)))
	}
	return append(b, a...), nil
}

// isStringList reports whether l is written as STRING_EXT.
func isStringList(l List) bool {
	if len(l) == 0 || len(l) > math.MaxUint16 {
		return false
	}
	for _, e := range l {
		if i, ok := e.(Int); !ok || i < 0 || i > 255 {
			return false
		}
	}
	return true
}

// magnitudeBytes is the number of bytes of |x|.
func magnitudeBytes64(u uint64) int { return (bits.Len64(u) + 7) / 8 }

func abs64(i int64) uint64 {
	if i < 0 {
		return uint64(-i) // -MinInt64 wraps to 2^63, as wanted
	}
	return uint64(i)
}

func intSize(i int64) int {
	switch {
	case i >= 0 && i <= 255:
		return 2
	case i >= math.MinInt32 && i <= math.MaxInt32:
		return 5
	}
	return 3 + magnitudeBytes64(abs64(i))
}

func appendInt(b []byte, i int64) []byte {
	switch {
	case i >= 0 && i <= 255:
		return append(b, tagSmallInteger, byte(i))
	case i >= math.MinInt32 && i <= math.MaxInt32:
		return binary.BigEndian.AppendUint32(append(b, tagInteger), uint32(i))
	}
	u := abs64(i)
	b = append(b, tagSmallBig, byte(magnitudeBytes64(u)), byte(b2i(i < 0)))
	for ; u != 0; u >>= 8 {
		b = append(b, byte(u))
	}
	return b
}

func bigSize(x *BigInt) int {
	if x.v.IsInt64() {
		return intSize(x.v.Int64())
	}
	n := (x.v.BitLen() + 7) / 8
	if n <= 255 {
		return 3 + n
	}
	return 6 + n
}

func appendBig(b []byte, x *BigInt) ([]byte, error) {
	if x.v.IsInt64() {
		return appendInt(b, x.v.Int64()), nil
	}
	n := (x.v.BitLen() + 7) / 8
	if uint64(n) > math.MaxUint32 {
		return b, eerr("integer too large")
	}
	sign := byte(b2i(x.v.Sign() < 0))
	if n <= 255 {
		b = append(b, tagSmallBig, byte(n), sign)
	} else {
		b = append(binary.BigEndian.AppendUint32(append(b, tagLargeBig), uint32(n)), sign)
	}
	// Little-endian magnitude straight from the words, without copying.
	left := n
	for _, w := range x.v.Bits() {
		for k := 0; k < bits.UintSize/8 && left > 0; k++ {
			b = append(b, byte(w>>(8*k)))
			left--
		}
	}
	return b, nil
}

func checkFloat(f Float) error {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return eerr("float %v is not finite", float64(f))
	}
	return nil
}

func checkBitstring(v Bitstring) error {
	if v.Bits < 1 || v.Bits > 7 {
		return eerr("Bitstring.Bits is %d, want 1..7", v.Bits)
	}
	if len(v.Bytes) == 0 {
		return eerr("Bitstring has no bytes")
	}
	if uint64(len(v.Bytes)) > math.MaxUint32 {
		return eerr("bit string too large")
	}
	return nil
}

func checkImproper(v *ImproperList) error {
	if len(v.Elems) == 0 {
		return eerr("ImproperList has no elements")
	}
	switch v.Tail.(type) {
	case nil:
		return eerr("ImproperList has a nil tail")
	case List, *ImproperList:
		return eerr("ImproperList tail is a list; flatten it (NewImproperList)")
	}
	if uint64(len(v.Elems)) > math.MaxUint32 {
		return eerr("list too long")
	}
	return nil
}

// checkOpaque verifies that Raw holds exactly one pid, port, reference or
// fun, as Decode would accept it.
func checkOpaque(o *Opaque, depth int) error {
	if len(o.Raw) == 0 {
		return eerr("Opaque has no bytes")
	}
	switch o.Raw[0] {
	case tagPid, tagNewPid, tagPort, tagNewPort, tagV4Port, tagReference,
		tagNewReference, tagNewerReference, tagExport, tagNewFun, tagFun:
	default:
		return eerr("Opaque has tag %d, not a pid, port, reference or fun", o.Raw[0])
	}
	d := decoder{b: o.Raw}
	if err := d.skipOpaque(depth); err != nil {
		return eerr("Opaque is malformed: %v", err)
	}
	if d.off != len(o.Raw) {
		return eerr("Opaque has %d bytes after its term", len(o.Raw)-d.off)
	}
	if d.deepAt != 0 {
		return depthErr()
	}
	return nil
}

// mapPairs returns m's pairs in encoding order, or an error for duplicate
// keys or keys that OTP misorders (otpMisordersKeys). It copies only when
// m is not already strictly sorted.
func mapPairs(m Map) (Map, error) {
	if otpMisordersKeys(m) {
		return nil, eerr("%s", funKeyOrderReason)
	}
	sorted := true
	for i := 1; i < len(m); i++ {
		c := compare(m[i-1].Key, m[i].Key, modeExact)
		if c == 0 {
			return nil, eerr("map has duplicate keys")
		}
		if c > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return m, nil
	}
	s := slices.Clone(m)
	slices.SortFunc(s, comparePairKeys)
	for i := 1; i < len(s); i++ {
		if compare(s[i-1].Key, s[i].Key, modeExact) == 0 {
			return nil, eerr("map has duplicate keys")
		}
	}
	return s, nil
}

func depthErr() error { return eerr("term nested deeper than %d", MaxDepth) }

// termSize mirrors appendTerm.
func termSize(t Term, depth int) (int, error) {
	if depth > MaxDepth {
		return 0, depthErr()
	}
	switch v := t.(type) {
	case Atom:
		return atomSize(v)
	case Int:
		return intSize(int64(v)), nil
	case *BigInt:
		if v == nil {
			return 0, eerr("nil *BigInt")
		}
		return bigSize(v), nil
	case Float:
		return 9, checkFloat(v)
	case Binary:
		if uint64(len(v)) > math.MaxUint32 {
			return 0, eerr("binary too large")
		}
		return 5 + len(v), nil
	case Bitstring:
		return 6 + len(v.Bytes), checkBitstring(v)
	case Tuple:
		n := 2
		if len(v) > 255 {
			n = 5
			if uint64(len(v)) > math.MaxUint32 {
				return 0, eerr("tuple too large")
			}
		}
		for _, e := range v {
			k, err := termSize(e, depth+1)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	case List:
		if len(v) == 0 {
			return 1, nil
		}
		if isStringList(v) {
			return 3 + len(v), nil
		}
		if uint64(len(v)) > math.MaxUint32 {
			return 0, eerr("list too long")
		}
		return elemsSize(v, 6, depth)
	case *ImproperList:
		if v == nil {
			return 0, eerr("nil *ImproperList")
		}
		if err := checkImproper(v); err != nil {
			return 0, err
		}
		n, err := elemsSize(v.Elems, 5, depth)
		if err != nil {
			return 0, err
		}
		k, err := termSize(v.Tail, depth+1)
		return n + k, err
	case Map:
		if uint64(len(v)) > math.MaxUint32 {
			return 0, eerr("map too large")
		}
		if _, err := mapPairs(v); err != nil {
			return 0, err
		}
		n := 5
		for _, p := range v {
			k, err := termSize(p.Key, depth+1)
			if err != nil {
				return 0, err
			}
			w, err := termSize(p.Value, depth+1)
			if err != nil {
				return 0, err
			}
			n += k + w
		}
		return n, nil
	case *Opaque:
		if v == nil {
			return 0, eerr("nil *Opaque")
		}
		return len(v.Raw), checkOpaque(v, depth)
	case nil:
		return 0, eerr("nil Term")
	}
	return 0, eerr("unknown term type")
}

func elemsSize(elems []Term, n, depth int) (int, error) {
	for _, e := range elems {
		k, err := termSize(e, depth+1)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

func appendTerm(b []byte, t Term, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return b, depthErr()
	}
	switch v := t.(type) {
	case Atom:
		return appendAtom(b, v)
	case Int:
		return appendInt(b, int64(v)), nil
	case *BigInt:
		if v == nil {
			return b, eerr("nil *BigInt")
		}
		return appendBig(b, v)
	case Float:
		if err := checkFloat(v); err != nil {
			return b, err
		}
		return binary.BigEndian.AppendUint64(append(b, tagNewFloat), math.Float64bits(float64(v))), nil
	case Binary:
		if uint64(len(v)) > math.MaxUint32 {
			return b, eerr("binary too large")
		}
		b = binary.BigEndian.AppendUint32(append(b, tagBinary), uint32(len(v)))
		return append(b, v...), nil
	case Bitstring:
		if err := checkBitstring(v); err != nil {
			return b, err
		}
		b = binary.BigEndian.AppendUint32(append(b, tagBitBinary), uint32(len(v.Bytes)))
		b = append(append(b, v.Bits), v.Bytes...)
		b[len(b)-1] &= byte(0xFF << (8 - v.Bits)) // unused bits are zero
		return b, nil
	case Tuple:
		if len(v) <= 255 {
			b = append(b, tagSmallTuple, byte(len(v)))
		} else {
			if uint64(len(v)) > math.MaxUint32 {
				return b, eerr("tuple too large")
			}
			b = binary.BigEndian.AppendUint32(append(b, tagLargeTuple), uint32(len(v)))
		}
		return appendElems(b, v, depth)
	case List:
		if len(v) == 0 {
			return append(b, tagNil), nil
		}
		if isStringList(v) {
			b = binary.BigEndian.AppendUint16(append(b, tagString), uint16(len(v)))
			for _, e := range v {
				b = append(b, byte(e.(Int)))
			}
			return b, nil
		}
		if uint64(len(v)) > math.MaxUint32 {
			return b, eerr("list too long")
		}
		b = binary.BigEndian.AppendUint32(append(b, tagList), uint32(len(v)))
		b, err := appendElems(b, v, depth)
		return append(b, tagNil), err
	case *ImproperList:
		if v == nil {
			return b, eerr("nil *ImproperList")
		}
		if err := checkImproper(v); err != nil {
			return b, err
		}
		b = binary.BigEndian.AppendUint32(append(b, tagList), uint32(len(v.Elems)))
		b, err := appendElems(b, v.Elems, depth)
		if err != nil {
			return b, err
		}
		return appendTerm(b, v.Tail, depth+1)
	case Map:
		if uint64(len(v)) > math.MaxUint32 {
			return b, eerr("map too large")
		}
		pairs, err := mapPairs(v)
		if err != nil {
			return b, err
		}
		b = binary.BigEndian.AppendUint32(append(b, tagMap), uint32(len(pairs)))
		for _, p := range pairs {
			if b, err = appendTerm(b, p.Key, depth+1); err != nil {
				return b, err
			}
			if b, err = appendTerm(b, p.Value, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	case *Opaque:
		if v == nil {
			return b, eerr("nil *Opaque")
		}
		if err := checkOpaque(v, depth); err != nil {
			return b, err
		}
		return append(b, v.Raw...), nil
	case nil:
		return b, eerr("nil Term")
	}
	return b, eerr("unknown term type")
}

func appendElems(b []byte, elems []Term, depth int) ([]byte, error) {
	var err error
	for _, e := range elems {
		if b, err = appendTerm(b, e, depth+1); err != nil {
			return b, err
		}
	}
	return b, nil
}
