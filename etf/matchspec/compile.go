package matchspec

import (
	"fmt"
	"math"
	"slices"

	"github.com/godets/godets/etf"
)

// maxDepth bounds how deeply a specification may nest. OTP has no such
// limit; it keeps compiling and running on hostile input bounded in stack.
const maxDepth = 1000

// Compile compiles an Erlang match specification, a list of
// {Head, Guards, Body} tuples, as ets:match_spec_compile/1 does. A
// specification OTP refuses with badarg is a *CompileError (errors.Is
// ErrBadSpec) whose Path says which clause and part went wrong.
func Compile(ms etf.Term) (*Spec, error) {
	list, ok := ms.(etf.List)
	if !ok {
		if _, improper := ms.(*etf.ImproperList); improper {
			return nil, &CompileError{Reason: "not a proper list of clauses"}
		}
		return nil, &CompileError{Reason: "not a list of clauses"}
	}
	if len(list) == 0 {
		return nil, &CompileError{Reason: "no clauses"}
	}
	s := &Spec{clauses: make([]clause, len(list))}
	for i, ct := range list {
		c, err := compileClause(ct, i+1)
		if err != nil {
			return nil, err
		}
		s.clauses[i] = c
		s.maxSlots = max(s.maxSlots, c.slots)
	}
	s.compileRaw()
	return s, nil
}

// compiler holds the state of one clause: its variables by number.
type compiler struct {
	path  string
	vars  map[int32]int // variable number -> slot
	nums  []int32       // slot -> variable number
	order []int         // slots in variable number order, for '$$'
}

func (c *compiler) fail(format string, args ...any) error {
	return &CompileError{Path: c.path, Reason: fmt.Sprintf(format, args...)}
}

func compileClause(t etf.Term, n int) (clause, error) {
	cl := clause{}
	tup, ok := t.(etf.Tuple)
	if !ok || len(tup) != 3 {
		return cl, &CompileError{Path: fmt.Sprintf("clause %d", n), Reason: "not a {Head, Guards, Body} tuple"}
	}
	c := &compiler{path: fmt.Sprintf("clause %d, head", n), vars: map[int32]int{}}
	head, err := c.head(tup[0], 0)
	if err != nil {
		return cl, err
	}
	cl.head = head
	markOTPBindings(&cl.head, len(c.nums))
	cl.slots = len(c.nums)
	c.order = make([]int, len(c.nums))
	for i := range c.order {
		c.order[i] = i
	}
	slices.SortFunc(c.order, func(a, b int) int { return int(c.nums[a]) - int(c.nums[b]) })

	guards, ok := tup[1].(etf.List)
	if !ok {
		return cl, &CompileError{Path: fmt.Sprintf("clause %d, guards", n), Reason: "not a proper list"}
	}
	for i, g := range guards {
		c.path = fmt.Sprintf("clause %d, guard %d", n, i+1)
		e, err := c.expr(g, 0)
		if err != nil {
			return cl, err
		}
		cl.guards = append(cl.guards, e)
	}
	body, ok := tup[2].(etf.List)
	if !ok {
		return cl, &CompileError{Path: fmt.Sprintf("clause %d, body", n), Reason: "not a proper list"}
	}
	if len(body) == 0 {
		return cl, &CompileError{Path: fmt.Sprintf("clause %d, body", n), Reason: "empty body returns nothing"}
	}
	// Every body expression is checked, as OTP does, but only the last
	// one's value is the result and nothing has side effects.
	for i, b := range body {
		c.path = fmt.Sprintf("clause %d, body %d", n, i+1)
		e, err := c.expr(b, 0)
		if err != nil {
			return cl, err
		}
		cl.body = e
	}
	return cl, nil
}

// variable reports whether a is a match variable '$N' and its number.
// OTP reads the digits into a wrapping 64-bit word and keeps the low 32
// bits as a signed int: numbers that end up negative are plain atoms, and
// '$4294967296' is '$0'. A leading zero makes a plain atom too.
func variable(a etf.Atom) (int32, bool) {
	s := string(a)
	if len(s) < 2 || s[0] != '$' || (s[1] == '0' && len(s) > 2) {
		return 0, false
	}
	var n uint64
	for i := 1; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	v := int32(uint32(n))
	return v, v >= 0
}

func (c *compiler) head(t etf.Term, depth int) (pattern, error) {
	if depth > maxDepth {
		return pattern{}, c.fail("nested deeper than %d", maxDepth)
	}
	p := pattern{lit: t}
	switch v := t.(type) {
	case etf.Atom:
		if v == "_" {
			p.kind = patAny
			return p, nil
		}
		if n, ok := variable(v); ok {
			if slot, seen := c.vars[n]; seen {
				p.kind, p.slot = patSame, slot
				return p, nil
			}
			p.kind, p.slot = patBind, len(c.nums)
			c.vars[n] = p.slot
			c.nums = append(c.nums, n)
			return p, nil
		}
		p.kind, p.atom = patAtom, v
	case etf.Int:
		p.kind, p.i = patInt, v
	case etf.Float:
		p.kind, p.f = patFloat, math.Float64bits(float64(v))
	case etf.Tuple:
		p.kind = patTuple
		p.elems = make([]pattern, len(v))
		for i, e := range v {
			ep, err := c.head(e, depth+1)
			if err != nil {
				return p, err
			}
			p.elems[i] = ep
		}
	case etf.List:
		if len(v) == 0 {
			p.kind = patNil
			return p, nil
		}
		return c.headList(t, v, nil, depth)
	case *etf.ImproperList:
		if v == nil {
			return p, c.fail("nil list")
		}
		return c.headList(t, v.Elems, v.Tail, depth)
	case etf.Map:
		p.kind = patMap
		for _, pair := range v {
			if a, ok := pair.Key.(etf.Atom); ok {
				if _, isVar := variable(a); isVar || a == "_" {
					return p, c.fail("variable %s in a map key", a)
				}
			}
			vp, err := c.head(pair.Value, depth+1)
			if err != nil {
				return p, err
			}
			p.keys = append(p.keys, pair.Key)
			p.elems = append(p.elems, vp)
		}
	case nil:
		return p, c.fail("nil term")
	default:
		p.kind = patConst
	}
	return p, nil
}

