package matchspec

import (
	"slices"

	"github.com/godets/godets/etf"
)

// opcode says what kind of guard or body expression a node is.
type opcode uint8

const (
	opConst   opcode = iota + 1 // a literal
	opVar                       // a head variable
	opObject                    // '$_'
	opAll                       // '$$'
	opTuple                     // {{E1, ..., En}}
	opList                      // [E1, ..., En | Tail]
	opMap                       // #{K1 => V1, ...}: args holds keys, then values
	opCall                      // {Function, Args...}
	opAndAlso                   // short-circuit, n-ary
	opOrElse
)

// expr is one compiled guard or body expression.
type expr struct {
	op    opcode
	fn    fn
	slot  int
	c     etf.Term
	args  []*expr
	tail  *expr // opList: the tail; nil means []
	order []int // opAll: the clause's slots in variable number order
}

// An evaluation sees the object and the clause's bindings (vars). They
// are separate parameters rather than one struct so that escape analysis
// keeps Run's binding array on the stack.

// body evaluates x as a body expression: a call that raises is 'EXIT' in
// its place, and evaluation goes on, as ets and dets do.
func body(x *expr, obj etf.Term, vars []etf.Term) etf.Term {
	v, ok := eval(x, obj, vars, true)
	if !ok {
		return termExit
	}
	return v
}

// eval evaluates x. With catch set, a failing call yields 'EXIT' instead of
// failing, so ok is false only without catch.
func eval(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	switch x.op {
	case opConst:
		return x.c, true
	case opVar:
		return vars[x.slot], true
	case opObject:
		return obj, true
	case opAll:
		l := make(etf.List, len(x.order))
		for i, s := range x.order {
			l[i] = vars[s]
		}
		return l, true
	case opTuple:
		t := make(etf.Tuple, len(x.args))
		for i, a := range x.args {
			v, ok := eval(a, obj, vars, catch)
			if !ok {
				return nil, false
			}
			t[i] = v
		}
		return t, true
	case opList:
		return list(x, obj, vars, catch)
	case opMap:
		return mapExpr(x, obj, vars, catch)
	case opAndAlso, opOrElse:
		v, ok := shortCircuit(x, obj, vars, catch)
		if !ok && catch {
			return termExit, true
		}
		return v, ok
	case opCall:
		v, ok := call(x, obj, vars, catch)
		if !ok && catch {
			return termExit, true
		}
		return v, ok
	}
	return nil, false
}

func list(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	elems := make([]etf.Term, len(x.args))
	for i, a := range x.args {
		v, ok := eval(a, obj, vars, catch)
		if !ok {
			return nil, false
		}
		elems[i] = v
	}
	if x.tail == nil {
		return etf.List(elems), true
	}
	tail, ok := eval(x.tail, obj, vars, catch)
	if !ok {
		return nil, false
	}
	return etf.NewImproperList(tail, elems...), true
}

func mapExpr(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	n := len(x.args) / 2
	m := make(etf.Map, 0, n)
	for i := 0; i < n; i++ {
		k, ok := eval(x.args[i], obj, vars, catch)
		if !ok {
			return nil, false
		}
		v, ok := eval(x.args[n+i], obj, vars, catch)
		if !ok {
			return nil, false
		}
		m = append(m, etf.Pair{Key: k, Value: v})
	}
	return dedupeKeys(m), true
}

// dedupeKeys keeps, of pairs whose keys are =:=, the one listed last (the
// pairs are in OTP's construction order), in O(n log n) for large maps.
// The later pair wins whole, key as well as value: in OTP 25 0.0 =:= -0.0,
// and #{0.0 => a, '$1' => b} with '$1' bound to -0.0 gives #{-0.0 => b}.
func dedupeKeys(m etf.Map) etf.Map {
	if len(m) <= 8 {
		out := m[:0]
		for _, p := range m {
			dup := false
			for j := range out {
				if etf.Equal(out[j].Key, p.Key) {
					out[j], dup = p, true
					break
				}
			}
			if !dup {
				out = append(out, p)
			}
		}
		return out
	}
	slices.SortStableFunc(m, func(a, b etf.Pair) int { return etf.CompareExact(a.Key, b.Key) })
	out := m[:0]
	for i, p := range m {
		if i+1 < len(m) && etf.Equal(m[i+1].Key, p.Key) {
			continue // a later pair with this key wins
		}
		out = append(out, p)
	}
	return out
}

// shortCircuit evaluates andalso/orelse over any number of arguments:
// every argument but the last must be a boolean; the last is returned as
// it is when the others did not decide.
func shortCircuit(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	decide := etf.False
	if x.op == opOrElse {
		decide = etf.True
	}
	last := len(x.args) - 1
	for i, a := range x.args {
		v, ok := eval(a, obj, vars, catch)
		if !ok {
			return nil, false
		}
		if i == last {
			return v, true
		}
		b, isBool := boolOf(v)
		if !isBool {
			return nil, false
		}
		if etf.Bool(b) == decide {
			return v, true
		}
	}
	return nil, false
}

func boolOf(t etf.Term) (bool, bool) {
	a, ok := t.(etf.Atom)
	if !ok {
		return false, false
	}
	switch a {
	case etf.True:
		return true, true
	case etf.False:
		return false, true
	}
	return false, false
}

func boolTerm(b bool) etf.Term {
	if b {
		return termTrue
	}
	return termFalse
}

// call evaluates the arguments and applies the function.
func call(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	if x.fn == fnAnd || x.fn == fnOr {
		return andOr(x, obj, vars, catch)
	}
	if isComparison(x.fn) && (isBinaryPart(x.args[0]) || isBinaryPart(x.args[1])) {
		return compareBinaryPart(x, obj, vars, catch)
	}
	var a [3]etf.Term
	for i, arg := range x.args {
		v, ok := eval(arg, obj, vars, catch)
		if !ok {
			return nil, false
		}
		a[i] = v
	}
	return apply(x.fn, a[0], a[1], a[2])
}

// andOr is the strict 'and'/'or': every argument must be a boolean.
func andOr(x *expr, obj etf.Term, vars []etf.Term, catch bool) (etf.Term, bool) {
	acc := x.fn == fnAnd
	for _, arg := range x.args {
		v, ok := eval(arg, obj, vars, catch)
		if !ok {
			return nil, false
		}
		b, isBool := boolOf(v)
		if !isBool {
			return nil, false
		}
		if x.fn == fnAnd {
			acc = acc && b
		} else {
			acc = acc || b
		}
	}
	return boolTerm(acc), true
}
