package msgen

import (
	"math"

	"github.com/godets/godets/etf"
)

func call(name string, args ...etf.Term) etf.Tuple {
	return append(etf.Tuple{etf.Atom(name)}, args...)
}

// kind is the type an expression is generated to have. Typed expressions
// keep most calls from raising, so that results, not only 'EXIT', are
// compared; a share of untyped ones still raise on purpose.
type kind uint8

const (
	kAny kind = iota
	kInt
	kFloat
	kNum
	kTuple
	kList
	kBin
	kMap
	kBool
)

func kindOf(t etf.Term) kind {
	switch v := t.(type) {
	case etf.Int, *etf.BigInt:
		return kInt
	case etf.Float:
		return kFloat
	case etf.Tuple:
		return kTuple
	case etf.List, *etf.ImproperList:
		return kList
	case etf.Binary, etf.Bitstring:
		return kBin
	case etf.Map:
		return kMap
	case etf.Atom:
		if v == etf.True || v == etf.False {
			return kBool
		}
	}
	return kAny
}

func fits(have, want kind) bool {
	return want == kAny || have == want || (want == kNum && (have == kInt || have == kFloat))
}

// typedVar returns a bound variable whose sample value has kind k.
func (g *Gen) typedVar(s *scope, k kind) (etf.Atom, bool) {
	var c []etf.Atom
	for _, v := range s.bound {
		if val, ok := s.vals[v]; ok && fits(kindOf(val), k) {
			c = append(c, v)
		}
	}
	if len(c) == 0 {
		return "", false
	}
	return c[g.r.IntN(len(c))], true
}

// constant returns a literal of kind k, written so that it is not read
// as an expression ({const, T} for tuples; lists and maps of scalars).
func (g *Gen) constant(k kind) etf.Term {
	switch k {
	case kInt:
		if g.r.IntN(4) == 0 {
			return g.bignum()
		}
		return etf.Int(g.r.IntN(21) - 7)
	case kFloat:
		return g.float()
	case kNum:
		if g.r.IntN(2) == 0 {
			return g.constant(kInt)
		}
		return g.float()
	case kTuple:
		return call("const", g.Term(2))
	case kList:
		return call("const", etf.List{g.scalar(), g.scalar()})
	case kBin:
		if g.r.IntN(4) == 0 {
			return etf.Bitstring{Bytes: []byte{'a', 'b', 0xa0}, Bits: 3}
		}
		return etf.Binary("abcdef"[:g.r.IntN(7)])
	case kMap:
		return call("const", g.mapTerm(2, 2))
	case kBool:
		return etf.Bool(g.r.IntN(2) == 0)
	}
	return g.scalar()
}

// leaf returns a variable, '$_', '$$' or a constant of kind k.
func (g *Gen) leaf(s *scope, k kind) etf.Term {
	if g.r.IntN(3) > 0 {
		if v, ok := g.typedVar(s, k); ok {
			return v
		}
	}
	switch {
	case k == kTuple && g.r.IntN(2) == 0, k == kAny && g.r.IntN(8) == 0:
		return etf.Atom("$_")
	case k == kList && g.r.IntN(2) == 0, k == kAny && g.r.IntN(8) == 0:
		return etf.Atom("$$")
	}
	return g.constant(k)
}

var (
	intOps    = []string{"+", "-", "*", "div", "rem", "band", "bor", "bxor", "bsl", "bsr"}
	numOps    = []string{"+", "-", "*", "/"}
	compares  = []string{">", ">=", "<", "=<", "=:=", "==", "=/=", "/="}
	typeTests = []string{"is_atom", "is_float", "is_integer", "is_list", "is_number", "is_pid", "is_port", "is_reference", "is_tuple", "is_map", "is_binary", "is_function"}
	anyUnary  = []string{"abs", "hd", "tl", "length", "map_size", "round", "trunc", "float", "size", "bit_size", "byte_size", "bnot", "-", "+", "not"}
	logical   = []string{"and", "or", "andalso", "orelse"}
)

// result returns a clause's last body expression: what select returns.
func (g *Gen) result(s *scope) etf.Term {
	switch g.r.IntN(14) {
	case 10, 11:
		return g.typed(s, []kind{kInt, kFloat, kNum}[g.r.IntN(3)], 3)
	case 12:
		return g.elementOf(s, 2)
	case 13:
		return g.guard(s, 3)
	case 0:
		return etf.Atom("$_")
	case 1, 2:
		return etf.Atom("$$")
	case 3:
		if len(s.bound) > 0 {
			return s.bound[g.r.IntN(len(s.bound))]
		}
	}
	return g.expr(s, 3)
}

// expr returns a guard or body expression: typed most of the time.
func (g *Gen) expr(s *scope, depth int) etf.Term {
	if g.r.IntN(5) == 0 {
		return g.untyped(s, depth)
	}
	return g.typed(s, kind(g.r.IntN(int(kBool)+1)), depth)
}

