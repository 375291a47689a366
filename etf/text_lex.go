package etf

// The lexer: erl_scan's tokens for the subset of Erlang that denotes terms.

import (
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

const (
	eofRune = -1 // end of input (or a read error, kept in lexer.ioErr)
	badRune = -2 // bytes that are not UTF-8
)

type tokKind uint8

const (
	tEOF     tokKind = iota
	tDot             // '.' followed by white space, '%' or the end: ends a term
	tAtom            // text
	tVar             // text
	tKeyword         // a reserved word, in text
	tInt             // num
	tChar            // num
	tFloat           // f
	tString          // runes
	tPunct           // text: { } [ ] ( ) , | # << >> => : / - + and others
)

type token struct {
	kind      tokKind
	text      string
	num       Term // Int or *BigInt
	f         float64
	runes     []rune
	line, col int
}

func (t *token) is(punct string) bool { return t.kind == tPunct && t.text == punct }

func (t *token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tDot:
		return "'.'"
	case tAtom:
		return "atom " + Format(Atom(t.text))
	case tVar:
		return "variable " + t.text
	case tKeyword:
		return "reserved word " + t.text
	case tInt:
		return "integer"
	case tChar:
		return "character literal"
	case tFloat:
		return "float"
	case tString:
		return "string"
	}
	return "'" + t.text + "'"
}

type lexer struct {
	src       io.RuneReader
	look      [3]rune // look[:nlook] are read but not consumed
	nlook     int
	line, col int // position of the next unconsumed rune
	ioErr     error
	scratch   []byte
	runes     []rune
}

func (lx *lexer) init(src io.RuneReader) {
	lx.src = src
	lx.line, lx.col = 1, 1
}

func (lx *lexer) read() rune {
	if lx.ioErr != nil {
		return eofRune
	}
	r, size, err := lx.src.ReadRune()
	if err != nil {
		if err != io.EOF {
			lx.ioErr = err
		}
		return eofRune
	}
	if r == utf8.RuneError && size == 1 {
		return badRune // a Latin-1 source never returns U+FFFD
	}
	return r
}

// peek returns the rune i places ahead (i < 3) without consuming it.
func (lx *lexer) peek(i int) rune {
	for lx.nlook <= i {
		lx.look[lx.nlook] = lx.read()
		lx.nlook++
	}
	return lx.look[i]
}

// advance consumes and returns the next rune.
func (lx *lexer) advance() rune {
	r := lx.peek(0)
	if r == eofRune {
		return r // stay at the end
	}
	copy(lx.look[:], lx.look[1:lx.nlook])
	lx.nlook--
	if r == '\n' {
		lx.line++
		lx.col = 1
	} else {
		lx.col++
	}
	return r
}

func (lx *lexer) errAt(line, col int, format string, args ...any) error {
	return &SyntaxError{Line: line, Col: col, Reason: fmt.Sprintf(format, args...)}
}

func (lx *lexer) errHere(format string, args ...any) error {
	return lx.errAt(lx.line, lx.col, format, args...)
}

// badChar is the error for rune r at the current position.
func (lx *lexer) badChar(r rune) error {
	switch r {
	case badRune:
		return lx.errHere("invalid UTF-8 (declare %% coding: latin-1 for Latin-1 text)")
	case eofRune:
		return lx.errHere("unexpected end of input")
	}
	return lx.errHere("illegal character U+%04X", r)
}

// isWhite is erl_scan's white space: 0..32 and 128..160.
func isWhite(r rune) bool { return r >= 0 && r <= ' ' || r >= 0x80 && r <= 0xA0 }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// isUnicode is erl_scan's test for a character allowed in strings, atoms
// and $c literals.
func isUnicode(r rune) bool {
	return r >= 0 && r < 0xD800 || r > 0xDFFF && r < 0xFFFE || r > 0xFFFF && r <= unicode.MaxRune
}

func isAtomStart(r rune) bool { return r >= 'a' && r <= 'z' || r >= 0xDF && r <= 0xFF && r != 0xF7 }

func isVarStart(r rune) bool {
	return r >= 'A' && r <= 'Z' || r == '_' || r >= 0xC0 && r <= 0xDE && r != 0xD7
}

func isNameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || isDigit(r) || r == '_' || r == '@' ||
		r >= 0xC0 && r <= 0xFF && r != 0xD7 && r != 0xF7
}

// digitVal returns the value of r as a digit, or 99.
func digitVal(r rune) int {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0')
	case r >= 'a' && r <= 'z':
		return int(r-'a') + 10
	case r >= 'A' && r <= 'Z':
		return int(r-'A') + 10
	}
	return 99
}

