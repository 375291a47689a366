package etf

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// External term format, as read by Decode and written by Encode. All
// integers are big-endian unless noted.
//
//	term      = 131 body | 131 80 Size:u32 zlib(body)   (compressed: Size = len(body))
//	body      = one tagged term:
//	  97  SMALL_INTEGER    u8
//	  98  INTEGER          i32
//	  110 SMALL_BIG        N:u8  Sign:u8 Magnitude[N] (little-endian; Sign != 0 is negative)
//	  111 LARGE_BIG        N:u32 Sign:u8 Magnitude[N]
//	  70  NEW_FLOAT        IEEE-754 double
//	  99  FLOAT            31 bytes of "%.20e" text, NUL padded (decode only)
//	  100 ATOM             Len:u16 latin1[Len]
//	  115 SMALL_ATOM       Len:u8  latin1[Len]
//	  118 ATOM_UTF8        Len:u16 utf8[Len]
//	  119 SMALL_ATOM_UTF8  Len:u8  utf8[Len]
//	  104 SMALL_TUPLE      Arity:u8  term[Arity]
//	  105 LARGE_TUPLE      Arity:u32 term[Arity]
//	  106 NIL
//	  107 STRING           Len:u16 byte[Len]          (the list of those small integers)
//	  108 LIST             Len:u32 term[Len] Tail:term
//	  109 BINARY           Len:u32 byte[Len]
//	  77  BIT_BINARY       Len:u32 Bits:u8 byte[Len]  (Bits used in the last byte, 1..8; 0 only when Len is 0)
//	  116 MAP              Arity:u32 (Key:term Value:term)[Arity]
//	  Opaque terms (kept as raw bytes; opaque.go has OTP's limits on them):
//	  103 PID              Node:atom ID:u32 Serial:u32 Creation:u8
//	  88  NEW_PID          Node:atom ID:u32 Serial:u32 Creation:u32
//	  102 PORT             Node:atom ID:u32 Creation:u8
//	  89  NEW_PORT         Node:atom ID:u32 Creation:u32
//	  120 V4_PORT          Node:atom ID:u64 Creation:u32
//	  101 REFERENCE        Node:atom ID:u32 Creation:u8
//	  114 NEW_REFERENCE    Len:u16 Node:atom Creation:u8  ID:u32[Len]
//	  90  NEWER_REFERENCE  Len:u16 Node:atom Creation:u32 ID:u32[Len]
//	  113 EXPORT           Module:atom Function:atom Arity:integer
//	  112 NEW_FUN          Size:u32 Arity:u8 Uniq[16] Index:u32 NumFree:u32 Module:atom
//	                       OldIndex:integer OldUniq:integer Pid:pid Free:term[NumFree]
//	                       (Size, meant to count from Size itself, is not checked: OTP ignores it)
//	  Refused, as OTP 25's binary_to_term refuses them or as they name
//	  nothing outside one running node:
//	  117 FUN              (pre-R8 funs)
//	  82  ATOM_CACHE_REF   (distribution messages only)
//	  73, 75 ATOM_INTERNAL_REF2, 3
const (
	maxAtomChars = 255 // OTP's limit on an atom's length in characters
	floatExtLen  = 31  // FLOAT_EXT text field
	// MaxDepth bounds the nesting of terms that Decode accepts and Encode
	// writes, so hostile input cannot exhaust the stack. List tails do not
	// count: a long list is flat.
	MaxDepth = 10000
	// maxDeflateRatio is the largest expansion a zlib stream can achieve
	// (about 1032:1 for deflate); a declared size beyond it is a lie.
	maxDeflateRatio = 1032
	// maxBigBytes is the magnitude of OTP's largest integer (2^19-1 words
	// of 8 bytes), whatever its leading zeros.
	maxBigBytes = (1<<19 - 1) * 8
)

// floatNoNULReason explains the refusal of a FLOAT_EXT whose 31 bytes hold
// no NUL: OTP reads on past the field, into the next term or beyond the
// end of the input, and what it accepts then depends on those bytes.
const floatNoNULReason = "FLOAT_EXT text has no NUL within its 31 bytes"

