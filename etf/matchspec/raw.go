package matchspec

import (
	"bytes"
	"cmp"
	"encoding/binary"

	"github.com/godets/godets/etf"
)

// The raw filter: a test of a spec against an object's encoding (the
// term_to_binary bytes a table stores) that proves, without decoding, that
// Run would reject the object. A table scan asks RejectsRaw first and
// decodes only the objects it cannot rule out, so a select that keeps few
// objects costs a walk of their bytes instead of building every term.
//
// It is a necessary condition, never a decision: every answer it is not
// sure of is "maybe", and the caller decodes and runs the spec as before.
// So it must say "rejects" only where the term-level path certainly gives
// no result. What it reads:
//
//   - heads: tuple arity, and constants, repeated variables and nested
//     tuples compared with etf.Raw's CompareBodies, which answers exactly
//     (=:=) or not at all; lists and maps are not walked;
//   - guards: comparisons, binary_part/2,3, byte_size/1, the type tests,
//     not/1, xor/2, andalso and orelse, over the head's variables, '$_' and
//     constants. A comparison is decided only where term order needs no
//     number conversion: integers and binaries by value, atoms, [] and
//     types that differ by their tags; =:= and =/= also on tuples of those.
//     Any other function or operand makes that guard "maybe".
//
// The bytes given must be a valid encoding (a table validates what it
// reads); the filter never panics on others, but may then reject.

// rawSpan is a term's body inside the encoding, [start, end), or unset
// (start < 0) when the head did not walk down to it.
type rawSpan struct{ start, end int }

// rawKind classifies an evaluated raw operand.
type rawKind uint8

const (
	rvUnknown rawKind = iota // cannot tell without decoding
	rvFail                   // the expression raises
	rvBool                   // the atom true or false, in b
	rvInt                    // an integer that fits INTEGER_EXT, in i
	rvBytes                  // a binary, its bytes in bytes
	rvBody                   // any other term, encoded in bytes (a body)
)

type rawVal struct {
	kind  rawKind
	b     bool
	i     int64
	bytes []byte
}

// rawExpr is an expression compiled for the raw filter.
type rawExpr struct {
	op   rawOp
	fn   fn
	slot int
	c    rawVal // rxConst; rxCmpPart: the constant binary
	args []*rawExpr
	// rxCmpPart: the part's range, and whether the constant is on the left
	from, n int64
	swap    bool
}

type rawOp uint8

const (
	rxUnknown rawOp = iota // not evaluated raw: "maybe"
	rxConst
	rxVar
	rxObject
	rxCall // fn: a comparison, binary_part, byte_size, a type test, not, xor
	rxAndAlso
	rxOrElse
	rxCmpPart // fn(binary_part(Var, From, Len), Bytes), or swapped: rawCmpPart
)

// rawClause is a clause's raw form: its head (which the clause's pattern
// nodes carry, with their constants encoded) and guards.
type rawClause struct {
	guards []*rawExpr
}

// Term order's type ranks (number < atom < reference < fun < port < pid <
// tuple < map < nil < list < bit string), by the tag that starts a body; 0
// for a tag this filter does not rank.
var tagRank = [256]uint8{
	97: 1, 98: 1, 110: 1, 111: 1, 70: 1, 99: 1, // integers, bignums, floats
	100: 2, 115: 2, 118: 2, 119: 2, // atoms
	101: 3, 114: 3, 90: 3, // references
	112: 4, 113: 4, 117: 4, // funs
	102: 5, 89: 5, 120: 5, // ports
	103: 6, 88: 6, // pids
	104: 7, 105: 7, // tuples
	116: 8,           // maps
	106: 9,           // []
	107: 10, 108: 10, // lists
	109: 11, 77: 11, // binaries and bit strings
}

const (
	rankNumber = 1
	rankAtom   = 2
	rankTuple  = 7
	rankNil    = 9
	rankBits   = 11
)

var (
	bodyTrue  = []byte{119, 4, 't', 'r', 'u', 'e'}
	bodyFalse = []byte{119, 5, 'f', 'a', 'l', 's', 'e'}
)

