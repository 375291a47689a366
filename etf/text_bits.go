package etf

// Binary segments: the <<Value:Size/Types>> bit syntax, with erl_bits'
// defaults and checks, and the writer that packs the bits.

import (
	"math"
	"math/big"
	"unicode"
	"unicode/utf8"
)

// segSpec is a binary segment's type specifier list, as erl_bits merges it.
// The zero value of each field means the text left it unset.
type segSpec struct {
	typ    segType
	unit   int // 0 unset
	signed segSign
	endian segEndian
}

// segType is a segment's type: integer, float, binary (also written bytes,
// bitstring, bits) or one of the UTF encodings.
type segType uint8

const (
	segTypeUnset segType = iota
	segInteger
	segFloat
	segBinary
	segUTF8
	segUTF16
	segUTF32
)

// String is the specifier as Erlang writes it, for error messages.
func (t segType) String() string {
	return [...]string{"", "integer", "float", "binary", "utf8", "utf16", "utf32"}[t]
}

// segSign is signed or unsigned; it changes no bits the writer produces
// (the value is written modulo 2^size either way) but conflicts are errors.
type segSign uint8

const (
	segSignUnset segSign = iota
	segSigned
	segUnsigned
)

func (s segSign) String() string { return [...]string{"", "signed", "unsigned"}[s] }

// segEndian is the byte order; native is taken to be little.
type segEndian uint8

const (
	segEndianUnset segEndian = iota
	segBig
	segLittle
	segNative
)

func (e segEndian) String() string { return [...]string{"", "big", "little", "native"}[e] }

// segWords are the specifier atoms and what each sets; bytes and bits set
// a unit as well as the type.
var segWords = map[string]segSpec{
	"integer": {typ: segInteger}, "float": {typ: segFloat}, "binary": {typ: segBinary},
	"utf8": {typ: segUTF8}, "utf16": {typ: segUTF16}, "utf32": {typ: segUTF32},
	"bytes": {typ: segBinary, unit: 8}, "bitstring": {typ: segBinary, unit: 1}, "bits": {typ: segBinary, unit: 1},
	"signed": {signed: segSigned}, "unsigned": {signed: segUnsigned},
	"big": {endian: segBig}, "little": {endian: segLittle}, "native": {endian: segNative},
}

// setSpec sets one specifier field to v unless v is unset, refusing a
// different earlier value.
func setSpec[T comparable](field *T, v T) bool {
	var unset T
	if v == unset {
		return true
	}
	if *field != unset && *field != v {
		return false
	}
	*field = v
	return true
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
	word, ok := segWords[t.text]
	if !ok {
		return p.errTok(&t, "unknown type specifier %s", t.text)
	}
	conflict := func(old, v any) error {
		return p.errTok(&t, "conflicting type specifiers %s and %s", old, v)
	}
	if old := spec.typ; !setSpec(&spec.typ, word.typ) {
		return conflict(old, word.typ)
	}
	if old := spec.signed; !setSpec(&spec.signed, word.signed) {
		return conflict(old, word.signed)
	}
	if old := spec.endian; !setSpec(&spec.endian, word.endian) {
		return conflict(old, word.endian)
	}
	if word.unit != 0 {
		return setUnit(word.unit)
	}
	return nil
}

// emit applies erl_bits' defaults and checks, then writes the segment.
func (p *parser) emit(w *bitWriter, at *token, spec segSpec, size Term, isStr bool, str []rune, val Term) error {
	bad := func(format string, args ...any) error {
		return p.errTok(at, "bad binary segment: "+format, args...)
	}
	if spec.typ == segTypeUnset {
		spec.typ = segInteger
	}
	var all bool
	var sz int64
	switch s := size.(type) {
	case nil:
		switch spec.typ {
		case segBinary:
			all = true
		case segInteger, segFloat:
			if spec.unit != 0 {
				return bad("unit without size")
			}
			sz, spec.unit = 8, 1
			if spec.typ == segFloat {
				sz = 64
			}
		}
	case Int:
		if s < 0 {
			return bad("negative size")
		}
		sz = int64(min(s, maxSegmentBits+65)) // larger is refused below
	case Atom:
		if s != "all" || spec.typ != segBinary {
			return bad("size must be an integer")
		}
		all = true
	default:
		return bad("size must be a non-negative integer")
	}
	switch spec.typ {
	case segUTF8, segUTF16, segUTF32:
		if size != nil || spec.unit != 0 {
			return bad("%s takes no size or unit", spec.typ)
		}
	case segBinary:
		if spec.unit == 0 {
			spec.unit = 8
		}
	default:
		if spec.unit == 0 {
			spec.unit = 1
		}
	}
	nbits := sz * int64(spec.unit)
	little := spec.endian == segLittle || spec.endian == segNative

	one := func(w *bitWriter, v Term) error {
		if excess := nbits - 64; !all && spec.typ != segBinary && excess > 0 {
			if excess > p.budget {
				return bad("sized segments exceed %d bits", maxSegmentBits)
			}
			p.budget -= excess
		}
		switch spec.typ {
		case segInteger:
			switch v.(type) {
			case Int, *BigInt:
				w.writeInt(v, uint64(nbits), little)
				return nil
			}
			return bad("integer segment needs an integer value")
		case segFloat:
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
		case segBinary:
			b, n, ok := valueBits(v)
			if !ok {
				return bad("binary segment needs a binary value")
			}
			if all {
				if n%int64(spec.unit) != 0 {
					return bad("binary of %d bits is not a multiple of unit %d", n, spec.unit)
				}
				w.writeBits(b, uint64(n))
				return nil
			}
			if nbits > n {
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

// valueBits returns the bytes of a binary segment's value and its length
// in bits. The length is an int64 because 8*len overflows a 32-bit int
// from 256 MiB on.
func valueBits(v Term) ([]byte, int64, bool) {
	switch x := v.(type) {
	case Binary:
		return x, 8 * int64(len(x)), true
	case Bitstring: // well formed: built by this parser
		return x.Bytes, 8*int64(len(x.Bytes)) - 8 + int64(x.Bits), true
	}
	return nil, 0, false
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

func (w *bitWriter) writeUTF(c rune, typ segType, little bool) {
	switch typ {
	case segUTF8:
		var tmp [4]byte
		n := utf8.EncodeRune(tmp[:], c)
		for _, b := range tmp[:n] {
			w.writeUint(uint64(b), 8)
		}
	case segUTF16:
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