// internalRefReason explains the refusal of ATOM_INTERNAL_REF2 and 3:
// indexes into one running node's atom table, which OTP's binary_to_term
// happens to read, but which name nothing in a file.
const internalRefReason = "ATOM_INTERNAL_REF (an index into a running node's atom table) is only valid inside OTP"

// funKeyOrderReason explains the refusal of a map whose keys OTP 25
// cannot sort (otpMisordersKeys): the map it builds depends on the order
// of the pairs in the encoding, and does not survive a re-encoding.
const funKeyOrderReason = "map keys hold funs whose Index or OldUniq are 2^31 or more apart, which OTP 25 misorders"

// Decode parses one complete external term: the version byte 131, then a
// term, optionally zlib-compressed (tag 80). Bytes after the term are an
// error (OTP's binary_to_term/1 ignores them).
//
// Decode accepts what OTP 25's binary_to_term reads (opaque.go has its
// limits on pids, ports, references and funs, TestOTPMutants the proof),
// except what OTP reads only to crash on, or reads differently on every
// node or from bytes beyond the term: bytes after the term (also inside
// compressed data), funs whose creator is not a pid, references without
// ID words, FLOAT_EXT text without its NUL, ATOM_INTERNAL_REF, maps of up
// to 32 pairs whose keys OTP sorts against term order (funs whose Index
// or OldUniq are 2^31 or more apart: OTP's order of them overflows, so
// its map depends on the order of the pairs and no re-encoding gives it
// back), and terms nested deeper than MaxDepth.
//
// Latin-1 atoms become UTF-8 Atom text; bignums that fit in int64 become
// Int; STRING_EXT becomes a List of Int; lists whose tail is another
// list are flattened; BIT_BINARY with 8 bits in the last byte becomes a
// Binary; pids, ports, references and funs become *Opaque holding their
// exact bytes. The result never aliases b.
//
// Every error is a *DecodeError matching ErrDecode. Decode never panics and
// allocates at most a constant factor more than len(b) (plus the declared
// size of compressed input, which is checked against what zlib can
// produce).
func Decode(b []byte) (Term, error) {
	if len(b) == 0 {
		return nil, derr(0, "empty input")
	}
	if b[0] != tagVersion {
		return nil, derr(0, "version byte %d, want 131", b[0])
	}
	if len(b) >= 2 && b[1] == tagCompressed {
		return decodeCompressed(b)
	}
	if t := decodeFlat(b); t != nil {
		return t, nil
	}
	return decodeWhole(b, nil)
}