// next returns the next token.
func (lx *lexer) next() (token, error) {
	for {
		r := lx.peek(0)
		if isWhite(r) {
			lx.advance()
			continue
		}
		if r == '%' {
			for {
				c := lx.peek(0)
				if c == '\n' || c == eofRune {
					break
				}
				if c == badRune {
					return token{}, lx.badChar(c)
				}
				lx.advance()
			}
			continue
		}
		break
	}
	line, col := lx.line, lx.col
	tok := token{line: line, col: col}
	r := lx.peek(0)
	switch {
	case r == eofRune:
		tok.kind = tEOF
		return tok, nil
	case r == badRune:
		return tok, lx.badChar(r)
	case isAtomStart(r) || isVarStart(r):
		rs := lx.runes[:0]
		for isNameChar(lx.peek(0)) {
			rs = append(rs, lx.advance())
		}
		lx.runes = rs
		tok.text = string(rs)
		switch {
		case isVarStart(r):
			tok.kind = tVar
		case reservedOTP25(tok.text):
			tok.kind = tKeyword
		case len(rs) > maxTextAtom:
			return tok, lx.errAt(line, col, "atom longer than 255 characters")
		default:
			tok.kind = tAtom
		}
		return tok, nil
	case isDigit(r):
		return lx.number(tok)
	case r == '\'':
		lx.advance()
		rs, err := lx.quoted('\'', line, col)
		if err != nil {
			return tok, err
		}
		if len(rs) > maxTextAtom {
			return tok, lx.errAt(line, col, "atom longer than 255 characters")
		}
		tok.kind, tok.text = tAtom, string(rs)
		return tok, nil
	case r == '"':
		lx.advance()
		rs, err := lx.quoted('"', line, col)
		if err != nil {
			return tok, err
		}
		tok.kind, tok.runes = tString, slices.Clone(rs)
		return tok, nil
	case r == '$':
		lx.advance()
		c := lx.peek(0)
		switch {
		case c == '\\':
			lx.advance()
			v, err := lx.escape()
			if err != nil {
				return tok, err
			}
			c = v
		case isUnicode(c):
			lx.advance()
		default:
			return tok, lx.badChar(c)
		}
		tok.kind, tok.num = tChar, Int(c)
		return tok, nil
	case r == '.':
		lx.advance()
		if c := lx.peek(0); c == eofRune || c == '%' || isWhite(c) {
			tok.kind = tDot
			return tok, nil
		}
		tok.kind, tok.text = tPunct, "."
		return tok, nil
	case r > 0xFF:
		return tok, lx.badChar(r)
	}
	// Punctuation: the pairs that matter for terms, single characters
	// otherwise.
	lx.advance()
	tok.kind, tok.text = tPunct, punctText[r]
	if pair := punctPair(r, lx.peek(0)); pair != "" {
		lx.advance()
		tok.text = pair
	}
	return tok, nil
}

// punctText holds each character 0..255 as a string, so that punctuation
// tokens do not allocate.
var punctText = func() (t [256]string) {
	for i := range t {
		t[i] = string(rune(i))
	}
	return t
}()

// punctPair returns the two-character token a and b make, or "". Only the
// pairs that matter for terms and for clear messages are recognised.
func punctPair(a, b rune) string {
	switch {
	case a == '<' && b == '<':
		return "<<"
	case a == '>' && b == '>':
		return ">>"
	case a == '=' && b == '>':
		return "=>"
	case a == ':' && b == '=':
		return ":="
	case a == '-' && b == '-':
		return "--"
	case a == '+' && b == '+':
		return "++"
	case a == '-' && b == '>':
		return "->"
	case a == '|' && b == '|':
		return "||"
	case a == '=' && b == '<':
		return "=<"
	case a == '<' && b == '=':
		return "<="
	case a == ':' && b == ':':
		return "::"
	}
	return ""
}

// quoted reads the rest of a quoted atom or string after its opening quote.
func (lx *lexer) quoted(q rune, line, col int) ([]rune, error) {
	rs := lx.runes[:0]
	defer func() { lx.runes = rs[:0] }()
	for {
		r := lx.peek(0)
		switch {
		case r == q:
			lx.advance()
			return rs, nil
		case r == '\\':
			lx.advance()
			v, err := lx.escape()
			if err != nil {
				return nil, err
			}
			rs = append(rs, v)
		case r == eofRune:
			what := "string"
			if q == '\'' {
				what = "quoted atom"
			}
			return nil, lx.errAt(line, col, "unterminated %s", what)
		case isUnicode(r):
			lx.advance()
			rs = append(rs, r)
		default:
			return nil, lx.badChar(r)
		}
	}
}