// typed returns an expression that evaluates to kind k when its parts
// do (they still raise sometimes: div by zero, bad indexes, overflow).
func (g *Gen) typed(s *scope, k kind, depth int) etf.Term {
	if depth <= 0 || g.r.IntN(10) < 3 {
		return g.leaf(s, k)
	}
	d := depth - 1
	switch k {
	case kInt:
		switch g.r.IntN(9) {
		case 0, 1, 2:
			op := intOps[g.r.IntN(len(intOps))]
			b := g.typed(s, kInt, d)
			if op == "bsl" || op == "bsr" {
				b = etf.Int(g.r.IntN(150) - 30)
			}
			return call(op, g.typed(s, kInt, d), b)
		case 3:
			return call([]string{"abs", "-", "+", "bnot"}[g.r.IntN(4)], g.typed(s, kInt, d))
		case 4:
			return call([]string{"round", "trunc"}[g.r.IntN(2)], g.typed(s, kNum, d))
		case 5:
			return call([]string{"size", "byte_size", "bit_size"}[g.r.IntN(3)], g.typed(s, kBin, d))
		case 6:
			return call("size", g.typed(s, kTuple, d))
		case 7:
			return call("length", g.typed(s, kList, d))
		}
		return call("map_size", g.typed(s, kMap, d))
	case kFloat:
		switch g.r.IntN(3) {
		case 0:
			return call("float", g.typed(s, kNum, d))
		case 1:
			return call("/", g.typed(s, kNum, d), g.typed(s, kNum, d))
		}
		return call(numOps[g.r.IntN(3)], g.typed(s, kFloat, d), g.typed(s, kNum, d))
	case kNum:
		if g.r.IntN(3) == 0 {
			return call("abs", g.typed(s, kNum, d))
		}
		return call(numOps[g.r.IntN(len(numOps))], g.typed(s, kNum, d), g.typed(s, kNum, d))
	case kTuple:
		n := g.r.IntN(4)
		t := make(etf.Tuple, n)
		for i := range t {
			t[i] = g.expr(s, d)
		}
		return etf.Tuple{t}
	case kList:
		switch g.r.IntN(3) {
		case 0:
			return call("tl", g.typed(s, kList, d))
		case 1:
			n := g.r.IntN(4)
			l := make(etf.List, n)
			for i := range l {
				l[i] = g.expr(s, d)
			}
			if n > 0 && g.r.IntN(4) == 0 {
				return etf.NewImproperList(g.expr(s, d), l...)
			}
			return l
		}
		return g.leaf(s, kList)
	case kBin:
		if g.r.IntN(3) == 0 {
			return call("binary_part", g.typed(s, kBin, d), etf.Tuple{etf.Tuple{g.smallInt(), g.smallInt()}})
		}
		return call("binary_part", g.typed(s, kBin, d), g.smallInt(), g.smallInt())
	case kMap:
		m := etf.Map{}
		for range g.r.IntN(3) {
			// Keys are never calls: two keys that both raise are two
			// 'EXIT' keys, on which OTP 25.2's VM crashes (segfault or
			// "size_object: bad tag" later).
			key := g.leaf(s, kAny)
			if _, dup := m.Get(key); !dup {
				m = append(m, etf.Pair{Key: key, Value: g.expr(s, d)})
			}
		}
		return m
	case kBool:
		return g.guard(s, depth)
	}
	return g.untyped(s, depth)
}

// elementOf returns element/2 or map_get/2 on a tuple or map variable,
// with an index or key that is usually present.
func (g *Gen) elementOf(s *scope, d int) etf.Term {
	if v, ok := g.typedVar(s, kTuple); ok && g.r.IntN(2) == 0 {
		n := len(s.vals[v].(etf.Tuple))
		return call("element", etf.Int(g.r.IntN(n+2)), v)
	}
	if v, ok := g.typedVar(s, kMap); ok && g.r.IntN(2) == 0 {
		m := s.vals[v].(etf.Map)
		var key etf.Term = g.scalar()
		if len(m) > 0 && g.r.IntN(4) > 0 {
			key = m[g.r.IntN(len(m))].Key
		}
		if _, isAtom := key.(etf.Atom); isAtom || kindOf(key) == kTuple {
			key = call("const", key) // a literal, not a variable or call
		}
		return call([]string{"map_get", "is_map_key"}[g.r.IntN(2)], key, v)
	}
	if g.r.IntN(3) == 0 {
		m := g.mapTerm(2, 3)
		var key etf.Term = g.scalar()
		if len(m) > 0 && g.r.IntN(4) > 0 {
			key = m[g.r.IntN(len(m))].Key
		}
		return call([]string{"map_get", "is_map_key"}[g.r.IntN(2)], call("const", key), call("const", m))
	}
	if tup, ok := s.sample.(etf.Tuple); ok {
		return call("element", etf.Int(g.r.IntN(len(tup)+1)), etf.Atom("$_"))
	}
	return call("element", g.smallInt(), g.typed(s, kTuple, d))
}

// smallInt is a count or index: mostly in range, sometimes not.
func (g *Gen) smallInt() etf.Term { return etf.Int(g.r.IntN(8) - 2) }