// compileRaw prepares the raw filter of s, after Compile built its
// clauses. The filter is on only when every clause can reject something:
// a clause that matches any object makes it useless.
func (s *Spec) compileRaw() {
	if s.maxSlots > inlineSlots {
		return
	}
	raw := make([]rawClause, len(s.clauses))
	for i := range s.clauses {
		c := &s.clauses[i]
		rejects := encodeRawPattern(&c.head)
		for _, g := range c.guards {
			r := compileRawExpr(g)
			raw[i].guards = append(raw[i].guards, r)
			rejects = rejects || r.op != rxUnknown
		}
		if !rejects {
			return
		}
	}
	s.raw = raw
}

// encodeRawPattern stores the body encodings of p's constants for the raw
// filter and reports whether p can reject an object on its own.
func encodeRawPattern(p *pattern) bool {
	switch p.kind {
	case patAtom, patInt, patConst, patNil, patFloat:
		if enc, err := etf.Encode(p.lit); err == nil && len(enc) > 1 {
			p.enc = enc[1:]
		}
		return true
	case patSame, patRebind:
		return true
	case patTuple:
		for i := range p.elems {
			encodeRawPattern(&p.elems[i])
		}
		return true
	}
	return false
}

func compileRawExpr(x *expr) *rawExpr {
	switch x.op {
	case opConst:
		return &rawExpr{op: rxConst, c: constVal(x.c)}
	case opVar:
		return &rawExpr{op: rxVar, slot: x.slot}
	case opObject:
		return &rawExpr{op: rxObject}
	case opTuple: // {{C1, ..., Cn}} of constants is a constant
		tup := make(etf.Tuple, len(x.args))
		for i, a := range x.args {
			if a.op != opConst {
				return &rawExpr{}
			}
			tup[i] = a.c
		}
		return &rawExpr{op: rxConst, c: constVal(tup)}
	case opAndAlso, opOrElse:
		r := &rawExpr{op: rxAndAlso}
		if x.op == opOrElse {
			r.op = rxOrElse
		}
		for _, a := range x.args {
			r.args = append(r.args, compileRawExpr(a))
		}
		return r
	case opCall:
		return compileRawCall(x)
	}
	return &rawExpr{}
}

func compileRawCall(x *expr) *rawExpr {
	switch {
	case x.fn == fnBinaryPart2 && len(x.args) == 2:
		// binary_part(B, {S, L}) is binary_part(B, S, L) when the tuple is
		// written out or constant.
		var s, l *rawExpr
		switch t := x.args[1]; {
		case t.op == opTuple && len(t.args) == 2:
			s, l = compileRawExpr(t.args[0]), compileRawExpr(t.args[1])
		case t.op == opConst:
			tup, ok := t.c.(etf.Tuple)
			if !ok || len(tup) != 2 {
				return &rawExpr{}
			}
			s, l = &rawExpr{op: rxConst, c: constVal(tup[0])}, &rawExpr{op: rxConst, c: constVal(tup[1])}
		default:
			return &rawExpr{}
		}
		return &rawExpr{op: rxCall, fn: fnBinaryPart3, args: []*rawExpr{compileRawExpr(x.args[0]), s, l}}
	case isComparison(x.fn) && len(x.args) == 2:
		r := &rawExpr{op: rxCall, fn: x.fn, args: []*rawExpr{compileRawExpr(x.args[0]), compileRawExpr(x.args[1])}}
		if p := cmpPartOf(r); p != nil {
			return p
		}
		return r
	case
		x.fn == fnBinaryPart3 && len(x.args) == 3,
		x.fn == fnXor && len(x.args) == 2,
		rawUnary(x.fn) && len(x.args) == 1:
		r := &rawExpr{op: rxCall, fn: x.fn}
		for _, a := range x.args {
			r.args = append(r.args, compileRawExpr(a))
		}
		return r
	}
	return &rawExpr{}
}

