package etf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"strings"
)

// Three orders are used in this package. They agree on everything except
// how integers and floats meet:
//
//	Compare       Erlang's ==/< order: 1 and 1.0 are equal, 2 > 1.5.
//	Equal         Erlang's =:=: 1 and 1.0 differ. Internally the "exact"
//	              order (the one OTP uses for map keys) decides it: all
//	              integers sort before all floats, recursively everywhere.
//	CompareExact  dets_utils:cmp/2: Erlang order, except that an integer is
//	              before any float, recursively through lists and tuples of
//	              equal size. DETS sorts keys in a bucket by it.
//
// -0.0 and 0.0 are equal under all three, as in OTP 25.
type cmpMode uint8

const (
	modeEq    cmpMode = iota // Compare
	modeExact                // Equal and map key order
	modeDets                 // CompareExact
	// modeOTPKeys is modeExact, except that funs' Index and OldUniq
	// compare as OTP 25 compares them, by the sign of their 32-bit
	// difference (otpMisordersKeys).
	modeOTPKeys
)

// Compare returns -1, 0 or +1 as a is less than, equal to (==) or greater
// than b in Erlang term order:
//
//	number < atom < reference < fun < port < pid < tuple < map < [] < list < bit string
//
// Integers and floats compare by exact mathematical value (1 == 1.0, and no
// rounding happens between bignums and floats). Atoms compare by their UTF-8
// text, which is code point order. Tuples compare by size, then element by
// element; lists element by element; bit strings bit by bit, a prefix first.
// Maps compare by size, then by their keys sorted in map key order (where
// every integer is before every float), then by their values in that key
// order.
//
// Pids, ports, references and funs (Opaque) compare as in OTP 25,
// whatever encoding they came in; see compareFuns for funs.
//
// A nil Term is treated as smaller than every term, and NaN or infinite
// Floats (which Erlang cannot represent) sort after every finite number.
func Compare(a, b Term) int { return compare(a, b, modeEq) }

// Equal reports whether a and b are exactly equal (=:=): 1 and 1.0 differ,
// while -0.0 and 0.0 are equal as in OTP 25.
func Equal(a, b Term) bool { return compare(a, b, modeExact) == 0 }

// CompareExact is a total order consistent with Equal; it is the order
// dets_utils:cmp/2 gives, which OTP DETS uses to sort keys within a bucket.
// It is Compare's order, except that an integer is smaller than any float
// (so 2 < 1.5 and 1 < 1.0), and this rule applies recursively through list
// elements and tails and through tuples of equal size. Other terms compare
// as in Compare.
//
// Two maps that are == but not =:= (#{a => 1} and #{a => 1.0}) have no order
// in dets_utils:cmp/2 (it answers 1 both ways); CompareExact breaks that tie
// with the exact order so that it stays a total order.
func CompareExact(a, b Term) int { return compare(a, b, modeDets) }

// typeOf is t.Type(), with 0 for a nil Term or a nil pointer, so that
// hand-built malformed terms never panic. A type switch rather than the
// method call keeps terms from escaping to the heap.
func typeOf(t Term) Type {
	switch v := t.(type) {
	case Atom:
		return TypeAtom
	case Int, Float:
		return TypeNumber
	case *BigInt:
		if v == nil {
			return 0
		}
		return TypeNumber
	case Binary, Bitstring:
		return TypeBitstring
	case Tuple:
		return TypeTuple
	case List:
		return v.Type()
	case *ImproperList:
		if v == nil {
			return 0
		}
		return TypeList
	case Map:
		return TypeMap
	case *Opaque:
		if v == nil {
			return 0
		}
		return v.Type()
	}
	return 0
}

