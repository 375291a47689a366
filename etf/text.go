package etf

// Erlang text syntax: the printer (Format, AppendFormat, FormatStrict) and
// the reader (Parse, ParseAll, Reader).
//
// The target is what file:consult/1 accepts, checked against OTP 25: the
// erl_scan tokens, the erl_parse grammar for a single expression, and the
// erl_parse:normalise/1 rules that turn an expression into a term. Those
// rules allow literals, tuples, lists, maps with =>, binaries whose segments
// evaluate to constants, a unary + or - directly on a number, parentheses, and
// fun M:F/A. Everything else (variables, operators, records, calls) is not a
// term and is rejected, as erl rejects it.
//
// Decisions, all checked against erl 25:
//
//   - Non-ASCII characters are written as UTF-8 inside quotes. file:consult
//     reads UTF-8 unless the file's first two lines carry a "coding: latin-1"
//     comment; Reader and ParseAll honour that comment too.
//   - Characters that are not printable (controls, C1 controls, format and
//     unassigned code points) are written as escapes (\n, \t, \x{HEX}).
//   - A list is written as a string only when every element is a printable
//     code point or \n, \t, \r; otherwise as [1,2,3]. A binary is written as
//     <<"text">> when every byte is printable ASCII or \n, \t, \r, as
//     <<"text"/utf8>> when it is such UTF-8 text with non-ASCII characters,
//     and as <<1,2,3>> otherwise. A bit string ends with a Value:Bits segment.
//   - Floats use the shorter of plain and scientific notation, always with a
//     digit on both sides of the point (1.0e10, 0.1, -0.0), which is what
//     erl_scan requires; the digits are the shortest that round-trip.
//   - Map pairs are written in CompareExact order of their keys.
//   - Pids, references, ports and local funs have no text form that erl can
//     read. Format writes them as #Pid<HEX>, #Ref<HEX>, #Port<HEX> or
//     #Fun<HEX> (HEX is the raw external encoding) for people to read;
//     FormatStrict refuses them. External funs are written as fun M:F/A,
//     which erl and Parse both read back.
//   - The reader limits nesting to maxTextDepth levels (one more than
//     Decode's MaxDepth) and the bits that sized binary segments may add
//     beyond their source text (<<0:100000000>>) to 8 Mibit per term, so
//     hostile input cannot exhaust the stack or memory. Work is linear in
//     the input except for very long integer literals (n log^2 n).
//   - The reader follows OTP 25's reserved words, so a bare maybe or else
//     reads as an atom; the printer quotes them, as OTP 27 needs.
//   - Native endianness in binary segments is taken to be little-endian.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxTextDepth bounds the nesting of tuples, lists, maps and parentheses
	// in FormatStrict and the reader: one level more than Decode's MaxDepth
	// (which counts from 0), so every term Decode returns has a text form.
	maxTextDepth = MaxDepth + 1
	// maxSegmentBits bounds, per term, the bits that binary segments with an
	// explicit size (<<0:1000000>>, <<"ab":4096>>) may produce beyond 64
	// bits per segment.
	maxSegmentBits = 1 << 23
	// maxTextAtom is Erlang's limit on the length of an atom.
	maxTextAtom = 255
)

// ErrNoText marks a term that has no Erlang text form that erl (or Parse)
// reads back as the same term. Details are in *FormatError.
var ErrNoText = errors.New("etf: term has no Erlang text form")

// FormatError says why FormatStrict could not write a term.
type FormatError struct {
	Reason string // e.g. "pid has no text form"
}

func (e *FormatError) Error() string { return "etf: cannot write term as Erlang text: " + e.Reason }

// Is makes every *FormatError match ErrNoText.
func (e *FormatError) Is(target error) bool { return target == ErrNoText }

// ---------------------------------------------------------------------------
// Printer

// Format returns t in Erlang syntax that erl parses back (file:consult/1,
// erl_scan plus erl_parse:parse_term/1) to a term =:= t, without a final
// dot. Terms with no such form (pids, references, ports, local funs, NaN,
// malformed values) are written in a readable form that does not parse; use
// FormatStrict to detect them.
func Format(t Term) string {
	return string(AppendFormat(nil, t))
}

// AppendFormat appends Format(t) to dst and returns the extended buffer.
func AppendFormat(dst []byte, t Term) []byte {
	p := printer{buf: dst}
	p.term(t)
	return p.buf
}