// decodeWhole decodes the uncompressed term after b's version byte, which
// must fill b; with bd, small values come from its shared chunks.
func decodeWhole(b []byte, bd *RawBatch) (Term, error) {
	d := decoder{b: b, off: 1, batch: bd}
	t, err := d.term(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(b) {
		return nil, derr(d.off, "%d trailing bytes after the term", len(b)-d.off)
	}
	if d.deepAt != 0 { // inside a fun's free variables, which skip walked
		return nil, d.tooDeep(d.deepAt - 1)
	}
	return t, nil
}

func decodeCompressed(b []byte) (Term, error) {
	d, err := inflate(b)
	if err != nil {
		return nil, err
	}
	t, err := d.term(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(d.b) {
		return nil, derr(d.off, "%d trailing bytes after the term (in decompressed data)", len(d.b)-d.off)
	}
	if d.deepAt != 0 {
		return nil, d.tooDeep(d.deepAt - 1)
	}
	return t, nil
}

// inflate checks and decompresses the zlib term b (131, 80, ...) into a
// decoder positioned at the start of the term it holds.
func inflate(b []byte) (*decoder, error) {
	if len(b) < 6 {
		return nil, derr(len(b), "compressed term header truncated")
	}
	size := binary.BigEndian.Uint32(b[2:6])
	z := b[6:]
	if uint64(size) > uint64(len(z))*maxDeflateRatio {
		return nil, derr(2, "declared uncompressed size %d is impossible for %d compressed bytes", size, len(z))
	}
	br := bytes.NewReader(z)
	zr, err := zlib.NewReader(br)
	if err != nil {
		return nil, derr(6, "bad zlib header: %v", err)
	}
	// Read at most size+1 bytes, growing as data really arrives, so a
	// stream cannot make us allocate beyond what it decompresses to.
	if uint64(size) > math.MaxInt {
		return nil, derr(2, "declared uncompressed size %d is beyond this platform's memory", size)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(uint64(size), 64*uint64(len(z))+64)))
	n, err := io.Copy(&buf, io.LimitReader(zr, int64(size)+1))
	if err != nil {
		return nil, derr(6, "bad zlib data: %v", err)
	}
	if n > int64(size) {
		return nil, derr(2, "declared uncompressed size %d, but the data is longer", size)
	}
	if n < int64(size) {
		return nil, derr(2, "declared uncompressed size %d, but the data holds %d bytes", size, n)
	}
	// Reach the end of the stream so zlib verifies its checksum.
	var one [1]byte
	if k, err := zr.Read(one[:]); k != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			return nil, derr(2, "zlib data longer than declared size %d", size)
		}
		return nil, derr(6, "bad zlib data: %v", err)
	}
	if br.Len() != 0 {
		return nil, derr(len(b)-br.Len(), "%d trailing bytes after the zlib stream", br.Len())
	}
	d := &decoder{b: buf.Bytes(), inflated: true}
	if len(d.b) > 0 && d.b[0] == tagCompressed {
		return nil, derr(0, "nested compressed term (in decompressed data)")
	}
	return d, nil
}

type decoder struct {
	b        []byte
	off      int
	inflated bool // offsets refer to decompressed data
	// deepAt is 1 + the offset of the first term that skip walked past
	// MaxDepth, or 0: skip walks such terms to their end (see Validate).
	deepAt int
	arena  []byte    // backing store for binaries' bytes (see clone)
	batch  *RawBatch // shared backing stores, or nil
}

// clone copies n bytes of input from d.off for a binary, moving past them.
// The copies of one Decode share one allocation, sized by the rest of the
// input (which bounds every later binary); each gets a capped slice, so an
// append to one never writes into another.
func (d *decoder) clone(n int) []byte {
	src := d.take(n)
	if n == 0 {
		return []byte{}
	}
	if bd := d.batch; bd != nil && n <= batchMaxBinary {
		if cap(bd.bytes)-len(bd.bytes) < n {
			bd.bytes = newBytesChunk(bd.bytes)
		}
		a := len(bd.bytes)
		bd.bytes = append(bd.bytes, src...)
		return bd.bytes[a : a+n : a+n]
	}
	if cap(d.arena)-len(d.arena) < n {
		d.arena = make([]byte, 0, n+len(d.b)-d.off)
	}
	a := len(d.arena)
	d.arena = append(d.arena, src...)
	return d.arena[a : a+n : a+n]
}

// tooDeep is the error for a term nested deeper than MaxDepth at off.
func (d *decoder) tooDeep(off int) error {
	e := &DecodeError{Offset: off, Deep: true}
	if d.inflated {
		e.Reason = "(in decompressed data)"
	}
	return e
}

func (d *decoder) errf(off int, format string, args ...any) error {
	e := derr(off, format, args...)
	if d.inflated {
		e.Reason += " (in decompressed data)"
	}
	return e
}

// need checks that n more bytes are available; n may be any size the
// input claims.
func (d *decoder) need(n uint64, what string) error {
	if rem := uint64(len(d.b) - d.off); n > rem {
		return d.errf(d.off, "%s needs %d bytes, %d remain", what, n, rem)
	}
	return nil
}