func (c *compiler) headList(t etf.Term, elems []etf.Term, tail etf.Term, depth int) (pattern, error) {
	p := pattern{kind: patList, lit: t, elems: make([]pattern, len(elems))}
	for i, e := range elems {
		ep, err := c.head(e, depth+1)
		if err != nil {
			return p, err
		}
		p.elems[i] = ep
	}
	if tail != nil {
		tp, err := c.head(tail, depth+1)
		if err != nil {
			return p, err
		}
		p.tail = &tp
	}
	return p, nil
}

// expr compiles a guard or body expression.
func (c *compiler) expr(t etf.Term, depth int) (*expr, error) {
	if depth > maxDepth {
		return nil, c.fail("nested deeper than %d", maxDepth)
	}
	switch v := t.(type) {
	case nil:
		return nil, c.fail("nil term")
	case etf.Atom:
		switch v {
		case "$_":
			return &expr{op: opObject}, nil
		case "$$":
			return &expr{op: opAll, order: c.order}, nil
		}
		if n, ok := variable(v); ok {
			slot, bound := c.vars[n]
			if !bound {
				return nil, c.fail("variable %s is unbound", v)
			}
			return &expr{op: opVar, slot: slot}, nil
		}
		return constExpr(v), nil
	case etf.Tuple:
		return c.tupleExpr(v, depth)
	case etf.List:
		e := &expr{op: opList}
		for _, el := range v {
			a, err := c.expr(el, depth+1)
			if err != nil {
				return nil, err
			}
			e.args = append(e.args, a)
		}
		return fold(e), nil
	case *etf.ImproperList:
		if v == nil {
			return nil, c.fail("nil list")
		}
		e := &expr{op: opList}
		for _, el := range v.Elems {
			a, err := c.expr(el, depth+1)
			if err != nil {
				return nil, err
			}
			e.args = append(e.args, a)
		}
		tl, err := c.expr(v.Tail, depth+1)
		if err != nil {
			return nil, err
		}
		e.tail = tl
		return fold(e), nil
	case etf.Map:
		e := &expr{op: opMap}
		keys := make([]*expr, 0, len(v))
		vals := make([]*expr, 0, len(v))
		// OTP builds the map in its own key order (the exact term order
		// for maps of up to 32 keys), so when two keys evaluate to the
		// same term, the later one there wins.
		pairs := slices.Clone(v)
		slices.SortStableFunc(pairs, func(a, b etf.Pair) int { return etf.CompareExact(a.Key, b.Key) })
		for _, p := range pairs {
			k, err := c.expr(p.Key, depth+1)
			if err != nil {
				return nil, err
			}
			val, err := c.expr(p.Value, depth+1)
			if err != nil {
				return nil, err
			}
			keys, vals = append(keys, k), append(vals, val)
		}
		e.args = append(keys, vals...)
		return fold(e), nil
	}
	return constExpr(t), nil
}

func (c *compiler) tupleExpr(v etf.Tuple, depth int) (*expr, error) {
	if len(v) == 0 {
		return nil, c.fail("{} is neither a function call nor a tuple (tuples are written {{...}})")
	}
	if inner, ok := v[0].(etf.Tuple); ok && len(v) == 1 {
		e := &expr{op: opTuple}
		for _, el := range inner {
			a, err := c.expr(el, depth+1)
			if err != nil {
				return nil, err
			}
			e.args = append(e.args, a)
		}
		return fold(e), nil
	}
	name, ok := v[0].(etf.Atom)
	if !ok {
		return nil, c.fail("%s is neither a function call nor a tuple (tuples are written {{...}})", etf.Format(v))
	}
	arity := len(v) - 1
	if name == "const" {
		if arity != 1 {
			return nil, c.fail("const takes one argument, not %d", arity)
		}
		return constExpr(v[1]), nil
	}
	fn, err := lookup(name, arity)
	if err != nil {
		err.Path = c.path
		return nil, err
	}
	e := &expr{op: opCall, fn: fn}
	switch fn {
	case fnAndAlso:
		e.op = opAndAlso
	case fnOrElse:
		e.op = opOrElse
	}
	for _, a := range v[1:] {
		ae, err := c.expr(a, depth+1)
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, ae)
	}
	return e, nil
}

func constExpr(t etf.Term) *expr { return &expr{op: opConst, c: t} }

// fold turns a constructor whose parts are all constants into one
// constant, so running it builds nothing.
func fold(e *expr) *expr {
	for _, a := range e.args {
		if a.op != opConst {
			return e
		}
	}
	if e.tail != nil && e.tail.op != opConst {
		return e
	}
	v, _ := eval(e, nil, nil, false)
	if v == nil {
		return e
	}
	return constExpr(v)
}