// FormatStrict returns Format(t), or an error matching ErrNoText when any
// part of t cannot be read back from text: a pid, reference, port or local
// fun, a NaN or infinite float, an atom over 255 characters or with text
// Erlang cannot write, a malformed Bitstring, ImproperList or Map (duplicate
// keys), a nil Term, or nesting deeper than the reader accepts.
func FormatStrict(t Term) (string, error) {
	b, err := AppendFormatStrict(nil, t)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendFormatStrict is FormatStrict appending to dst. On error dst is
// returned unchanged.
func AppendFormatStrict(dst []byte, t Term) ([]byte, error) {
	p := printer{buf: dst}
	p.term(t)
	if p.err != nil {
		return dst, p.err
	}
	return p.buf, nil
}

type printer struct {
	buf   []byte
	err   error // first reason the output would not read back
	depth int
}

// bad records why the output cannot be read back and writes a readable
// marker in its place.
func (p *printer) bad(reason, marker string) {
	if p.err == nil {
		p.err = &FormatError{Reason: reason}
	}
	p.buf = append(p.buf, marker...)
}

func (p *printer) term(t Term) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxTextDepth {
		p.bad(fmt.Sprintf("nesting deeper than %d", maxTextDepth), "#Deep<>")
		return
	}
	switch v := t.(type) {
	case nil:
		p.bad("nil term", "#Invalid<nil>")
	case Atom:
		p.atom(string(v))
	case Int:
		p.buf = strconv.AppendInt(p.buf, int64(v), 10)
	case *BigInt:
		if v == nil {
			p.bad("nil *BigInt", "#Invalid<nil>")
			return
		}
		p.buf = v.v.Append(p.buf, 10)
	case Float:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			p.bad("NaN float", "#Float<NaN>")
		case math.IsInf(f, 1):
			p.bad("infinite float", "#Float<+Inf>")
		case math.IsInf(f, -1):
			p.bad("infinite float", "#Float<-Inf>")
		default:
			p.buf = appendFloat(p.buf, f)
		}
	case Binary:
		p.bits(v, 0, 0)
	case Bitstring:
		p.bitstring(v)
	case Tuple:
		p.buf = append(p.buf, '{')
		for i, e := range v {
			if i > 0 {
				p.buf = append(p.buf, ',')
			}
			p.term(e)
		}
		p.buf = append(p.buf, '}')
	case List:
		p.list(v, nil)
	case *ImproperList:
		if v == nil {
			p.bad("nil *ImproperList", "#Invalid<nil>")
			return
		}
		switch v.Tail.(type) {
		case List, *ImproperList:
			p.bad("improper list with a list tail", "")
		}
		if len(v.Elems) == 0 {
			p.bad("improper list without elements", "")
			p.term(v.Tail)
			return
		}
		p.list(v.Elems, v.Tail)
	case Map:
		p.mapTerm(v)
	case *Opaque:
		p.opaque(v)
	default:
		p.bad(fmt.Sprintf("unknown term type %T", t), "#Invalid<>")
	}
}

// reservedWords are the words erl_scan does not read as atoms when bare.
// maybe and else are reserved from OTP 27 on (and with the maybe_expr
// feature in 25 and 26); quoting them keeps the output readable by all.
var reservedWords = map[string]bool{
	"after": true, "and": true, "andalso": true, "band": true, "begin": true,
	"bnot": true, "bor": true, "bsl": true, "bsr": true, "bxor": true,
	"case": true, "catch": true, "cond": true, "div": true, "end": true,
	"fun": true, "if": true, "let": true, "not": true, "of": true, "or": true,
	"orelse": true, "receive": true, "rem": true, "try": true, "when": true,
	"xor": true, "maybe": true, "else": true,
}

// reservedOTP25 is the set erl_scan in OTP 25 reserves by default; the reader
// follows it, so a bare maybe or else reads as an atom.
func reservedOTP25(s string) bool {
	return reservedWords[s] && s != "maybe" && s != "else"
}

func bareAtom(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '@') {
			return false
		}
	}
	return !reservedWords[s]
}

func (p *printer) atom(s string) {
	if bareAtom(s) {
		if len(s) > maxTextAtom {
			p.bad("atom longer than 255 characters", "")
		}
		p.buf = append(p.buf, s...)
		return
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			p.bad("atom is not valid UTF-8", "")
		case r == 0xFFFE || r == 0xFFFF:
			p.bad(fmt.Sprintf("atom contains U+%04X, which Erlang text cannot express", r), "")
		}
		i += size
		n++
	}
	if n > maxTextAtom {
		p.bad("atom longer than 255 characters", "")
	}
	p.quoted(s, '\'')
}

// printable reports whether r can appear unescaped inside quotes.
func printable(r rune) bool {
	if r < 0x7F {
		return r >= 0x20
	}
	return r >= 0xA0 && r != 0xFFFE && r != 0xFFFF && unicode.IsPrint(r)
}

// textRune reports whether r may be part of a list or binary written as a
// string.
func textRune(r rune) bool {
	return printable(r) || r == '\n' || r == '\t' || r == '\r'
}

// quoted writes s between q quotes with escapes. Invalid UTF-8 bytes are
// written as \x{FFFD}; callers that care have already recorded the error.
func (p *printer) quoted(s string, q byte) {
	p.buf = append(p.buf, q)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		p.quotedRune(r, q)
	}
	p.buf = append(p.buf, q)
}