func (d *decoder) u8() byte {
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u16() uint16 {
	v := binary.BigEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32() uint32 {
	v := binary.BigEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) take(n int) []byte {
	v := d.b[d.off : d.off+n]
	d.off += n
	return v
}

// term decodes the term at d.off.
func (d *decoder) term(depth int) (Term, error) {
	if depth > MaxDepth {
		return nil, d.tooDeep(d.off)
	}
	if err := d.need(1, "tag"); err != nil {
		return nil, err
	}
	start := d.off
	tag := d.u8()
	l := &layouts[tag]
	switch tag {
	case tagSmallInteger:
		if _, err := d.head(l); err != nil {
			return nil, err
		}
		return Int(d.u8()), nil
	case tagInteger:
		if _, err := d.head(l); err != nil {
			return nil, err
		}
		return Int(int32(d.u32())), nil
	case tagSmallBig, tagLargeBig:
		return d.bignum(tag)
	case tagNewFloat:
		if _, err := d.head(l); err != nil {
			return nil, err
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(d.take(8)))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, d.errf(start, "float is not finite")
		}
		return Float(f), nil
	case tagFloat:
		return d.floatText(start)
	case tagAtom, tagSmallAtom, tagAtomUTF8, tagSmallAtomUTF8:
		d.off = start
		a, err := d.atom()
		if err != nil {
			return nil, err
		}
		return a, nil
	case tagSmallTuple, tagLargeTuple:
		n, err := d.head(l)
		if err != nil {
			return nil, err
		}
		if err := d.needBody(l, n); err != nil {
			return nil, err
		}
		t := d.tuple(int(n))
		for i := range t {
			e, err := d.term(depth + 1)
			if err != nil {
				return nil, err
			}
			t[i] = e
		}
		return d.boxTuple(t), nil
	case tagNil:
		return Nil, nil
	case tagString:
		n, err := d.head(l)
		if err != nil {
			return nil, err
		}
		if err := d.needBody(l, n); err != nil {
			return nil, err
		}
		s := make(List, n)
		for i, c := range d.take(int(n)) {
			s[i] = Int(c)
		}
		return s, nil
	case tagList:
		d.off = start
		return d.list(depth)
	case tagBinary:
		n, err := d.head(l)
		if err != nil {
			return nil, err
		}
		if err := d.needBody(l, n); err != nil {
			return nil, err
		}
		return d.boxBinary(d.clone(int(n))), nil
	case tagBitBinary:
		n, bits, err := d.bitHeader(start, l)
		if err != nil {
			return nil, err
		}
		data := d.clone(int(n))
		if bits == 8 || n == 0 {
			return Binary(data), nil
		}
		data[n-1] &= byte(0xFF << (8 - bits))
		return Bitstring{Bytes: data, Bits: bits}, nil
	case tagMap:
		return d.mapTerm(start, depth)
	case tagPid, tagNewPid, tagPort, tagNewPort, tagV4Port, tagReference,
		tagNewReference, tagNewerReference, tagExport, tagNewFun, tagFun:
		d.off = start
		if err := d.skipOpaque(depth); err != nil {
			return nil, err
		}
		return &Opaque{Raw: bytes.Clone(d.b[start:d.off])}, nil
	case tagAtomCacheRef:
		return nil, d.errf(start, "ATOM_CACHE_REF is only valid in distribution messages")
	case tagAtomInternalRef2, tagAtomInternalRef3:
		return nil, d.errf(start, "%s", internalRefReason)
	case tagCompressed:
		return nil, d.errf(start, "compressed term not at top level")
	case tagVersion:
		return nil, d.errf(start, "version byte inside a term")
	}
	return nil, d.errf(start, "unknown tag %d", tag)
}

func (d *decoder) bignum(tag byte) (Term, error) {
	n, neg, err := d.bigHeader(tag)
	if err != nil {
		return nil, err
	}
	mag := d.take(n)
	// Ignore high zero bytes (non-canonical but accepted).
	for len(mag) > 0 && mag[len(mag)-1] == 0 {
		mag = mag[:len(mag)-1]
	}
	if len(mag) <= 8 {
		var u uint64
		for i := len(mag) - 1; i >= 0; i-- {
			u = u<<8 | uint64(mag[i])
		}
		switch {
		case !neg && u <= math.MaxInt64:
			return Int(int64(u)), nil
		case neg && u <= 1<<63:
			return Int(-int64(u)), nil // -2^63 wraps to itself, as wanted
		}
	}
	be := make([]byte, len(mag))
	for i, c := range mag {
		be[len(mag)-1-i] = c
	}
	b := new(BigInt)
	b.v.SetBytes(be)
	if neg {
		b.v.Neg(&b.v)
	}
	return b, nil
}

// bigHeader reads a bignum's length and sign byte (any nonzero sign is
// negative, as in OTP) and checks that the magnitude is there and within
// OTP's largest integer.
func (d *decoder) bigHeader(tag byte) (n int, neg bool, err error) {
	start := d.off - 1
	l := &layouts[tag]
	size, err := d.head(l)
	if err != nil {
		return 0, false, err
	}
	if size > maxBigBytes {
		return 0, false, d.errf(start, "LARGE_BIG_EXT of %d bytes (OTP reads at most %d)", size, maxBigBytes)
	}
	neg = d.u8() != 0
	if err := d.needBody(l, size); err != nil {
		return 0, false, err
	}
	return int(size), neg, nil
}

// bitHeader reads BIT_BINARY_EXT's length and the bits used in its last
// byte (the tag at start), checks them, and checks that the bytes are
// there.
func (d *decoder) bitHeader(start int, l *tagLayout) (n uint32, bits byte, err error) {
	size, err := d.head(l)
	if err != nil {
		return 0, 0, err
	}
	bits = d.u8()
	if bits > 8 || (bits == 0) != (size == 0) {
		return 0, 0, d.errf(start+5, "BIT_BINARY_EXT with %d bytes has %d bits in its last byte", size, bits)
	}
	if err := d.needBody(l, size); err != nil {
		return 0, 0, err
	}
	return uint32(size), bits, nil
}

// floatText parses FLOAT_EXT: printf("%.20e") text padded with NULs to
// 31 bytes. It accepts what OTP 25 does: [+-]digits[.,]digits, then
// optionally [eE][+-]digits, ended by a NUL within the 31 bytes (the rest
// is not looked at); a value beyond the doubles is refused, and one below
// them becomes 0 or a denormal.
func (d *decoder) floatText(start int) (Term, error) {
	if err := d.need(floatExtLen, "FLOAT_EXT"); err != nil {
		return nil, err
	}
	field := d.take(floatExtLen)
	end := bytes.IndexByte(field, 0)
	if end < 0 {
		return nil, d.errf(start, "%s", floatNoNULReason)
	}
	text := field[:end]
	point, ok := floatSyntax(text)
	if !ok {
		return nil, d.errf(start, "FLOAT_EXT text %q is not [+-]digits.digits[e[+-]digits]", text)
	}
	var buf [floatExtLen]byte
	s := append(buf[:0], text...)
	s[point] = '.' // OTP takes a comma too
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return nil, d.errf(start, "FLOAT_EXT text %q is beyond the range of a double", text)
	}
	return Float(f), nil
}

