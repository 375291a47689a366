package matchspec

import (
	"bytes"

	"github.com/godets/godets/etf"
)

// A comparison with a binary_part/2,3 on one side, as in a guard on a byte
// of a binary value, is evaluated without boxing the part as a term, so a
// scan that rejects an object on it allocates nothing.

func isComparison(f fn) bool { return f >= fnGt && f <= fnNe }

func isBinaryPart(x *expr) bool {
	return x.op == opCall && (x.fn == fnBinaryPart3 || x.fn == fnBinaryPart2)
}

// side is one evaluated operand: bytes of a binary_part, or a term.
type side struct {
	b       []byte
	t       etf.Term
	isBytes bool
}

func compareBinaryPart(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	var s [2]side
	for i, a := range x.args {
		if isBinaryPart(a) {
			b, ok := binaryPartBytes(a, obj, vars, catch)
			if ok {
				s[i].b, s[i].isBytes = b, true
				continue
			}
			if !catch {
				return nil, false
			}
			s[i].t = termExit
			continue
		}
		v, ok := eval(a, obj, vars, catch)
		if !ok {
			return nil, false
		}
		s[i].t = v
	}
	var c int
	switch {
	case s[0].isBytes && s[1].isBytes:
		c = bytes.Compare(s[0].b, s[1].b)
	case s[0].isBytes:
		c = compareBytesTerm(s[0].b, s[1].t)
	case s[1].isBytes:
		c = -compareBytesTerm(s[1].b, s[0].t)
	default: // both raised in a body: 'EXIT' and 'EXIT'
		c = etf.Compare(s[0].t, s[1].t)
	}
	return boolTerm(compareResult(x.fn, c)), true
}

func compareBytesTerm(b []byte, t etf.Term) int {
	if tb, ok := t.(etf.Binary); ok {
		return bytes.Compare(b, tb)
	}
	return etf.Compare(etf.Binary(b), t)
}

// compareResult applies a comparison to an order. On two binaries ==
// and =:= agree.
func compareResult(f fn, c int) bool {
	switch f {
	case fnGt:
		return c > 0
	case fnGe:
		return c >= 0
	case fnLt:
		return c < 0
	case fnLe:
		return c <= 0
	case fnEq, fnExactEq:
		return c == 0
	}
	return c != 0
}

// binaryPartBytes evaluates binary_part/2,3 to its bytes.
func binaryPartBytes(x *expr, obj etf.Term, vars []etf.Term, catch bool) ([]byte, bool) {
	var a [3]etf.Term
	for i, arg := range x.args {
		v, ok := eval(arg, obj, vars, catch)
		if !ok {
			return nil, false
		}
		a[i] = v
	}
	if x.fn == fnBinaryPart2 {
		t, ok := a[1].(etf.Tuple)
		if !ok || len(t) != 2 {
			return nil, false
		}
		a[1], a[2] = t[0], t[1]
	}
	return binaryPartOf(a[0], a[1], a[2])
}