func (p *printer) quotedRune(r rune, q byte) {
	switch {
	case r == rune(q) || r == '\\':
		p.buf = append(p.buf, '\\', byte(r))
	case printable(r):
		p.buf = utf8.AppendRune(p.buf, r)
	default:
		switch r {
		case '\n':
			p.buf = append(p.buf, `\n`...)
		case '\t':
			p.buf = append(p.buf, `\t`...)
		case '\r':
			p.buf = append(p.buf, `\r`...)
		case '\v':
			p.buf = append(p.buf, `\v`...)
		case '\b':
			p.buf = append(p.buf, `\b`...)
		case '\f':
			p.buf = append(p.buf, `\f`...)
		case 0x1B:
			p.buf = append(p.buf, `\e`...)
		default:
			p.buf = append(p.buf, `\x{`...)
			p.buf = strconv.AppendUint(p.buf, uint64(r), 16)
			p.buf = append(p.buf, '}')
		}
	}
}

// appendFloat writes a finite float with the shortest digits that
// round-trip, in the shorter of plain and scientific notation (plain on a
// tie), always with digits on both sides of the point.
func appendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	ei := bytes.IndexByte(e, 'e')
	mant, expText := e[:ei], e[ei+1:]
	exp, _ := strconv.Atoi(string(expText)) // strconv wrote it; it parses
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	// Scientific: d.ddd e X, with at least one fraction digit.
	sci := make([]byte, 0, 32)
	sci = append(sci, digits[0], '.')
	if len(digits) > 1 {
		sci = append(sci, digits[1:]...)
	} else {
		sci = append(sci, '0')
	}
	sci = append(sci, 'e')
	sci = strconv.AppendInt(sci, int64(exp), 10)
	// Plain: the point sits after digit exp+1.
	plain := make([]byte, 0, 32)
	switch {
	case exp < 0:
		plain = append(plain, "0."...)
		for i := 0; i < -exp-1; i++ {
			plain = append(plain, '0')
		}
		plain = append(plain, digits...)
	case len(digits) <= exp+1:
		plain = append(plain, digits...)
		for i := len(digits); i < exp+1; i++ {
			plain = append(plain, '0')
		}
		plain = append(plain, ".0"...)
	default:
		plain = append(plain, digits[:exp+1]...)
		plain = append(plain, '.')
		plain = append(plain, digits[exp+1:]...)
	}
	if neg {
		dst = append(dst, '-')
	}
	if len(sci) < len(plain) {
		return append(dst, sci...)
	}
	return append(dst, plain...)
}

func (p *printer) bitstring(v Bitstring) {
	if len(v.Bytes) == 0 || v.Bits < 1 || v.Bits > 7 {
		p.bad("malformed Bitstring", "")
		if len(v.Bytes) == 0 {
			p.buf = append(p.buf, "<<>>"...)
			return
		}
		if v.Bits == 0 || v.Bits >= 8 {
			p.bits(v.Bytes, 0, 0)
			return
		}
	}
	last := v.Bytes[len(v.Bytes)-1]
	if last&(0xFF>>v.Bits) != 0 {
		p.bad("Bitstring with non-zero padding bits", "")
	}
	p.bits(v.Bytes[:len(v.Bytes)-1], last>>(8-v.Bits), v.Bits)
}

// bits writes <<b..., tail:tailBits>> (no tail segment when tailBits is 0).
func (p *printer) bits(b []byte, tail byte, tailBits uint8) {
	p.buf = append(p.buf, "<<"...)
	if len(b) > 0 {
		switch {
		case asciiText(b):
			p.buf = append(p.buf, '"')
			for _, c := range b {
				p.quotedRune(rune(c), '"')
			}
			p.buf = append(p.buf, '"')
		case utf8Text(b):
			p.quoted(string(b), '"')
			p.buf = append(p.buf, "/utf8"...)
		default:
			for i, c := range b {
				if i > 0 {
					p.buf = append(p.buf, ',')
				}
				p.buf = strconv.AppendUint(p.buf, uint64(c), 10)
			}
		}
	}
	if tailBits > 0 {
		if len(b) > 0 {
			p.buf = append(p.buf, ',')
		}
		p.buf = strconv.AppendUint(p.buf, uint64(tail), 10)
		p.buf = append(p.buf, ':')
		p.buf = strconv.AppendUint(p.buf, uint64(tailBits), 10)
	}
	p.buf = append(p.buf, ">>"...)
}

func asciiText(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || !textRune(rune(c)) {
			return false
		}
	}
	return true
}

func utf8Text(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !textRune(r) {
			return false
		}
	}
	return true
}

