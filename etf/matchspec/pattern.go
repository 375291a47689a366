package matchspec

import (
	"bytes"
	"math"

	"github.com/godets/godets/etf"
)

// patKind says how a head pattern node matches.
type patKind uint8

const (
	patAny    patKind = iota + 1 // '_'
	patBind                      // first occurrence of a variable: binds slot
	patSame                      // later occurrence: must be =:= the bound value
	patRebind                    // patSame, and OTP binds here first (markOTPBindings)
	patAtom                      // atom constant
	patInt                       // small integer constant
	patFloat                     // float constant, compared bit for bit as OTP does
	patConst                     // other constants (bignums, binaries, pids...): =:=
	patNil                       // []
	patTuple                     // tuple of patterns
	patList                      // [P1, ..., Pn | Tail]
	patMap                       // map: the object has these keys, values match
)

// pattern is one compiled node of a head.
type pattern struct {
	kind  patKind
	slot  int
	atom  etf.Atom
	i     etf.Int
	f     uint64   // Float64bits of a float constant
	lit   etf.Term // the source term of this node
	elems []pattern
	tail  *pattern   // list tail; nil means []
	keys  []etf.Term // map keys, literal
	enc   []byte     // the raw filter's encoding of a constant (a body)
}

// match reports whether t matches p, binding variables into vars.
func (p *pattern) match(t etf.Term, vars []etf.Term) bool {
	switch p.kind {
	case patAny:
		return true
	case patBind:
		vars[p.slot] = t
		return true
	case patSame:
		return etf.Equal(vars[p.slot], t)
	case patRebind:
		if !etf.Equal(vars[p.slot], t) {
			return false
		}
		vars[p.slot] = t
		return true
	case patAtom:
		a, ok := t.(etf.Atom)
		return ok && a == p.atom
	case patInt:
		i, ok := t.(etf.Int)
		return ok && i == p.i
	case patFloat:
		f, ok := t.(etf.Float)
		return ok && math.Float64bits(float64(f)) == p.f
	case patConst:
		return matchConst(p.lit, t)
	case patNil:
		l, ok := t.(etf.List)
		return ok && len(l) == 0
	case patTuple:
		tup, ok := t.(etf.Tuple)
		if !ok || len(tup) != len(p.elems) {
			return false
		}
		for i := range p.elems {
			if !p.elems[i].match(tup[i], vars) {
				return false
			}
		}
		return true
	case patList:
		return p.matchList(t, vars)
	case patMap:
		m, ok := t.(etf.Map)
		if !ok || len(m) < len(p.keys) {
			return false
		}
		for i, k := range p.keys {
			v, found := m.Get(k)
			if !found || !p.elems[i].match(v, vars) {
				return false
			}
		}
		return true
	}
	return false
}

// matchConst compares a constant that is neither atom, small integer nor
// float: binaries by bytes, the rest (bignums, bit strings, opaque terms,
// which hold no floats) by =:=.
func matchConst(c, t etf.Term) bool {
	if cb, ok := c.(etf.Binary); ok {
		b, ok := t.(etf.Binary)
		return ok && bytes.Equal(cb, b)
	}
	if typeOf(c) != typeOf(t) {
		return false
	}
	return etf.Equal(c, t)
}

// matchList matches [E1..En | Tail] against a proper or improper list.
func (p *pattern) matchList(t etf.Term, vars []etf.Term) bool {
	var elems []etf.Term
	var tail etf.Term // nil: []
	switch l := t.(type) {
	case etf.List:
		elems = l
	case *etf.ImproperList:
		if l == nil {
			return false
		}
		elems, tail = l.Elems, l.Tail
	default:
		return false
	}
	n := len(p.elems)
	if len(elems) < n {
		return false
	}
	for i := range p.elems {
		if !p.elems[i].match(elems[i], vars) {
			return false
		}
	}
	rest := elems[n:]
	if p.tail == nil { // the pattern ends in []
		return len(rest) == 0 && tail == nil
	}
	if p.tail.kind == patAny {
		return true
	}
	var r etf.Term
	switch {
	case len(rest) == 0 && tail == nil:
		r = etf.Nil
	case len(rest) == 0:
		r = tail
	case tail == nil:
		r = etf.List(rest)
	default:
		r = &etf.ImproperList{Elems: rest, Tail: tail}
	}
	return p.tail.match(r, vars)
}

// markOTPBindings marks, for each variable, the occurrence OTP binds.
// Matching here walks a head depth first, so the first occurrence in that
// order binds (patBind) and later ones compare (patSame). OTP's compiled
// match program walks a tuple's or list's own elements first and the
// tuples, lists and maps among them afterwards, the one met last first (a
// stack; erl_db_util.c, db_match_compile), and binds where it meets a
// variable first. The two choices differ only in which of two matching
// values a variable keeps, and those differ only for 0.0 and -0.0, which
// match each other in OTP 25 but print apart in a result ('$$', '$5').
// So the occurrence OTP meets first, when it is not the one that binds
// here, becomes patRebind: it compares, then takes the binding over.
func markOTPBindings(root *pattern, slots int) {
	seen := make([]bool, slots)
	var stack []*pattern
	one := func(p *pattern) {
		switch p.kind {
		case patTuple, patList, patMap:
			stack = append(stack, p) // OTP: matchPushT, matchPushL, matchPushM
		case patBind, patSame:
			if !seen[p.slot] {
				seen[p.slot] = true
				if p.kind == patSame {
					p.kind = patRebind
				}
			}
		}
	}
	for p := root; p != nil; {
		// A list's tail continues the walk in place, as OTP's loop does.
		for p != nil {
			switch p.kind {
			case patTuple, patMap:
				for i := range p.elems {
					one(&p.elems[i])
				}
				p = nil
			case patList:
				for i := range p.elems {
					one(&p.elems[i])
				}
				p = p.tail // nil: []
			default:
				one(p)
				p = nil
			}
		}
		if n := len(stack); n > 0 {
			p, stack = stack[n-1], stack[:n-1]
		}
	}
}
