package msgen

import (
	"github.com/godets/godets/etf"
)

// scope tracks the variables a head binds, for the guards and body.
type scope struct {
	bound []etf.Atom
	// vals holds what each variable binds when the head matches its
	// sample, so guards and bodies can use it with fitting functions.
	vals map[etf.Atom]etf.Term
	// sample is the object the head was derived from ('$_').
	sample etf.Term
}

// varNames are the variables heads use: small numbers so that the same
// one recurs (and must then be equal), and spellings OTP treats oddly:
// '$4294967296' is '$0'; '$2147483648' is a plain atom.
var varNames = []etf.Atom{"$0", "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$4294967296", "$2147483648"}

func (g *Gen) newVar(s *scope, t etf.Term) etf.Atom {
	v := varNames[g.r.IntN(len(varNames))]
	if g.r.IntN(8) > 0 {
		v = varNames[g.r.IntN(10)]
	}
	s.bound = append(s.bound, v)
	if s.vals == nil {
		s.vals = map[etf.Atom]etf.Term{}
	}
	if _, seen := s.vals[v]; !seen {
		s.vals[v] = t
	}
	return v
}

// Pattern returns a head pattern derived from sample (usually an object
// of the table), for dets:match/2, match_object/2 and match_delete/2.
func (g *Gen) Pattern(sample etf.Term) etf.Term {
	return g.head(sample, &scope{}, true)
}

// head turns t into a pattern: kept, generalized or perturbed. At the top
// of a tuple the key is kept often, which makes the query a bound-key one.
func (g *Gen) head(t etf.Term, s *scope, top bool) etf.Term {
	if top {
		if tup, ok := t.(etf.Tuple); ok {
			switch g.r.IntN(10) {
			case 0:
				return etf.Atom("_")
			case 1:
				return g.newVar(s, t)
			}
			out := make(etf.Tuple, len(tup))
			for i, e := range tup {
				if i == g.KeyPos-1 && g.r.IntN(5) < 2 {
					out[i] = e
					continue
				}
				out[i] = g.head(e, s, false)
			}
			if g.r.IntN(25) == 0 {
				out = append(out, etf.Atom("_")) // wrong arity: never matches
			}
			return out
		}
	}
	for _, v := range s.bound { // in order: map order would break replay
		if etf.Compare(s.vals[v], t) == 0 && g.r.IntN(2) == 0 {
			s.bound = append(s.bound, v)
			return v // == the first binding: matches only if also =:=
		}
	}
	switch g.r.IntN(12) {
	case 0, 1, 2:
		return etf.Atom("_")
	case 3, 4, 5:
		if len(s.bound) > 0 && g.r.IntN(4) == 0 {
			v := s.bound[g.r.IntN(len(s.bound))]
			s.bound = append(s.bound, v)
			return v // repeated: must equal the first binding
		}
		return g.newVar(s, t)
	case 6:
		return g.scalar() // most likely a mismatch
	}
	if f, ok := t.(etf.Float); ok && g.r.IntN(3) == 0 {
		return g.floatTwin(f) // == but not =:=, or 0.0 for -0.0
	}
	switch v := t.(type) {
	case etf.Tuple:
		out := make(etf.Tuple, len(v))
		for i, e := range v {
			out[i] = g.head(e, s, false)
		}
		return out
	case etf.List:
		if len(v) == 0 {
			return v
		}
		n := g.r.IntN(len(v) + 1)
		out := make(etf.List, n)
		for i := range out {
			out[i] = g.head(v[i], s, false)
		}
		if n == len(v) && g.r.IntN(2) == 0 {
			return out
		}
		var tail etf.Term = etf.Atom("_")
		if g.r.IntN(2) == 0 {
			tail = g.newVar(s, etf.List(v[n:]))
		}
		return etf.NewImproperList(tail, out...)
	case *etf.ImproperList:
		out := make([]etf.Term, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = g.head(e, s, false)
		}
		if g.r.IntN(4) == 0 {
			return etf.List(out) // a proper pattern never matches an improper list
		}
		return &etf.ImproperList{Elems: out, Tail: g.head(v.Tail, s, false)}
	case etf.Map:
		out := etf.Map{}
		for _, p := range v {
			if g.r.IntN(3) > 0 {
				out = append(out, etf.Pair{Key: p.Key, Value: g.head(p.Value, s, false)})
			}
		}
		return out
	}
	return t
}