// list writes a proper list (tail nil) or [elems|tail].
func (p *printer) list(elems []Term, tail Term) {
	if tail == nil {
		if len(elems) == 0 {
			p.buf = append(p.buf, "[]"...)
			return
		}
		if isText(elems) {
			p.buf = append(p.buf, '"')
			for _, e := range elems {
				p.quotedRune(rune(e.(Int)), '"')
			}
			p.buf = append(p.buf, '"')
			return
		}
	}
	p.buf = append(p.buf, '[')
	for i, e := range elems {
		if i > 0 {
			p.buf = append(p.buf, ',')
		}
		p.term(e)
	}
	if tail != nil {
		p.buf = append(p.buf, '|')
		p.term(tail)
	}
	p.buf = append(p.buf, ']')
}

func isText(elems []Term) bool {
	for _, e := range elems {
		i, ok := e.(Int)
		if !ok || i < 0 || i > unicode.MaxRune || !textRune(rune(i)) {
			return false
		}
	}
	return true
}

func (p *printer) mapTerm(m Map) {
	pairs := slices.Clone(m)
	slices.SortStableFunc(pairs, func(a, b Pair) int { return CompareExact(a.Key, b.Key) })
	for i := 1; i < len(pairs); i++ {
		if CompareExact(pairs[i-1].Key, pairs[i].Key) == 0 {
			p.bad("map with duplicate keys", "")
			break
		}
	}
	p.buf = append(p.buf, "#{"...)
	for i, kv := range pairs {
		if i > 0 {
			p.buf = append(p.buf, ',')
		}
		p.term(kv.Key)
		p.buf = append(p.buf, " => "...)
		p.term(kv.Value)
	}
	p.buf = append(p.buf, '}')
}

func (p *printer) opaque(o *Opaque) {
	if o == nil {
		p.bad("nil *Opaque", "#Invalid<nil>")
		return
	}
	if m, f, arity, ok := exportParts(o.Raw); ok {
		p.buf = append(p.buf, "fun "...)
		p.atom(m)
		p.buf = append(p.buf, ':')
		p.atom(f)
		p.buf = append(p.buf, '/')
		p.buf = strconv.AppendInt(p.buf, int64(arity), 10)
		return
	}
	name := "Opaque"
	switch o.Type() {
	case TypePid:
		name = "Pid"
	case TypePort:
		name = "Port"
	case TypeFun:
		name = "Fun"
	case TypeReference:
		if len(o.Raw) > 0 {
			name = "Ref"
		}
	}
	marker := make([]byte, 0, len(name)+3+2*len(o.Raw))
	marker = append(marker, '#')
	marker = append(marker, name...)
	marker = append(marker, '<')
	marker = fmt.Appendf(marker, "%X", o.Raw)
	marker = append(marker, '>')
	p.bad(strings.ToLower(name)+" has no text form", string(marker))
}

// exportParts splits the encoding of an external fun (fun M:F/A) into its
// module, function and arity.
func exportParts(raw []byte) (m, f string, arity int, ok bool) {
	if len(raw) == 0 || raw[0] != tagExport {
		return "", "", 0, false
	}
	rest := raw[1:]
	if m, rest, ok = rawAtom(rest); !ok {
		return "", "", 0, false
	}
	if f, rest, ok = rawAtom(rest); !ok {
		return "", "", 0, false
	}
	if len(rest) != 2 || rest[0] != tagSmallInteger {
		return "", "", 0, false
	}
	return m, f, int(rest[1]), true
}

// rawAtom reads one atom encoding from the front of b.
func rawAtom(b []byte) (string, []byte, bool) {
	if len(b) < 2 {
		return "", nil, false
	}
	var n, hdr int
	switch b[0] {
	case tagAtom, tagAtomUTF8:
		if len(b) < 3 {
			return "", nil, false
		}
		n, hdr = int(b[1])<<8|int(b[2]), 3
	case tagSmallAtom, tagSmallAtomUTF8:
		n, hdr = int(b[1]), 2
	default:
		return "", nil, false
	}
	if len(b)-hdr < n {
		return "", nil, false
	}
	text := b[hdr : hdr+n]
	switch b[0] {
	case tagAtom, tagSmallAtom: // Latin-1
		rs := make([]rune, len(text))
		for i, c := range text {
			rs[i] = rune(c)
		}
		return string(rs), b[hdr+n:], true
	}
	if !utf8.Valid(text) {
		return "", nil, false
	}
	return string(text), b[hdr+n:], true
}

// exportRaw is the encoding OTP 25's term_to_binary gives fun M:F/A: atoms
// as ATOM_EXT when they are Latin-1, else SMALL_ATOM_UTF8 or ATOM_UTF8, and
// the arity as SMALL_INTEGER_EXT.
func exportRaw(m, f string, arity int) []byte {
	b := []byte{tagExport}
	b = appendRawAtom(b, m)
	b = appendRawAtom(b, f)
	return append(b, tagSmallInteger, byte(arity))
}