// fnArity is the operand count of the functions rawResult applies.
func fnArity(f fn) int {
	switch {
	case f == fnXor, isComparison(f):
		return 2
	case f == fnBinaryPart3:
		return 3
	}
	return 1
}

// cmpPartOf returns the rxCmpPart form of a comparison r of a constant
// binary with binary_part/3 of a variable over a constant range (the
// commonest guard on a binary value), nil if r is another comparison.
func cmpPartOf(r *rawExpr) *rawExpr {
	part, c, swap := r.args[0], r.args[1], false
	if part.op == rxConst {
		part, c, swap = c, part, true
	}
	if c.op != rxConst || c.c.kind != rvBytes || part.op != rxCall || part.fn != fnBinaryPart3 {
		return nil
	}
	v, from, n := part.args[0], part.args[1], part.args[2]
	if v.op != rxVar || from.op != rxConst || from.c.kind != rvInt || n.op != rxConst || n.c.kind != rvInt {
		return nil
	}
	return &rawExpr{op: rxCmpPart, fn: r.fn, slot: v.slot, c: c.c, from: from.c.i, n: n.c.i, swap: swap}
}

// rawCmpPart evaluates an rxCmpPart as the general path would, without
// building its operands.
func rawCmpPart(x *rawExpr, enc []byte, spans []rawSpan, v *rawVal) {
	s := spans[x.slot]
	if s.start < 0 {
		*v = rawVal{}
		return
	}
	b := enc[s.start:s.end]
	if b[0] != 109 || len(b) < 5 || uint64(len(b)-5) != uint64(binary.BigEndian.Uint32(b[1:])) {
		// not a binary: binary_part raises, or (a bit string) unknown
		bin := bodyVal(b)
		*v = rawBinaryPart(&bin, &rawVal{kind: rvInt, i: x.from}, &rawVal{kind: rvInt, i: x.n})
		return
	}
	part, ok := sliceBinaryPart(b[5:], x.from, x.n)
	if !ok {
		*v = rawVal{kind: rvFail}
		return
	}
	c := bytes.Compare(part, x.c.bytes)
	if x.swap {
		c = -c
	}
	*v = rawVal{kind: rvBool, b: compareResult(x.fn, c)}
}

func rawUnary(f fn) bool {
	switch f {
	case fnByteSize, fnNot, fnIsAtom, fnIsBinary, fnIsFloat, fnIsInteger, fnIsList, fnIsNumber, fnIsTuple, fnIsMap:
		return true
	}
	return false
}

// constVal is a constant's raw value; rvUnknown for what cannot be
// encoded.
func constVal(t etf.Term) rawVal {
	switch v := t.(type) {
	case etf.Int:
		if v >= -1<<31 && v < 1<<31 {
			return rawVal{kind: rvInt, i: int64(v)}
		}
	case etf.Binary:
		return rawVal{kind: rvBytes, bytes: v}
	case etf.Atom:
		switch v {
		case etf.True:
			return rawVal{kind: rvBool, b: true}
		case etf.False:
			return rawVal{kind: rvBool}
		}
	}
	enc, err := etf.Encode(t)
	if err != nil || len(enc) < 2 {
		return rawVal{}
	}
	return bodyVal(enc[1:])
}

// setBody sets v to the value of an encoded term.
func setBody(v *rawVal, b []byte) { *v = bodyVal(b) }

// bodyVal classifies an encoded term.
func bodyVal(b []byte) rawVal {
	if len(b) == 0 {
		return rawVal{}
	}
	switch b[0] {
	case 97: // SMALL_INTEGER_EXT
		if len(b) == 2 {
			return rawVal{kind: rvInt, i: int64(b[1])}
		}
	case 98: // INTEGER_EXT
		if len(b) == 5 {
			return rawVal{kind: rvInt, i: int64(int32(binary.BigEndian.Uint32(b[1:])))}
		}
	case 109: // BINARY_EXT
		if len(b) >= 5 && uint64(len(b)-5) == uint64(binary.BigEndian.Uint32(b[1:])) {
			return rawVal{kind: rvBytes, bytes: b[5:]}
		}
	case 100, 115, 118, 119: // atoms: true and false are booleans
		if bytes.Equal(atomName(b), bodyTrue[2:]) {
			return rawVal{kind: rvBool, b: true}
		}
		if bytes.Equal(atomName(b), bodyFalse[2:]) {
			return rawVal{kind: rvBool}
		}
	}
	return rawVal{kind: rvBody, bytes: b}
}

