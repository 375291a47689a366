package msgen

import (
	"github.com/godets/godets/etf"
)

func call(name string, args ...etf.Term) etf.Tuple {
	return append(etf.Tuple{etf.Atom(name)}, args...)
}

// leaf returns a variable, '$_', '$$' or a constant.
func (g *Gen) leaf(s *scope) etf.Term {
	switch g.r.IntN(8) {
	case 0, 1, 2:
		if len(s.bound) > 0 {
			return s.bound[g.r.IntN(len(s.bound))]
		}
	case 3:
		return etf.Atom("$_")
	case 4:
		if g.r.IntN(2) == 0 {
			return etf.Atom("$$")
		}
	case 5:
		return call("const", g.Term(2))
	}
	return g.scalar()
}

var (
	unary      = []string{"abs", "hd", "tl", "length", "map_size", "round", "trunc", "float", "size", "bit_size", "byte_size", "bnot", "-", "+", "not"}
	binaryOps  = []string{"+", "-", "*", "/", "div", "rem", "band", "bor", "bxor", "bsl", "bsr", "xor"}
	compares   = []string{">", ">=", "<", "=<", "=:=", "==", "=/=", "/="}
	typeTests  = []string{"is_atom", "is_float", "is_integer", "is_list", "is_number", "is_pid", "is_port", "is_reference", "is_tuple", "is_map", "is_binary", "is_function"}
	logicalOps = []string{"and", "or", "andalso", "orelse"}
)

// smallInt is a count or index: mostly in range, sometimes not.
func (g *Gen) smallInt() etf.Term { return etf.Int(g.r.IntN(8) - 2) }

// expr returns a guard or body expression over the scope's variables.
func (g *Gen) expr(s *scope, depth int) etf.Term {
	if depth <= 0 || g.r.IntN(10) < 3 {
		return g.leaf(s)
	}
	d := depth - 1
	switch g.r.IntN(14) {
	case 0:
		return call(unary[g.r.IntN(len(unary))], g.expr(s, d))
	case 1, 2:
		op := binaryOps[g.r.IntN(len(binaryOps))]
		b := g.expr(s, d)
		if (op == "bsl" || op == "bsr") && g.r.IntN(2) == 0 {
			b = etf.Int(g.r.IntN(140) - 20)
		}
		return call(op, g.expr(s, d), b)
	case 3:
		idx := g.smallInt()
		if g.r.IntN(4) == 0 {
			idx = g.expr(s, d)
		}
		return call("element", idx, g.expr(s, d))
	case 4:
		if g.r.IntN(3) == 0 {
			return call("binary_part", g.expr(s, d), etf.Tuple{etf.Tuple{g.smallInt(), g.smallInt()}})
		}
		return call("binary_part", g.expr(s, d), g.smallInt(), g.smallInt())
	case 5:
		key := g.expr(s, d)
		if g.r.IntN(2) == 0 {
			key = g.scalar()
		}
		name := "map_get"
		if g.r.IntN(2) == 0 {
			name = "is_map_key"
		}
		return call(name, key, g.expr(s, d))
	case 6:
		n := g.r.IntN(4)
		t := make(etf.Tuple, n)
		for i := range t {
			t[i] = g.expr(s, d)
		}
		return etf.Tuple{t}
	case 7:
		n := g.r.IntN(4)
		l := make(etf.List, n)
		for i := range l {
			l[i] = g.expr(s, d)
		}
		if n > 0 && g.r.IntN(4) == 0 {
			return etf.NewImproperList(g.expr(s, d), l...)
		}
		return l
	case 8:
		m := etf.Map{}
		for range g.r.IntN(3) {
			k := g.expr(s, d)
			if _, dup := m.Get(k); !dup {
				m = append(m, etf.Pair{Key: k, Value: g.expr(s, d)})
			}
		}
		return m
	case 9:
		name := etf.Atom("_")
		if g.r.IntN(3) > 0 {
			name = atoms[g.r.IntN(len(atoms))]
		}
		return call("is_record", g.expr(s, d), name, etf.Int(g.r.IntN(5)))
	}
	return g.guard(s, depth)
}

// guard returns an expression that is usually boolean.
func (g *Gen) guard(s *scope, depth int) etf.Term {
	if depth <= 0 {
		return call(typeTests[g.r.IntN(len(typeTests))], g.leaf(s))
	}
	d := depth - 1
	switch g.r.IntN(9) {
	case 0, 1, 2:
		return call(compares[g.r.IntN(len(compares))], g.expr(s, d), g.expr(s, d))
	case 3, 4:
		return call(typeTests[g.r.IntN(len(typeTests))], g.expr(s, d))
	case 5:
		return call("not", g.guard(s, d))
	case 6, 7:
		op := logicalOps[g.r.IntN(len(logicalOps))]
		args := make([]etf.Term, 1+g.r.IntN(3))
		for i := range args {
			args[i] = g.guard(s, d)
		}
		return call(op, args...)
	}
	if g.r.IntN(2) == 0 {
		return etf.True
	}
	return g.expr(s, d) // anything: not true fails the clause
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