func cmpOrdered[T ~int | ~int64 | ~uint8 | ~uint32 | ~uint64 | ~float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(a, b Term, m cmpMode) int {
	ta, tb := typeOf(a), typeOf(b)
	if ta != tb {
		return cmpOrdered(ta, tb)
	}
	switch ta {
	case 0, TypeNil:
		return 0
	case TypeNumber:
		return compareNumbers(a, b, m)
	case TypeAtom:
		return strings.Compare(string(a.(Atom)), string(b.(Atom)))
	case TypeTuple:
		x, y := a.(Tuple), b.(Tuple)
		if len(x) != len(y) {
			return cmpOrdered(len(x), len(y))
		}
		for i := range x {
			if c := compare(x[i], y[i], m); c != 0 {
				return c
			}
		}
		return 0
	case TypeList:
		return compareLists(a, b, m)
	case TypeMap:
		x, y := a.(Map), b.(Map)
		if m == modeDets {
			// dets_utils:cmp/2 falls back to Erlang's < for maps.
			if c := compareMaps(x, y, modeEq); c != 0 {
				return c
			}
			return compareMaps(x, y, modeExact)
		}
		return compareMaps(x, y, m)
	case TypeBitstring:
		xb, xbits := bitsOf(a)
		yb, ybits := bitsOf(b)
		return compareBits(xb, xbits, yb, ybits)
	default: // opaque types
		return compareOpaque(a.(*Opaque), b.(*Opaque), m)
	}
}

// bitsOf returns the bytes and total bit length of a Binary or Bitstring,
// as int64: 8 times a length overflows int on 32-bit platforms.
func bitsOf(t Term) ([]byte, int64) {
	switch v := t.(type) {
	case Binary:
		return v, 8 * int64(len(v))
	case Bitstring:
		if len(v.Bytes) == 0 {
			return nil, 0
		}
		bits := int64(v.Bits)
		if bits < 1 || bits > 8 {
			bits = 8
		}
		return v.Bytes, 8*int64(len(v.Bytes)-1) + bits
	}
	return nil, 0
}

// compareBits compares two bit strings bit by bit; a proper prefix is
// smaller.
func compareBits(x []byte, xn int64, y []byte, yn int64) int {
	n := min(xn, yn)
	full := int(n / 8)
	if c := bytes.Compare(x[:full], y[:full]); c != 0 {
		return c
	}
	if rem := n % 8; rem != 0 {
		mask := byte(0xFF << (8 - rem))
		if c := cmpOrdered(x[full]&mask, y[full]&mask); c != 0 {
			return c
		}
	}
	return cmpOrdered(xn, yn)
}

// listCursor walks the cons cells of a List or *ImproperList, following
// tails that are themselves lists (only possible in hand-built terms).
type listCursor struct {
	elems []Term
	tail  Term // nil means []
}

func newListCursor(t Term) listCursor {
	var c listCursor
	c.tail = t
	c.fill()
	return c
}

// fill makes elems non-empty if any cons cell remains.
func (c *listCursor) fill() {
	for len(c.elems) == 0 && c.tail != nil {
		switch t := c.tail.(type) {
		case List:
			c.elems, c.tail = t, nil
		case *ImproperList:
			c.elems, c.tail = t.Elems, t.Tail
		default:
			return
		}
	}
}

func (c *listCursor) rest() Term {
	if c.tail == nil {
		return Nil
	}
	return c.tail
}

func compareLists(a, b Term, m cmpMode) int {
	x, y := newListCursor(a), newListCursor(b)
	for {
		xc, yc := len(x.elems) > 0, len(y.elems) > 0
		switch {
		case xc && yc:
			if c := compare(x.elems[0], y.elems[0], m); c != 0 {
				return c
			}
			x.elems, y.elems = x.elems[1:], y.elems[1:]
			x.fill()
			y.fill()
		case !xc && !yc:
			return compare(x.rest(), y.rest(), m)
		case !xc:
			return cmpOrdered(typeOf(x.rest()), TypeList)
		default:
			return cmpOrdered(TypeList, typeOf(y.rest()))
		}
	}
}

// compareMaps compares by size, then the sorted keys pairwise in exact
// order, then the values in key order using mode m.
func compareMaps(x, y Map, m cmpMode) int {
	if len(x) != len(y) {
		return cmpOrdered(len(x), len(y))
	}
	if len(x) == 0 {
		return 0
	}
	km := modeExact
	if m == modeOTPKeys {
		km = m
	}
	xs, ys := sortedPairs(x), sortedPairs(y)
	for i := range xs {
		if c := compare(xs[i].Key, ys[i].Key, km); c != 0 {
			return c
		}
	}
	for i := range xs {
		if c := compare(xs[i].Value, ys[i].Value, m); c != 0 {
			return c
		}
	}
	return 0
}

// sortedPairs returns m's pairs in map key order, copying only when m is
// not already sorted.
func sortedPairs(m Map) Map {
	if slices.IsSortedFunc(m, comparePairKeys) {
		return m
	}
	s := slices.Clone(m)
	slices.SortStableFunc(s, comparePairKeys)
	return s
}

func comparePairKeys(p, q Pair) int { return compare(p.Key, q.Key, modeExact) }

// maxFlatmap is the most pairs that OTP 25 keeps as a flatmap, whose keys
// binary_to_term sorts by term order; larger maps are hash tries.
const maxFlatmap = 32

// otpMisordersKeys reports whether OTP 25 would compare two keys of the
// flatmap m otherwise than term order: when their order is decided by two
// funs' Index or OldUniq 2^31 or more apart, where OTP's 32-bit
// subtraction overflows. Its order of such keys is then not a total order
// (exactly 2^31 apart, each key is less than the other), so which map
// binary_to_term builds depends on the order of the pairs in the
// encoding, and no re-encoding, not even OTP's own term_to_binary, is
// sure to give back the same term.
func otpMisordersKeys(m Map) bool {
	if len(m) < 2 || len(m) > maxFlatmap {
		return false
	}
	var keys []Term // only keys holding local funs can be misordered
	for _, p := range m {
		if hasLocalFun(p.Key) {
			keys = append(keys, p.Key)
		}
	}
	for i := range keys {
		for j := range keys {
			if i != j && compare(keys[i], keys[j], modeOTPKeys) != compare(keys[i], keys[j], modeExact) {
				return true
			}
		}
	}
	return false
}

// hasLocalFun reports whether t is or contains a NEW_FUN_EXT fun.
func hasLocalFun(t Term) bool {
	switch v := t.(type) {
	case *Opaque:
		return len(v.Raw) > 0 && v.Raw[0] == tagNewFun
	case Tuple:
		return slices.ContainsFunc(v, hasLocalFun)
	case List:
		return slices.ContainsFunc(v, hasLocalFun)
	case *ImproperList:
		return slices.ContainsFunc(v.Elems, hasLocalFun) || hasLocalFun(v.Tail)
	case Map:
		return slices.ContainsFunc(v, func(p Pair) bool { return hasLocalFun(p.Key) || hasLocalFun(p.Value) })
	}
	return false
}

func compareNumbers(a, b Term, m cmpMode) int {
	switch x := a.(type) {
	case Int:
		switch y := b.(type) {
		case Int:
			return cmpOrdered(x, y)
		case *BigInt:
			return -compareBigInt64(y, int64(x))
		case Float:
			if m != modeEq {
				return -1
			}
			return compareInt64Float(int64(x), float64(y))
		}
	case *BigInt:
		switch y := b.(type) {
		case Int:
			return compareBigInt64(x, int64(y))
		case *BigInt:
			return x.v.Cmp(&y.v)
		case Float:
			if m != modeEq {
				return -1
			}
			return compareBigFloat(&x.v, float64(y))
		}
	case Float:
		switch y := b.(type) {
		case Int:
			if m != modeEq {
				return 1
			}
			return -compareInt64Float(int64(y), float64(x))
		case *BigInt:
			if m != modeEq {
				return 1
			}
			return -compareBigFloat(&y.v, float64(x))
		case Float:
			return compareFloats(float64(x), float64(y))
		}
	}
	return 0
}

// compareFloats orders finite floats by value (-0.0 == 0.0) and puts NaN
// last so that the order stays total on values Erlang cannot hold.
func compareFloats(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn || yn:
		return cmpOrdered(b2i(xn), b2i(yn))
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func compareBigInt64(x *BigInt, y int64) int {
	if x.v.IsInt64() { // only for hand-built, unnormalized values
		return cmpOrdered(x.v.Int64(), y)
	}
	return x.v.Sign()
}

// compareInt64Float compares exactly, without converting i to float64.
func compareInt64Float(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return -1
	case f >= 0x1p63:
		return -1
	case f < -0x1p63:
		return 1
	}
	t := math.Trunc(f)
	ti := int64(t) // exact: |t| <= 2^63 and -2^63 fits
	if c := cmpOrdered(i, ti); c != 0 {
		return c
	}
	// i == trunc(f); the fraction decides.
	return cmpOrdered(0, f-t)
}

func compareBigFloat(x *big.Int, f float64) int {
	switch {
	case math.IsNaN(f), math.IsInf(f, 1):
		return -1
	case math.IsInf(f, -1):
		return 1
	}
	var xf, ff big.Float
	xf.SetPrec(uint(max(x.BitLen(), 64))).SetInt(x)
	ff.SetFloat64(f)
	return xf.Cmp(&ff)
}

// opaqueKey is the identity of a pid, port or reference, parsed from its
// encoding so that different encodings of one term (PID_EXT and
// NEW_PID_EXT, references padded with zero words, Latin-1 or UTF-8 node
// atoms) compare equal, as they are =:= in OTP.
type opaqueKey struct {
	node     Atom
	creation uint32
	id       uint64 // pid or port number
	serial   uint32 // pids only
	refs     [5]uint32
	nrefs    int // ID words of a reference, trailing zero words dropped
}

func parseOpaque(raw []byte) (opaqueKey, bool) {
	var k opaqueKey
	if len(raw) == 0 {
		return k, false
	}
	d := decoder{b: raw}
	tag := d.u8()
	switch tag {
	case tagNewReference, tagNewerReference:
		if len(raw) < 3 {
			return k, false
		}
		k.nrefs = int(d.u16())
		if k.nrefs > len(k.refs) {
			return k, false
		}
	case tagPid, tagNewPid, tagPort, tagNewPort, tagV4Port, tagReference:
	default:
		return k, false
	}
	node, err := d.atom()
	if err != nil {
		return k, false
	}
	k.node = node
	rest := raw[d.off:]
	be32 := func(i int) uint32 { return binary.BigEndian.Uint32(rest[i:]) }
	need := func(n int) bool { return len(rest) == n }
	switch tag {
	case tagPid:
		if !need(9) {
			return k, false
		}
		k.id, k.serial, k.creation = uint64(be32(0)), be32(4), uint32(rest[8])
	case tagNewPid:
		if !need(12) {
			return k, false
		}
		k.id, k.serial, k.creation = uint64(be32(0)), be32(4), be32(8)
	case tagPort:
		if !need(5) {
			return k, false
		}
		k.id, k.creation = uint64(be32(0)), uint32(rest[4])
	case tagNewPort:
		if !need(8) {
			return k, false
		}
		k.id, k.creation = uint64(be32(0)), be32(4)
	case tagV4Port:
		if !need(12) {
			return k, false
		}
		k.id, k.creation = binary.BigEndian.Uint64(rest), be32(8)
	case tagReference:
		if !need(5) {
			return k, false
		}
		k.refs[0], k.nrefs, k.creation = be32(0), 1, uint32(rest[4])
	case tagNewReference, tagNewerReference:
		cr := 1
		if tag == tagNewerReference {
			cr = 4
		}
		if !need(cr + 4*k.nrefs) {
			return k, false
		}
		if cr == 1 {
			k.creation = uint32(rest[0])
		} else {
			k.creation = be32(0)
		}
		for i := range k.nrefs {
			k.refs[i] = be32(cr + 4*i)
		}
	}
	for k.nrefs > 0 && k.refs[k.nrefs-1] == 0 {
		k.nrefs--
	}
	return k, true
}

// compareOpaque orders two opaque terms of the same Type as OTP 25 does
// for pids (serial, number, node, creation), ports (node, creation,
// number), references (node, creation, then the ID words: fewer words
// first, then from the most significant word) and funs (compareFuns).
// Anything that does not parse (only hand-built terms) compares by its
// raw bytes, after everything that does.
func compareOpaque(x, y *Opaque, m cmpMode) int {
	if x.Type() == TypeFun {
		if m == modeDets {
			// dets_utils:cmp/2 falls back to Erlang's < for funs, as for
			// maps: == first, then =:= to keep the order total.
			if c := compareFuns(x.Raw, y.Raw, modeEq); c != 0 {
				return c
			}
			m = modeExact
		}
		return compareFuns(x.Raw, y.Raw, m)
	}
	kx, okx := parseOpaque(x.Raw)
	ky, oky := parseOpaque(y.Raw)
	if !okx || !oky {
		if okx != oky {
			return cmpOrdered(b2i(okx), b2i(oky))
		}
		return bytes.Compare(x.Raw, y.Raw)
	}
	node := func() int {
		if c := strings.Compare(string(kx.node), string(ky.node)); c != 0 {
			return c
		}
		return cmpOrdered(kx.creation, ky.creation)
	}
	switch x.Type() {
	case TypePid:
		if c := cmpOrdered(kx.serial, ky.serial); c != 0 {
			return c
		}
		if c := cmpOrdered(kx.id, ky.id); c != 0 {
			return c
		}
		return node()
	case TypePort:
		if c := node(); c != 0 {
			return c
		}
		return cmpOrdered(kx.id, ky.id)
	default: // references
		if c := node(); c != 0 {
			return c
		}
		if c := cmpOrdered(kx.nrefs, ky.nrefs); c != 0 {
			return c
		}
		for i := kx.nrefs - 1; i >= 0; i-- {
			if c := cmpOrdered(kx.refs[i], ky.refs[i]); c != 0 {
				return c
			}
		}
		return 0
	}
}

// funKey is what OTP 25 compares of a fun. A local fun (NEW_FUN_EXT) is
// its entry in the fun table, found by module, Index and OldUniq (both
// held as 32-bit ints), then its free variables: Arity, Uniq, OldIndex,
// Size and the creator do not take part. An export is its module,
// function and arity (held in 32 bits).
type funKey struct {
	export           bool
	module, function Atom
	arity            uint32
	index, oldUniq   int32
	free             []Term
}

func parseFun(raw []byte) (k funKey, ok bool) {
	if len(raw) == 0 {
		return k, false
	}
	d := decoder{b: raw, off: 1}
	var err error
	switch raw[0] {
	case tagExport:
		k.export = true
		if k.module, err = d.atom(); err != nil {
			return k, false
		}
		if k.function, err = d.atom(); err != nil {
			return k, false
		}
		arity, err := d.smallInt("export arity", 0)
		k.arity = uint32(arity)
		return k, err == nil && d.off == len(raw)
	case tagNewFun:
		if len(raw) < 1+4+1+16+4+4 {
			return k, false
		}
		d.off = 1 + 4 + 1 + 16
		k.index = int32(d.u32())
		numFree := d.u32()
		if k.module, err = d.atom(); err != nil {
			return k, false
		}
		if _, err = d.smallInt("fun OldIndex", 0); err != nil {
			return k, false
		}
		oldUniq, err := d.smallInt("fun OldUniq", 0)
		if err != nil || d.skip(0) != nil { // and the creator
			return k, false
		}
		k.oldUniq = int32(oldUniq)
		k.free = make([]Term, 0, min(numFree, maxFunFree))
		for range numFree {
			t, err := d.term(0)
			if err != nil {
				return k, false
			}
			k.free = append(k.free, t)
		}
		return k, d.off == len(raw)
	}
	return k, false
}

// cmpFunField compares a fun's Index or OldUniq: as signed 32-bit
// integers, or in modeOTPKeys as OTP 25 does, by the sign of their
// difference computed in 32 bits (Go's int32 arithmetic wraps as OTP's
// does), which is the wrong sign when they are 2^31 or more apart.
func cmpFunField(x, y int32, m cmpMode) int {
	if m == modeOTPKeys {
		return cmpOrdered(int64(x-y), 0)
	}
	return cmpOrdered(int64(x), int64(y))
}

// compareFuns orders funs as OTP 25 does: local funs before exports;
// local funs by module, Index, OldUniq, number of free variables, then the
// free variables (in mode m); exports by module, function and arity. (OTP
// subtracts the 32-bit Index and OldUniq, so for two values 2^31 or more
// apart its order is not even transitive; here they compare as signed,
// except in modeOTPKeys, and Decode refuses map keys where that differs.)
func compareFuns(x, y []byte, m cmpMode) int {
	kx, okx := parseFun(x)
	ky, oky := parseFun(y)
	if !okx || !oky {
		if okx != oky {
			return cmpOrdered(b2i(okx), b2i(oky))
		}
		return bytes.Compare(x, y)
	}
	if kx.export != ky.export {
		return cmpOrdered(b2i(kx.export), b2i(ky.export))
	}
	if c := strings.Compare(string(kx.module), string(ky.module)); c != 0 {
		return c
	}
	if kx.export {
		if c := strings.Compare(string(kx.function), string(ky.function)); c != 0 {
			return c
		}
		return cmpOrdered(kx.arity, ky.arity)
	}
	if c := cmpFunField(kx.index, ky.index, m); c != 0 {
		return c
	}
	if c := cmpFunField(kx.oldUniq, ky.oldUniq, m); c != 0 {
		return c
	}
	if c := cmpOrdered(len(kx.free), len(ky.free)); c != 0 {
		return c
	}
	for i := range kx.free {
		if c := compare(kx.free[i], ky.free[i], m); c != 0 {
			return c
		}
	}
	return 0
}