func appendRawAtom(b []byte, a string) []byte {
	latin1 := true
	n := 0
	for _, r := range a {
		if r > 0xFF {
			latin1 = false
		}
		n++
	}
	if latin1 {
		b = append(b, tagAtom, byte(n>>8), byte(n))
		for _, r := range a {
			b = append(b, byte(r))
		}
		return b
	}
	if len(a) <= 255 {
		b = append(b, tagSmallAtomUTF8, byte(len(a)))
	} else {
		b = append(b, tagAtomUTF8, byte(len(a)>>8), byte(len(a)))
	}
	return append(b, a...)
}

// ---------------------------------------------------------------------------
// Lexer

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

// ---------------------------------------------------------------------------
// Parser

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

// ---------------------------------------------------------------------------
// Binaries

// segSpec is a binary segment's type specifier list, as erl_bits merges it.
type segSpec struct {
	typ    string // integer, float, binary, utf8, utf16, utf32; "" unset
	unit   int    // 0 unset
	signed string // signed, unsigned; "" unset
	endian string // big, little, native; "" unset
}

func (p *parser) binary() (Term, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	var w bitWriter
	if !p.tok.is(">>") {
		for {
			if err := p.segment(&w); err != nil {
				return nil, err
			}
			if p.tok.is(",") {
				if err := p.advance(); err != nil {
					return nil, err
				}
				continue
			}
			break
		}
	}
	if err := p.expect(">>"); err != nil {
		return nil, err
	}
	if w.n%8 == 0 {
		if w.b == nil {
			return Binary{}, nil
		}
		return Binary(w.b), nil
	}
	return Bitstring{Bytes: w.b, Bits: uint8(w.n % 8)}, nil
}

// segment reads Value[:Size][/Types] and writes its bits.
func (p *parser) segment(w *bitWriter) error {
	start := p.tok
	// Segment values and sizes sit at the binary's own level: a binary
	// nests no deeper than Format writes it.
	p.depth--
	defer func() { p.depth++ }()
	// The value: a string literal (possibly in parentheses) expands to one
	// segment per character; anything else is one term.
	var (
		str   []rune
		isStr bool
		val   Term
	)
	parens := 0
	for p.tok.is("(") {
		if err := p.enter(); err != nil {
			return err
		}
		parens++
		if err := p.advance(); err != nil {
			return err
		}
	}
	if p.tok.kind == tString {
		var err error
		if str, err = p.strings(); err != nil {
			return err
		}
		isStr = true
	} else {
		var err error
		if val, err = p.expr(); err != nil {
			return err
		}
	}
	for ; parens > 0; parens-- {
		p.depth--
		if err := p.expect(")"); err != nil {
			return err
		}
	}

	// The size: an integer, a character, all, or a parenthesised term.
	var size Term
	if p.tok.is(":") {
		if err := p.advance(); err != nil {
			return err
		}
		switch {
		case p.tok.kind == tInt, p.tok.kind == tChar, p.tok.kind == tAtom, p.tok.is("("):
			var err error
			if size, err = p.expr(); err != nil {
				return err
			}
		default:
			return p.errTok(&p.tok, "bad segment size: %s", p.tok.describe())
		}
	}

	var spec segSpec
	if p.tok.is("/") {
		for {
			if err := p.advance(); err != nil {
				return err
			}
			if err := p.typeSpec(&spec); err != nil {
				return err
			}
			if !p.tok.is("-") {
				break
			}
		}
	}
	return p.emit(w, &start, spec, size, isStr, str, val)
}

// typeSpec reads one type specifier (an atom, or unit:N) into spec.
func (p *parser) typeSpec(spec *segSpec) error {
	t := p.tok
	if t.kind != tAtom {
		return p.errTok(&t, "expected a type specifier, found %s", t.describe())
	}
	if err := p.advance(); err != nil {
		return err
	}
	set := func(field *string, v string) error {
		if *field != "" && *field != v {
			return p.errTok(&t, "conflicting type specifiers %s and %s", *field, v)
		}
		*field = v
		return nil
	}
	setUnit := func(u int) error {
		if spec.unit != 0 && spec.unit != u {
			return p.errTok(&t, "conflicting units %d and %d", spec.unit, u)
		}
		spec.unit = u
		return nil
	}
	if t.text == "unit" && p.tok.is(":") {
		if err := p.advance(); err != nil {
			return err
		}
		u, ok := p.tok.num.(Int)
		if p.tok.kind != tInt || !ok || u < 1 || u > 256 {
			return p.errTok(&p.tok, "unit must be an integer from 1 to 256")
		}
		if err := p.advance(); err != nil {
			return err
		}
		return setUnit(int(u))
	}
	if p.tok.is(":") {
		return p.errTok(&t, "unknown type specifier %s:...", t.text)
	}
	switch t.text {
	case "integer", "float", "binary", "utf8", "utf16", "utf32":
		return set(&spec.typ, t.text)
	case "bytes":
		if err := set(&spec.typ, "binary"); err != nil {
			return err
		}
		return setUnit(8)
	case "bitstring", "bits":
		if err := set(&spec.typ, "binary"); err != nil {
			return err
		}
		return setUnit(1)
	case "signed", "unsigned":
		return set(&spec.signed, t.text)
	case "big", "little", "native":
		return set(&spec.endian, t.text)
	}
	return p.errTok(&t, "unknown type specifier %s", t.text)
}

