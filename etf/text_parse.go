package etf

// The parser: erl_parse's grammar for one expression, normalised to a term
// as erl_parse:normalise/1 does, and Parse, its entry point for one term.

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
)

type parser struct {
	lx     lexer
	tok    token
	depth  int
	budget int64 // bits sized segments may still add
}

func (p *parser) reset() {
	p.depth = 0
	p.budget = maxSegmentBits
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if p.lx.ioErr != nil {
		return p.lx.ioErr
	}
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errTok(t *token, format string, args ...any) error {
	return &SyntaxError{Line: t.line, Col: t.col, Reason: fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected() error {
	if p.tok.kind == tDot {
		return p.errTok(&p.tok, "unexpected '.': term is incomplete")
	}
	return p.errTok(&p.tok, "unexpected %s", p.tok.describe())
}

func (p *parser) expect(punct string) error {
	if !p.tok.is(punct) {
		if p.tok.kind == tEOF || p.tok.kind == tDot {
			return p.errTok(&p.tok, "expected '%s' before %s", punct, p.tok.describe())
		}
		return p.errTok(&p.tok, "expected '%s', found %s", punct, p.tok.describe())
	}
	return p.advance()
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxTextDepth {
		return p.errTok(&p.tok, "nesting deeper than %d", maxTextDepth)
	}
	return nil
}

// expr reads one term.
func (p *parser) expr() (Term, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := &p.tok
	switch t.kind {
	case tInt, tChar:
		v := t.num
		return v, p.advance()
	case tFloat:
		v := Float(t.f)
		return v, p.advance()
	case tAtom:
		v := Atom(t.text)
		return v, p.advance()
	case tString:
		rs, err := p.strings()
		if err != nil {
			return nil, err
		}
		l := make(List, len(rs))
		for i, r := range rs {
			l[i] = Int(r)
		}
		return l, nil
	case tVar:
		return nil, p.errTok(t, "variable %s is not a term (quote it to make an atom)", t.text)
	case tKeyword:
		if t.text == "fun" {
			return p.fun()
		}
		return nil, p.errTok(t, "reserved word %s must be quoted to be an atom", t.text)
	case tPunct:
		switch t.text {
		case "-", "+":
			return p.unary()
		case "(":
			if err := p.advance(); err != nil {
				return nil, err
			}
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			return v, p.expect(")")
		case "{":
			return p.tuple()
		case "[":
			return p.list()
		case "<<":
			return p.binary()
		case "#":
			return p.mapTerm()
		}
	}
	return nil, p.unexpected()
}

// strings reads one or more adjacent string literals.
func (p *parser) strings() ([]rune, error) {
	var rs []rune
	for p.tok.kind == tString {
		rs = append(rs, p.tok.runes...)
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// unary reads + or - applied to a number literal, possibly in parentheses:
// the only operator erl_parse:normalise/1 accepts.
func (p *parser) unary() (Term, error) {
	neg := p.tok.text == "-"
	opTok := p.tok
	if err := p.advance(); err != nil {
		return nil, err
	}
	parens := 0
	for p.tok.is("(") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		parens++
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	p.depth -= parens
	var v Term
	switch p.tok.kind {
	case tInt, tChar:
		v = p.tok.num
		if neg {
			v = negate(v)
		}
	case tFloat:
		f := p.tok.f
		if neg {
			f = -f
		}
		v = Float(f)
	default:
		return nil, p.errTok(&opTok, "operator %s applies only to a number literal in a term", opTok.text)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for ; parens > 0; parens-- {
		if err := p.expect(")"); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func negate(v Term) Term {
	switch x := v.(type) {
	case Int:
		if x != math.MinInt64 {
			return -x
		}
		return NewBigInt(new(big.Int).Neg(big.NewInt(int64(x))))
	case *BigInt:
		return NewBigInt(new(big.Int).Neg(&x.v))
	}
	return v
}

func (p *parser) tuple() (Term, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	t := Tuple{}
	if p.tok.is("}") {
		return t, p.advance()
	}
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		t = append(t, e)
		if p.tok.is(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		return t, p.expect("}")
	}
}

func (p *parser) list() (Term, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.is("]") {
		return Nil, p.advance()
	}
	var elems []Term
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
		switch {
		case p.tok.is(","):
			if err := p.advance(); err != nil {
				return nil, err
			}
		case p.tok.is("|"):
			if err := p.advance(); err != nil {
				return nil, err
			}
			tail, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			switch tail.(type) {
			case List, *ImproperList:
				return NewImproperList(tail, elems...), nil
			}
			return &ImproperList{Elems: elems, Tail: tail}, nil
		default:
			return List(elems), p.expect("]")
		}
	}
}

func (p *parser) mapTerm() (Term, error) {
	hash := p.tok
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tAtom {
		return nil, p.errTok(&hash, "records are not terms")
	}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	m := Map{}
	if p.tok.is("}") {
		return m, p.advance()
	}
	for {
		k, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.tok.is(":=") {
			return nil, p.errTok(&p.tok, "':=' is not allowed in a map term; use '=>'")
		}
		if err := p.expect("=>"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		m = append(m, Pair{Key: k, Value: v})
		if p.tok.is(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.expect("}"); err != nil {
			return nil, err
		}
		return dedupMap(m), nil
	}
}

// dedupMap keeps the last value of each key, as maps:from_list/1 does, and
// leaves the pairs in CompareExact order of their keys.
func dedupMap(m Map) Map {
	if len(m) < 2 {
		return m
	}
	slices.SortStableFunc(m, func(a, b Pair) int { return CompareExact(a.Key, b.Key) })
	out := m[:0]
	for i, kv := range m {
		if i+1 < len(m) && CompareExact(kv.Key, m[i+1].Key) == 0 {
			continue // a later pair has the same key
		}
		out = append(out, kv)
	}
	return out
}

// fun reads fun Module:Function/Arity.
func (p *parser) fun() (Term, error) {
	start := p.tok
	shape := func() error { return p.errTok(&start, "only fun Module:Function/Arity is a term") }
	var names [2]string
	for i, sep := range []string{":", "/"} {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tAtom {
			return nil, shape()
		}
		names[i] = p.tok.text
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.tok.is(sep) {
			return nil, shape()
		}
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	arity, ok := p.tok.num.(Int)
	if p.tok.kind != tInt || !ok || arity < 0 || arity > 255 {
		return nil, p.errTok(&p.tok, "fun arity must be an integer from 0 to 255")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	return &Opaque{Raw: exportRaw(names[0], names[1], int(arity))}, nil
}

// Parse reads one term in Erlang syntax, as erl_parse:parse_term/1 reads it.
// A final dot is optional. White space and % comments may surround the
// term. Errors are *SyntaxError (matching ErrSyntax) with a 1-based line and
// column; the text is UTF-8.
func Parse(s string) (Term, error) {
	var p parser
	p.lx.init(strings.NewReader(s))
	p.reset()
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, p.errTok(&p.tok, "no term")
	}
	t, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind == tDot {
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if p.tok.kind != tEOF {
		return nil, p.errTok(&p.tok, "unexpected %s after the term", p.tok.describe())
	}
	return t, nil
}