// atomName is the text of an atom's body, nil if malformed.
func atomName(b []byte) []byte {
	switch b[0] {
	case 115, 119: // one length byte
		if len(b) >= 2 && len(b) == 2+int(b[1]) {
			return b[2:]
		}
	case 100, 118: // two length bytes
		if len(b) >= 3 && len(b) == 3+int(binary.BigEndian.Uint16(b[1:])) {
			return b[3:]
		}
	}
	return nil
}

// rank is v's term-order type rank, 0 if unknown.
func (v *rawVal) rank() uint8 {
	switch v.kind {
	case rvInt:
		return rankNumber
	case rvBool:
		return rankAtom
	case rvBytes:
		return rankBits
	case rvBody:
		return tagRank[v.bytes[0]]
	}
	return 0
}

// body is v's encoding, for CompareBodies (rvBody and rvBool only).
func (v *rawVal) body() []byte {
	if v.kind == rvBool {
		if v.b {
			return bodyTrue
		}
		return bodyFalse
	}
	return v.bytes
}

// RejectsRaw reports whether Run certainly returns no result for the
// object that enc encodes (term_to_binary bytes, version byte first). A
// false answer means only "maybe": decode and Run. It allocates nothing.
// A spec for which it can never say yes (a clause that matches every
// object) answers false at once; FiltersRaw tells which.
func (s *Spec) RejectsRaw(enc []byte) bool {
	if s == nil || s.raw == nil || len(enc) < 2 || enc[0] != 131 || enc[1] == 80 {
		return false
	}
	var inline [inlineSlots]rawSpan
	for i := range s.clauses {
		c := &s.clauses[i]
		spans := inline[:c.slots]
		for j := range spans {
			spans[j] = rawSpan{-1, -1}
		}
		if !rawHeadRejects(&c.head, enc, 1, len(enc), spans) && !rawGuardsReject(s.raw[i].guards, enc, spans) {
			return false
		}
	}
	return true
}

// FiltersRaw reports whether RejectsRaw can reject anything for s: every
// clause has a head or a guard the raw filter reads. A table scans raw
// only then.
func (s *Spec) FiltersRaw() bool { return s != nil && s.raw != nil }

// rawHeadRejects reports whether p certainly does not match the term in
// b[start:end], binding the spans of the variables it walks to.
func rawHeadRejects(p *pattern, b []byte, start, end int, spans []rawSpan) bool {
	body := b[start:end]
	switch p.kind {
	case patBind:
		spans[p.slot] = rawSpan{start, end}
	case patSame, patRebind:
		if s := spans[p.slot]; s.start >= 0 {
			return rawDiffer(b[s.start:s.end], body)
		}
	case patAtom, patInt, patConst, patNil:
		if p.enc != nil {
			return rawDiffer(p.enc, body)
		}
	case patFloat:
		switch {
		case body[0] == 70 && len(body) == 9:
			return binary.BigEndian.Uint64(body[1:]) != p.f
		case tagRank[body[0]] != 0 && tagRank[body[0]] != rankNumber:
			return true
		}
	case patTuple:
		var n uint64
		var pos int
		switch {
		case body[0] == 104 && len(body) >= 2:
			n, pos = uint64(body[1]), start+2
		case body[0] == 105 && len(body) >= 5:
			n, pos = uint64(binary.BigEndian.Uint32(body[1:])), start+5
		default:
			return tagRank[body[0]] != 0 // a known tag, not a tuple's
		}
		if n != uint64(len(p.elems)) {
			return true
		}
		for i := range p.elems {
			e, ok := bodyEnd(b[:end], pos)
			if !ok {
				return false
			}
			if rawHeadRejects(&p.elems[i], b, pos, e, spans) {
				return true
			}
			pos = e
		}
	}
	return false
}

