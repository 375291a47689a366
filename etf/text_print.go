package etf

// The printer: Erlang text for a Term (Format, FormatStrict), atoms and
// strings quoted as erl writes them, and the shortest round-tripping floats.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
		p.buf = strconv.AppendUint(p.buf, uint64(arity), 10)
		if arity > 255 {
			// erl writes it so too (~w), but neither erl nor Parse reads it.
			p.bad("export arity over 255 has no text form", "")
		}
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
// module, function and arity. It reads them as Compare does: the arity may
// be any integer encoding, and OTP keeps its low 32 bits.
func exportParts(raw []byte) (m, f string, arity uint32, ok bool) {
	if len(raw) == 0 || raw[0] != tagExport {
		return "", "", 0, false
	}
	d := decoder{b: raw, off: 1}
	mod, err1 := d.atom()
	fun, err2 := d.atom()
	a, err3 := d.smallInt("export arity", 0)
	if err1 != nil || err2 != nil || err3 != nil || a < 0 || d.off != len(raw) {
		return "", "", 0, false
	}
	return string(mod), string(fun), uint32(a), true
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