// emit applies erl_bits' defaults and checks, then writes the segment.
func (p *parser) emit(w *bitWriter, at *token, spec segSpec, size Term, isStr bool, str []rune, val Term) error {
	bad := func(format string, args ...any) error {
		return p.errTok(at, "bad binary segment: "+format, args...)
	}
	if spec.typ == "" {
		spec.typ = "integer"
	}
	var all bool
	var sz int64
	switch s := size.(type) {
	case nil:
		switch spec.typ {
		case "binary":
			all = true
		case "integer", "float":
			if spec.unit != 0 {
				return bad("unit without size")
			}
			sz, spec.unit = 8, 1
			if spec.typ == "float" {
				sz = 64
			}
		}
	case Int:
		if s < 0 {
			return bad("negative size")
		}
		sz = int64(min(s, maxSegmentBits+65)) // larger is refused below
	case Atom:
		if s != "all" || spec.typ != "binary" {
			return bad("size must be an integer")
		}
		all = true
	default:
		return bad("size must be a non-negative integer")
	}
	switch spec.typ {
	case "utf8", "utf16", "utf32":
		if size != nil || spec.unit != 0 {
			return bad("%s takes no size or unit", spec.typ)
		}
	case "binary":
		if spec.unit == 0 {
			spec.unit = 8
		}
	default:
		if spec.unit == 0 {
			spec.unit = 1
		}
	}
	nbits := sz * int64(spec.unit)
	little := spec.endian == "little" || spec.endian == "native"

	one := func(w *bitWriter, v Term) error {
		if excess := nbits - 64; !all && spec.typ != "binary" && excess > 0 {
			if excess > p.budget {
				return bad("sized segments exceed %d bits", maxSegmentBits)
			}
			p.budget -= excess
		}
		switch spec.typ {
		case "integer":
			switch v.(type) {
			case Int, *BigInt:
				w.writeInt(v, uint64(nbits), little)
				return nil
			}
			return bad("integer segment needs an integer value")
		case "float":
			var f float64
			switch x := v.(type) {
			case Int:
				f = float64(x)
			case *BigInt:
				f, _ = new(big.Float).SetInt(&x.v).Float64()
				if math.IsInf(f, 0) {
					return bad("integer too large for a float segment")
				}
			case Float:
				f = float64(x)
			default:
				return bad("float segment needs a number")
			}
			return w.writeFloat(f, nbits, little, bad)
		case "binary":
			var b []byte
			var n int
			switch x := v.(type) {
			case Binary:
				b, n = x, 8*len(x)
			case Bitstring:
				b, n = x.Bytes, 8*len(x.Bytes)-8+int(x.Bits) // well formed: built by this parser
			default:
				return bad("binary segment needs a binary value")
			}
			if all {
				if n%spec.unit != 0 {
					return bad("binary of %d bits is not a multiple of unit %d", n, spec.unit)
				}
				w.writeBits(b, uint64(n))
				return nil
			}
			if nbits > int64(n) {
				return bad("size %d bits exceeds the %d-bit value", nbits, n)
			}
			w.writeBits(b, uint64(nbits))
			return nil
		default: // utf8, utf16, utf32
			c, ok := v.(Int)
			if !ok || c < 0 || c > unicode.MaxRune || c >= 0xD800 && c <= 0xDFFF {
				return bad("%s segment needs a Unicode code point", spec.typ)
			}
			w.writeUTF(rune(c), spec.typ, little)
			return nil
		}
	}
	if isStr {
		if len(str) == 0 {
			// Check the specifiers as erl does, writing nothing.
			return one(new(bitWriter), Int(0))
		}
		for _, c := range str {
			if err := one(w, Int(c)); err != nil {
				return err
			}
		}
		return nil
	}
	return one(w, val)
}

// bitWriter appends bits most significant first.
type bitWriter struct {
	b []byte
	n uint64 // bits written
}

// writeUint writes the low nbits (<= 64) of v.
func (w *bitWriter) writeUint(v uint64, nbits uint) {
	for nbits > 0 {
		off := uint(w.n % 8)
		if off == 0 {
			w.b = append(w.b, 0)
		}
		take := min(8-off, nbits)
		chunk := (v >> (nbits - take)) & (1<<take - 1)
		w.b[len(w.b)-1] |= byte(chunk << (8 - off - take))
		w.n += uint64(take)
		nbits -= take
	}
}