// rawDiffer reports whether two bodies certainly encode terms that are
// not =:=: of different types, or ordered apart by CompareBodies.
func rawDiffer(a, b []byte) bool {
	if ra, rb := tagRank[a[0]], tagRank[b[0]]; ra != 0 && rb != 0 && ra != rb {
		return true
	}
	c, ok := raw.CompareBodies(a, b)
	return ok && c != 0
}

// bodyEnd is the end of the term at b[pos]: worked out here for the
// flat encodings a table object holds, else by etf's validating walk.
func bodyEnd(b []byte, pos int) (int, bool) {
	if pos >= len(b) {
		return 0, false
	}
	n := 0
	switch rest := b[pos:]; rest[0] {
	case 97: // SMALL_INTEGER_EXT
		n = 2
	case 98: // INTEGER_EXT
		n = 5
	case 106: // []
		n = 1
	case 70: // NEW_FLOAT_EXT
		n = 9
	case 109: // BINARY_EXT
		if len(rest) >= 5 {
			n = 5 + int(binary.BigEndian.Uint32(rest[1:]))
		}
	case 119: // SMALL_ATOM_UTF8_EXT
		if len(rest) >= 2 {
			n = 2 + int(rest[1])
		}
	case 118: // ATOM_UTF8_EXT
		if len(rest) >= 3 {
			n = 3 + int(binary.BigEndian.Uint16(rest[1:]))
		}
	}
	if n > 0 && n <= len(b)-pos {
		return pos + n, true
	}
	return raw.BodyEnd(b, pos)
}

// raw is etf's byte-level toolbox.
var raw etf.Raw

// rawGuardsReject reports whether some guard is certainly not true.
func rawGuardsReject(guards []*rawExpr, enc []byte, spans []rawSpan) bool {
	for _, g := range guards {
		if g.op == rxUnknown {
			continue
		}
		var v rawVal
		rawEval(g, enc, spans, &v)
		if v.kind != rvUnknown && (v.kind != rvBool || !v.b) {
			return true
		}
	}
	return false
}

// rawEval evaluates x into v (an out parameter: the values are copied
// no further than the caller's array).
func rawEval(x *rawExpr, enc []byte, spans []rawSpan, v *rawVal) {
	switch x.op {
	case rxConst:
		*v = x.c
		return
	case rxVar:
		if s := spans[x.slot]; s.start >= 0 {
			setBody(v, enc[s.start:s.end])
			return
		}
	case rxObject:
		setBody(v, enc[1:])
		return
	case rxAndAlso, rxOrElse:
		decide := x.op == rxOrElse
		last := len(x.args) - 1
		for i, a := range x.args {
			rawEval(a, enc, spans, v)
			if i == last || v.kind == rvFail || v.kind == rvUnknown {
				return
			}
			if v.kind != rvBool {
				*v = rawVal{kind: rvFail}
				return
			}
			if v.b == decide {
				return
			}
		}
	case rxCall:
		rawCall(x, enc, spans, v)
		return
	case rxCmpPart:
		rawCmpPart(x, enc, spans, v)
		return
	}
	*v = rawVal{}
}

func rawCall(x *rawExpr, enc []byte, spans []rawSpan, v *rawVal) {
	var a [3]rawVal
	if len(x.args) > len(a) {
		*v = rawVal{}
		return
	}
	for i, arg := range x.args {
		rawEval(arg, enc, spans, &a[i])
		if a[i].kind == rvFail {
			*v = a[i]
			return
		}
	}
	for i := range x.args {
		if a[i].kind == rvUnknown {
			*v = rawVal{}
			return
		}
	}
	*v = rawResult(x.fn, &a)
}