// escape reads an escape sequence after its backslash.
func (lx *lexer) escape() (rune, error) {
	line, col := lx.line, lx.col-1
	r := lx.peek(0)
	switch {
	case r >= '0' && r <= '7':
		lx.advance()
		v := r - '0'
		for i := 0; i < 2; i++ {
			c := lx.peek(0)
			if c < '0' || c > '7' {
				break
			}
			lx.advance()
			v = v*8 + c - '0'
		}
		return v, nil
	case r == 'x':
		lx.advance()
		if lx.peek(0) == '{' {
			lx.advance()
			v, n := rune(0), 0
			for digitVal(lx.peek(0)) < 16 {
				v = v*16 + rune(digitVal(lx.advance()))
				if v > unicode.MaxRune {
					v = unicode.MaxRune + 1 // keep it invalid without overflowing
				}
				n++
			}
			if lx.peek(0) != '}' || n == 0 || !isUnicode(v) {
				return 0, lx.errAt(line, col, `bad \x{...} escape`)
			}
			lx.advance()
			return v, nil
		}
		h1, h2 := digitVal(lx.peek(0)), digitVal(lx.peek(1))
		if h1 < 16 && h2 < 16 {
			lx.advance()
			lx.advance()
			return rune(h1*16 + h2), nil
		}
		return 0, lx.errAt(line, col, `bad \x escape`)
	case r == '^':
		lx.advance()
		c := lx.peek(0)
		if c < 0 {
			return 0, lx.badChar(c)
		}
		lx.advance()
		return c & 31, nil
	case r < 0:
		return 0, lx.badChar(r)
	case !isUnicode(r):
		return 0, lx.badChar(r)
	}
	lx.advance()
	switch r {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'v':
		return '\v', nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'e':
		return 0x1B, nil
	case 's':
		return ' ', nil
	case 'd':
		return 0x7F, nil
	}
	return r, nil
}

// digits appends digits of the given base to buf, skipping the _ separators
// erl_scan allows between two digits.
func (lx *lexer) digits(buf []byte, base int) []byte {
	prevDigit := false
	for {
		r := lx.peek(0)
		if digitVal(r) < base {
			buf = append(buf, byte(lx.advance()))
			prevDigit = true
			continue
		}
		if r == '_' && prevDigit && digitVal(lx.peek(1)) < base {
			lx.advance()
			prevDigit = false
			continue
		}
		return buf
	}
}

func (lx *lexer) number(tok token) (token, error) {
	buf := lx.digits(lx.scratch[:0], 10)
	defer func() { lx.scratch = buf[:0] }()
	switch {
	case lx.peek(0) == '#':
		base, err := strconv.Atoi(string(buf))
		if err != nil || base < 2 || base > 36 {
			return tok, lx.errAt(tok.line, tok.col, "illegal base %s", buf)
		}
		lx.advance()
		buf = lx.digits(buf[:0], base)
		if len(buf) == 0 {
			return tok, lx.errAt(tok.line, tok.col, "illegal integer: no digits after base")
		}
		tok.kind, tok.num = tInt, parseDigits(buf, base)
		return tok, nil
	case lx.peek(0) == '.' && isDigit(lx.peek(1)):
		buf = append(buf, byte(lx.advance()))
		buf = lx.digits(buf, 10)
		if c := lx.peek(0); c == 'e' || c == 'E' {
			buf = append(buf, byte(lx.advance()))
			if c := lx.peek(0); c == '+' || c == '-' {
				buf = append(buf, byte(lx.advance()))
			}
			n := len(buf)
			buf = lx.digits(buf, 10)
			if len(buf) == n {
				return tok, lx.errAt(tok.line, tok.col, "illegal float: no exponent digits")
			}
		}
		f, err := strconv.ParseFloat(string(buf), 64)
		if err != nil {
			return tok, lx.errAt(tok.line, tok.col, "illegal float: out of range")
		}
		tok.kind, tok.f = tFloat, f
		return tok, nil
	}
	tok.kind, tok.num = tInt, parseDigits(buf, 10)
	return tok, nil
}

// parseDigits converts valid digits of a base to an Int or *BigInt. Long
// numbers are split in halves so the work stays below quadratic.
func parseDigits(d []byte, base int) Term {
	if u, err := strconv.ParseUint(string(d), base, 64); err == nil {
		return NewUint(u)
	}
	return NewBigInt(bigDigits(d, base))
}

func bigDigits(d []byte, base int) *big.Int {
	if len(d) <= 2000 {
		x, _ := new(big.Int).SetString(string(d), base) // digits are valid
		return x
	}
	half := len(d) / 2
	hi := bigDigits(d[:len(d)-half], base)
	lo := bigDigits(d[len(d)-half:], base)
	pow := new(big.Int).Exp(big.NewInt(int64(base)), big.NewInt(int64(half)), nil)
	return hi.Mul(hi, pow).Add(hi, lo)
}