// writeBits writes the first nbits of src.
func (w *bitWriter) writeBits(src []byte, nbits uint64) {
	full := nbits / 8
	if w.n%8 == 0 {
		w.b = append(w.b, src[:full]...)
		w.n += 8 * full
	} else {
		for _, c := range src[:full] {
			w.writeUint(uint64(c), 8)
		}
	}
	if rem := uint(nbits % 8); rem > 0 {
		w.writeUint(uint64(src[full]>>(8-rem)), rem)
	}
}

// writeInt writes v modulo 2^nbits, big- or little-endian. Little-endian
// with a size that is not a multiple of 8 puts the low bytes first and the
// top nbits%8 bits last, as Erlang does.
func (w *bitWriter) writeInt(v Term, nbits uint64, little bool) {
	if x, ok := v.(Int); ok && nbits <= 64 {
		u := uint64(x)
		if !little {
			w.writeUint(u, uint(nbits))
			return
		}
		for i := uint64(0); i < nbits/8; i++ {
			w.writeUint(u>>(8*i), 8)
		}
		if rem := uint(nbits % 8); rem > 0 {
			w.writeUint(u>>(8*(nbits/8)), rem)
		}
		return
	}
	var x big.Int
	switch t := v.(type) {
	case Int:
		x.SetInt64(int64(t))
	case *BigInt:
		x.Set(&t.v)
	}
	mask := new(big.Int).Lsh(big.NewInt(1), uint(nbits))
	mask.Sub(mask, big.NewInt(1))
	x.And(&x, mask) // two's complement for negative values
	nbytes := (nbits + 7) / 8
	if !little {
		x.Lsh(&x, uint(8*nbytes-nbits)) // align the top bit to a byte edge
		w.writeBits(x.FillBytes(make([]byte, nbytes)), nbits)
		return
	}
	be := x.FillBytes(make([]byte, nbytes))
	for i := uint64(0); i < nbits/8; i++ {
		w.writeUint(uint64(be[nbytes-1-i]), 8)
	}
	if rem := uint(nbits % 8); rem > 0 {
		w.writeUint(uint64(be[0]), rem)
	}
}

func (w *bitWriter) writeFloat(f float64, nbits int64, little bool, bad func(string, ...any) error) error {
	var u uint64
	switch nbits {
	case 64:
		u = math.Float64bits(f)
	case 32:
		u = uint64(math.Float32bits(float32(f)))
	case 16:
		u = uint64(float16Bits(f))
	default:
		return bad("float segment must be 16, 32 or 64 bits")
	}
	if little {
		for i := int64(0); i < nbits/8; i++ {
			w.writeUint(u>>(8*i), 8)
		}
		return nil
	}
	w.writeUint(u, uint(nbits))
	return nil
}

// float16Bits converts to IEEE half precision, rounding to nearest even and
// overflowing to infinity, as Erlang's <<F:16/float>> does.
func float16Bits(f float64) uint16 {
	var sign uint16
	if math.Signbit(f) {
		sign = 0x8000
	}
	a := math.Abs(f)
	switch {
	case a >= 65520: // halfway above the largest half, 65504, rounds up
		return sign | 0x7C00
	case a < 0x1p-14: // subnormal: units of 2^-24
		return sign | uint16(math.RoundToEven(a*0x1p24))
	}
	frac, exp := math.Frexp(a) // a = frac * 2^exp, frac in [0.5, 1)
	e := exp - 1 + 15
	m := math.RoundToEven((2*frac - 1) * 1024)
	if m == 1024 {
		m = 0
		e++
	}
	if e >= 31 {
		return sign | 0x7C00
	}
	return sign | uint16(e)<<10 | uint16(m)
}

func (w *bitWriter) writeUTF(c rune, typ string, little bool) {
	switch typ {
	case "utf8":
		var tmp [4]byte
		n := utf8.EncodeRune(tmp[:], c)
		for _, b := range tmp[:n] {
			w.writeUint(uint64(b), 8)
		}
	case "utf16":
		units := []uint16{uint16(c)}
		if c >= 0x10000 {
			c -= 0x10000
			units = []uint16{uint16(0xD800 + c>>10), uint16(0xDC00 + c&0x3FF)}
		}
		for _, u := range units {
			if little {
				u = u<<8 | u>>8
			}
			w.writeUint(uint64(u), 16)
		}
	default: // utf32
		u := uint32(c)
		if little {
			u = u>>24 | u>>8&0xFF00 | u<<8&0xFF0000 | u<<24
		}
		w.writeUint(uint64(u), 32)
	}
}

// ---------------------------------------------------------------------------
// Entry points

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