// rawResult applies f to evaluated operands, none failed or unknown.
func rawResult(f fn, a *[3]rawVal) rawVal {
	switch {
	case isComparison(f):
		c, exactOnly, ok := rawCompare(&a[0], &a[1])
		if !ok || (exactOnly && f != fnExactEq && f != fnExactNe) {
			return rawVal{}
		}
		return rawVal{kind: rvBool, b: compareResult(f, c)}
	case f == fnBinaryPart3:
		return rawBinaryPart(&a[0], &a[1], &a[2])
	case f == fnByteSize:
		switch r := a[0].rank(); {
		case a[0].kind == rvBytes:
			return rawVal{kind: rvInt, i: int64(len(a[0].bytes))}
		case r == 0 || r == rankBits:
			return rawVal{}
		}
		return rawVal{kind: rvFail}
	case f == fnNot, f == fnXor:
		for i := range fnArity(f) {
			if a[i].kind != rvBool {
				return rawVal{kind: rvFail}
			}
		}
		if f == fnNot {
			return rawVal{kind: rvBool, b: !a[0].b}
		}
		return rawVal{kind: rvBool, b: a[0].b != a[1].b}
	}
	return rawTypeTest(f, &a[0])
}

// rawTypeTest answers is_atom/1 and the other type tests from a tag.
func rawTypeTest(f fn, v *rawVal) rawVal {
	r := v.rank()
	if r == 0 {
		return rawVal{}
	}
	var tag byte
	if v.kind == rvBody {
		tag = v.bytes[0]
	}
	var yes bool
	switch f {
	case fnIsAtom:
		yes = r == rankAtom
	case fnIsNumber:
		yes = r == rankNumber
	case fnIsInteger:
		yes = v.kind == rvInt || tag == 110 || tag == 111
	case fnIsFloat:
		yes = tag == 70 || tag == 99
	case fnIsTuple:
		yes = r == rankTuple
	case fnIsList:
		yes = r == rankNil || r == 10
	case fnIsMap:
		yes = r == 8
	case fnIsBinary:
		if tag == 77 {
			return rawVal{} // a bit string may or may not be whole bytes
		}
		yes = v.kind == rvBytes
	default:
		return rawVal{}
	}
	return rawVal{kind: rvBool, b: yes}
}

// rawCompare orders a and b as term order does. exactOnly says that the
// order is that of =:= but may differ from == (tuples, which may hold
// numbers of both kinds); ok is false when the bytes cannot tell.
func rawCompare(a, b *rawVal) (c int, exactOnly, ok bool) {
	ra, rb := a.rank(), b.rank()
	if ra == 0 || rb == 0 {
		return 0, false, false
	}
	if ra != rb {
		return cmp.Compare(ra, rb), false, true
	}
	switch {
	case a.kind == rvInt && b.kind == rvInt:
		return cmp.Compare(a.i, b.i), false, true
	case a.kind == rvBytes && b.kind == rvBytes:
		return bytes.Compare(a.bytes, b.bytes), false, true
	case a.kind == rvInt || b.kind == rvInt || a.kind == rvBytes || b.kind == rvBytes:
		return 0, false, false // an integer with a bignum or float, a binary with a bit string
	}
	switch ra {
	case rankAtom, rankNil:
		c, ok := raw.CompareBodies(a.body(), b.body())
		return c, false, ok
	case rankTuple:
		c, ok := raw.CompareBodies(a.body(), b.body())
		return c, true, ok
	}
	return 0, false, false
}

// rawBinaryPart is binary_part/3 on raw operands, with the range rules of
// binaryPartOf.
func rawBinaryPart(bin, start, length *rawVal) rawVal {
	if bin.kind != rvBytes {
		if r := bin.rank(); r == 0 || r == rankBits {
			return rawVal{}
		}
		return rawVal{kind: rvFail}
	}
	for _, n := range [2]*rawVal{start, length} {
		if n.kind != rvInt {
			if r := n.rank(); r == 0 || r == rankNumber {
				return rawVal{} // a bignum or a float: leave it to the decoder
			}
			return rawVal{kind: rvFail}
		}
	}
	part, ok := sliceBinaryPart(bin.bytes, start.i, length.i)
	if !ok {
		return rawVal{kind: rvFail}
	}
	return rawVal{kind: rvBytes, bytes: part}
}