// Spec returns a match specification of one to three clauses whose heads
// are derived from the samples. Bodies return objects, bindings,
// constructions, arithmetic and constants; a share (InvalidRate) is made
// invalid.
func (g *Gen) Spec(samples []etf.Term) etf.Term {
	n := 1 + g.r.IntN(3)
	ms := make(etf.List, n)
	for i := range ms {
		ms[i] = g.clause(samples, nil)
		if i > 0 && g.r.IntN(3) == 0 {
			ms[i] = g.twinClause(ms[i-1], samples)
		}
	}
	if g.r.Float64() < g.InvalidRate {
		return g.Invalid(ms)
	}
	return ms
}

// ExprSpec returns a one-clause specification that puts a single typed
// expression where its value is seen: the body, or a guard before '$_'.
// It exercises the arithmetic and the guard functions more densely than
// Spec.
func (g *Gen) ExprSpec(samples []etf.Term) etf.Term {
	var sample etf.Term = g.Object()
	if len(samples) > 0 {
		sample = samples[g.r.IntN(len(samples))]
	}
	s := &scope{sample: sample}
	head := g.head(sample, s, true)
	k := []kind{kInt, kInt, kFloat, kNum, kBin, kList, kBool}[g.r.IntN(7)]
	e := g.typed(s, k, 1+g.r.IntN(3))
	if g.r.IntN(4) == 0 {
		return etf.List{etf.Tuple{head, etf.List{g.guard(s, 2)}, etf.List{etf.Atom("$_")}}}
	}
	return etf.List{etf.Tuple{head, etf.List{}, etf.List{e}}}
}

// DeleteSpec returns a specification for select_delete: bodies are mostly
// [true], sometimes another value (which OTP does not count as a delete).
func (g *Gen) DeleteSpec(samples []etf.Term) etf.Term {
	n := 1 + g.r.IntN(2)
	ms := make(etf.List, n)
	for i := range ms {
		var body etf.List
		if g.r.IntN(5) > 0 {
			body = etf.List{etf.True}
		}
		ms[i] = g.clause(samples, body)
	}
	return ms
}

// twinClause returns a clause from a sample whose key is == but not =:=
// to the key of prev's head, when prev has a tuple head with a literal key
// and some sample has such a key; else a plain clause.
func (g *Gen) twinClause(prev etf.Term, samples []etf.Term) etf.Tuple {
	c, _ := prev.(etf.Tuple)
	if len(c) == 3 {
		if h, ok := c[0].(etf.Tuple); ok && len(h) >= g.KeyPos {
			key := h[g.KeyPos-1]
			for _, o := range samples {
				if t, ok := o.(etf.Tuple); ok && len(t) >= g.KeyPos {
					if k := t[g.KeyPos-1]; etf.Compare(k, key) == 0 && !etf.Equal(k, key) {
						head, ok := g.head(o, &scope{sample: o}, true).(etf.Tuple)
						if ok && len(head) >= g.KeyPos {
							head = append(etf.Tuple(nil), head...)
							head[g.KeyPos-1] = k
							return etf.Tuple{head, etf.List{}, etf.List{etf.Atom("$_")}}
						}
					}
				}
			}
		}
	}
	return g.clause(samples, nil)
}

func (g *Gen) clause(samples []etf.Term, body etf.List) etf.Tuple {
	var sample etf.Term = g.Object()
	if len(samples) > 0 && g.r.IntN(6) > 0 {
		sample = samples[g.r.IntN(len(samples))]
	}
	s := &scope{sample: sample}
	head := g.head(sample, s, true)
	guards := etf.List{}
	for range g.r.IntN(3) {
		guards = append(guards, g.guard(s, 3))
	}
	if body == nil {
		body = etf.List{}
		if g.r.IntN(3) == 0 {
			body = append(body, g.expr(s, 2))
		}
		body = append(body, g.result(s))
	}
	return etf.Tuple{head, guards, body}
}