// ParseAll reads a sequence of terms, each followed by a dot, as
// file:consult/1 reads a file: UTF-8 unless a "coding: latin-1" comment in
// the first two lines says Latin-1. Errors are *SyntaxError with the line.
func ParseAll(s string) ([]Term, error) {
	r := NewReader(strings.NewReader(s))
	var out []Term
	for {
		t, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
}

// Reader reads terms in file:consult/1 syntax from a stream, one at a time,
// without holding the whole input in memory. Like file:consult/1 it reads
// UTF-8 unless a comment in the first two lines declares Latin-1.
type Reader struct {
	src  consultSource
	p    parser
	line int
	err  error
}

// NewReader returns a Reader over r. It buffers its input.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{src: consultSource{br: bufio.NewReaderSize(r, 64<<10)}}
	rd.p.lx.init(&rd.src)
	return rd
}

// Next returns the next term, io.EOF after the last one, a *SyntaxError
// (with the line) for bad text, or the underlying read error. Errors are
// sticky: after one, Next keeps returning it.
func (r *Reader) Next() (Term, error) {
	if r.err != nil {
		return nil, r.err
	}
	t, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return t, nil
}

// Line returns the line on which the term last returned by Next started.
func (r *Reader) Line() int { return r.line }

func (r *Reader) next() (Term, error) {
	p := &r.p
	p.reset()
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, io.EOF
	}
	r.line = p.tok.line
	t, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tDot {
		if p.tok.kind == tEOF {
			return nil, p.errTok(&p.tok, "missing '.' after the last term")
		}
		return nil, p.errTok(&p.tok, "expected '.' after the term, found %s", p.tok.describe())
	}
	return t, nil
}

// headerSize is how far epp looks for an encoding comment: the first two
// lines, within the first 512 bytes.
const headerSize = 512

// consultSource decodes a stream as file:consult/1 would. Only bytes from
// 0x80 up depend on the encoding, so while the text is ASCII it is passed
// on at once (an interactive stream gets each term as soon as it is
// complete); the first non-ASCII byte decides, from the header.
type consultSource struct {
	br     *bufio.Reader
	latin1 bool
	known  bool   // encoding decided
	head   []byte // bytes read while undecided, at most headerSize
	lines  int    // newlines in head
}

func (s *consultSource) ReadRune() (rune, int, error) {
	if s.known {
		if s.latin1 {
			b, err := s.br.ReadByte()
			return rune(b), 1, err
		}
		return s.br.ReadRune()
	}
	b, err := s.br.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	if b < 0x80 {
		s.head = append(s.head, b)
		if b == '\n' {
			s.lines++
		}
		if s.lines >= 2 || len(s.head) >= headerSize {
			s.decide(s.head)
		}
		return rune(b), 1, nil
	}
	// The header may continue past this byte: peek at the rest of it.
	_ = s.br.UnreadByte() // cannot fail right after ReadByte
	header := s.head
	for n := 1; ; n++ {
		ahead, err := s.br.Peek(n)
		if err != nil || len(s.head)+len(ahead) >= headerSize || s.lines+bytes.Count(ahead, []byte("\n")) >= 2 {
			header = append(slices.Clip(s.head), ahead...)
			break
		}
	}
	s.decide(header)
	return s.ReadRune()
}

func (s *consultSource) decide(header []byte) {
	s.known, s.latin1, s.head = true, declaresLatin1(header), nil
}

// declaresLatin1 reports whether a comment in the first two lines of head
// declares Latin-1 ("coding: latin-1"), the way epp:set_encoding/1 reads it:
// in a comment, "coding", optional spaces, ':' or '=', optional spaces, then
// a name whose '-'-separated parts start latin, 1 (or utf, 8 for UTF-8).
// The first such declaration decides.
func declaresLatin1(head []byte) bool {
	lines := 0
	inComment := false
	for i := 0; i < len(head) && lines < 2; i++ {
		c := head[i]
		switch {
		case c == '\n':
			lines++
			inComment = false
		case !inComment:
			inComment = c == '%'
		case c == 'c' && bytes.HasPrefix(head[i+1:], []byte("oding")):
			j := i + 6
			for j < len(head) && head[j] == ' ' {
				j++
			}
			if j >= len(head) || head[j] != ':' && head[j] != '=' {
				i = j - 1
				continue
			}
			j++
			for j < len(head) && head[j] == ' ' {
				j++
			}
			var parts []string
			var cur []byte
			for ; j < len(head); j++ {
				b := head[j]
				if b >= 'a' && b <= 'z' || b >= '0' && b <= '9' {
					cur = append(cur, b)
				} else if b >= 'A' && b <= 'Z' {
					cur = append(cur, b+'a'-'A')
				} else if b == '-' {
					parts = append(parts, string(cur))
					cur = cur[:0]
				} else {
					break
				}
			}
			parts = append(parts, string(cur))
			return len(parts) >= 2 && parts[0] == "latin" && parts[1] == "1"
		}
	}
	return false
}