// untyped returns any call over any arguments: these raise often.
func (g *Gen) untyped(s *scope, depth int) etf.Term {
	if depth <= 0 {
		return g.leaf(s, kAny)
	}
	d := depth - 1
	switch g.r.IntN(8) {
	case 0, 1:
		return call(anyUnary[g.r.IntN(len(anyUnary))], g.expr(s, d))
	case 2:
		return call(intOps[g.r.IntN(len(intOps))], g.expr(s, d), g.expr(s, d))
	case 3, 4:
		return g.elementOf(s, d)
	case 5:
		name := etf.Atom("_")
		if tup, ok := s.sample.(etf.Tuple); ok && len(tup) > 0 && g.r.IntN(2) == 0 {
			if a, isAtom := tup[0].(etf.Atom); isAtom {
				name = a
			}
		} else if g.r.IntN(3) > 0 {
			name = atoms[g.r.IntN(len(atoms))]
		}
		var size etf.Term = etf.Int(g.r.IntN(5))
		if g.r.IntN(8) == 0 {
			size = etf.Float(2)
		}
		return call("is_record", g.expr(s, d), name, size)
	case 6:
		return call("binary_part", g.expr(s, d), g.expr(s, d), g.expr(s, d))
	}
	return g.leaf(s, kAny)
}

// guard returns an expression that is usually boolean.
func (g *Gen) guard(s *scope, depth int) etf.Term {
	if depth <= 0 {
		return call(typeTests[g.r.IntN(len(typeTests))], g.leaf(s, kAny))
	}
	d := depth - 1
	switch g.r.IntN(10) {
	case 0, 1, 2:
		k := kind(g.r.IntN(int(kBool) + 1))
		return call(compares[g.r.IntN(len(compares))], g.typed(s, k, d), g.typed(s, k, d))
	case 3:
		return call(compares[g.r.IntN(len(compares))], g.expr(s, d), g.expr(s, d))
	case 4:
		return call(typeTests[g.r.IntN(len(typeTests))], g.expr(s, d))
	case 5:
		return call("not", g.guard(s, d))
	case 6, 7:
		op := logical[g.r.IntN(len(logical))]
		args := make([]etf.Term, 1+g.r.IntN(3))
		for i := range args {
			args[i] = g.guard(s, d)
		}
		return call(op, args...)
	case 8:
		return call("xor", g.guard(s, d), g.guard(s, d))
	case 9:
		if v, ok := g.typedVar(s, kNum); ok {
			// against the value's twin: == holds, =:= does not
			twin := s.vals[v]
			if f, isFloat := twin.(etf.Float); isFloat {
				twin = g.floatTwin(f)
			} else if n, isInt := twin.(etf.Int); isInt {
				twin = etf.Float(float64(n))
			}
			return call(compares[g.r.IntN(len(compares))], v, twin)
		}
	}
	if g.r.IntN(2) == 0 {
		return etf.True
	}
	return g.expr(s, d) // anything: not true fails the clause
}

// floatTwin returns a term close to f that a head must tell apart: the
// other zero, or the integer of the same value.
func (g *Gen) floatTwin(f etf.Float) etf.Term {
	switch {
	case f == 0:
		return etf.Float(math.Copysign(0, -math.Copysign(1, float64(f))))
	case float64(f) == math.Trunc(float64(f)) && math.Abs(float64(f)) < 1e15:
		return etf.Int(int64(f))
	}
	return f
}

// Invalid returns a copy of ms broken in one of the ways OTP refuses
// (some mutations may by chance leave it valid; a differential test
// compares both sides anyway).
func (g *Gen) Invalid(ms etf.List) etf.Term {
	out := append(etf.List(nil), ms...)
	i := g.r.IntN(len(out))
	c, _ := out[i].(etf.Tuple)
	if len(c) != 3 {
		return etf.Atom("not_a_spec")
	}
	c = append(etf.Tuple(nil), c...)
	badExprs := []etf.Term{
		etf.Atom("$99"),
		etf.Tuple{},
		etf.Tuple{etf.Int(1), etf.Int(2)},
		call("is_boolean", etf.True),
		call("tuple_size", etf.Atom("$_")),
		call("foo"),
		call("const"),
		call("xor", etf.True, etf.True, etf.True),
		call("andalso"),
		call("message", etf.Atom("$_")),
		call("element", etf.Int(1)),
	}
	switch g.r.IntN(9) {
	case 0:
		out[i] = etf.Tuple{c[0], c[1]}
		return out
	case 1:
		c[2] = etf.List{}
	case 2:
		c[1] = etf.Atom("no_guards")
	case 3:
		c[0] = etf.Map{{Key: etf.Atom("$1"), Value: etf.Atom("_")}}
	case 4:
		return etf.NewImproperList(etf.Atom("tail"), out...)
	case 5:
		return etf.List{}
	case 6:
		c[1] = append(etf.List{badExprs[g.r.IntN(len(badExprs))]}, c[1].(etf.List)...)
	default:
		body, _ := c[2].(etf.List)
		c[2] = append(append(etf.List(nil), body...), call("+", badExprs[g.r.IntN(len(badExprs))], etf.Int(1)))
	}
	out[i] = c
	return out
}