// floatSyntax reports whether s is a FLOAT_EXT number as OTP reads it, and
// where its decimal point is.
func floatSyntax(s []byte) (point int, ok bool) {
	i := 0
	sign := func() {
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	sign()
	if !digits() || i == len(s) || (s[i] != '.' && s[i] != ',') {
		return 0, false
	}
	point = i
	i++
	if !digits() {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		sign()
		if !digits() {
			return 0, false
		}
	}
	return point, i == len(s)
}

// atom decodes an atom term at d.off (any of the four atom tags).
func (d *decoder) atom() (Atom, error) {
	name, latin1, err := d.atomName()
	if err != nil {
		return "", err
	}
	if latin1 {
		ascii := true
		for _, c := range name {
			if c >= 0x80 {
				ascii = false
				break
			}
		}
		if ascii {
			return Atom(name), nil
		}
		buf := make([]byte, 0, 2*len(name))
		for _, c := range name {
			buf = utf8.AppendRune(buf, rune(c))
		}
		return Atom(buf), nil
	}
	return Atom(name), nil
}

// atomName reads an atom encoding as atomBytes does and checks its text as
// OTP does: valid UTF-8 of at most 255 characters for the UTF-8 tags (at
// most 255 bytes for the Latin-1 ones, which atomBytes checks).
func (d *decoder) atomName() (name []byte, latin1 bool, err error) {
	start := d.off
	name, latin1, err = d.atomBytes()
	if err != nil || latin1 {
		return name, latin1, err
	}
	if !utf8.Valid(name) {
		return nil, false, d.errf(start, "atom text is not valid UTF-8")
	}
	if len(name) > maxAtomChars && utf8.RuneCount(name) > maxAtomChars {
		return nil, false, d.errf(start, "atom longer than %d characters", maxAtomChars)
	}
	return name, false, nil
}

// atomBytes reads an atom's tag, length and text without converting it.
func (d *decoder) atomBytes() (name []byte, latin1 bool, err error) {
	if err := d.need(1, "atom"); err != nil {
		return nil, false, err
	}
	start := d.off
	tag := d.u8()
	l := &layouts[tag]
	var n uint64
	switch tag {
	case tagAtom, tagAtomUTF8, tagSmallAtom, tagSmallAtomUTF8:
		if n, err = d.head(l); err != nil {
			return nil, false, err
		}
	case tagAtomCacheRef:
		return nil, false, d.errf(start, "ATOM_CACHE_REF is only valid in distribution messages")
	case tagAtomInternalRef2, tagAtomInternalRef3:
		return nil, false, d.errf(start, "%s", internalRefReason)
	default:
		return nil, false, d.errf(start, "tag %d where an atom is required", tag)
	}
	if err := d.needBody(l, n); err != nil {
		return nil, false, err
	}
	latin1 = tag == tagAtom || tag == tagSmallAtom
	if latin1 && n > maxAtomChars {
		return nil, false, d.errf(start, "atom longer than %d characters", maxAtomChars)
	}
	return d.take(int(n)), latin1, nil
}

// list decodes LIST_EXT at d.off, flattening tails that are lists.
func (d *decoder) list(depth int) (Term, error) {
	var elems []Term
	for {
		d.off++ // tag, known to be LIST_EXT
		l := &layouts[tagList]
		n, err := d.head(l)
		if err != nil {
			return nil, err
		}
		if err := d.needBody(l, n); err != nil {
			return nil, err
		}
		if elems == nil {
			elems = make([]Term, 0, n)
		}
		for range n {
			e, err := d.term(depth + 1)
			if err != nil {
				return nil, err
			}
			elems = append(elems, e)
		}
		if d.off < len(d.b) && d.b[d.off] == tagList {
			continue // the tail is a list: keep appending
		}
		tail, err := d.term(depth + 1)
		if err != nil {
			return nil, err
		}
		switch t := tail.(type) {
		case List:
			return List(append(elems, t...)), nil
		default:
			if len(elems) == 0 {
				return tail, nil // LIST_EXT of length 0 is its tail
			}
			return &ImproperList{Elems: elems, Tail: tail}, nil
		}
	}
}

func (d *decoder) mapTerm(start, depth int) (Term, error) {
	l := &layouts[tagMap]
	n, err := d.head(l)
	if err != nil {
		return nil, err
	}
	if err := d.needBody(l, n); err != nil {
		return nil, err
	}
	m := make(Map, n)
	for i := range m {
		k, err := d.term(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := d.term(depth + 1)
		if err != nil {
			return nil, err
		}
		m[i] = Pair{Key: k, Value: v}
	}
	if hasDuplicateKeys(m) {
		return nil, d.errf(start, "map has duplicate keys")
	}
	if otpMisordersKeys(m) {
		return nil, d.errf(start, "%s", funKeyOrderReason)
	}
	return m, nil
}

// hasDuplicateKeys reports whether two keys of m are Equal.
func hasDuplicateKeys(m Map) bool {
	if len(m) < 2 {
		return false
	}
	s := sortedPairs(m)
	for i := 1; i < len(s); i++ {
		if compare(s[i-1].Key, s[i].Key, modeExact) == 0 {
			return true
		}
	}
	return false
}

func derr(off int, format string, args ...any) *DecodeError {
	return &DecodeError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}
