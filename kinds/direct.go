package kinds

import (
	"encoding/binary"
	"math"
	"sync"
	"unicode/utf8"
)

// The direct path: built-in codecs, and tuples and records made of them,
// read a value straight from the ETF bytes of a stored object and write
// one straight into them, with no etf.Term in between (issue #22: the
// terms cost more than the rest of a typed read).
//
// A direct function only ever gives the answer the term path gives. It
// handles the encodings etf.Encode writes and says "not here" (ok false)
// for anything else, a term of the wrong type included; the handle then
// decodes the object into a term and takes the term path, which gives the
// value or the error the caller has always had. So the two paths cannot
// disagree on an error, and differ only in speed: TestDirectMatchesTerm
// checks it over random values, wrong types and unusual encodings.
//
// Bodies are encodings without the version byte, as they sit inside a
// tuple. The bytes come from dets, which checked that they decode, but a
// direct reader still checks every length it uses: it must not panic
// whatever it is given.

// ETF tags the direct path writes and reads.
const (
	tagVersion      = 131
	tagSmallInteger = 97  // SMALL_INTEGER_EXT: uint8
	tagInteger      = 98  // INTEGER_EXT: int32
	tagSmallTuple   = 104 // SMALL_TUPLE_EXT: arity uint8
	tagBinary       = 109 // BINARY_EXT: length uint32, bytes
	tagSmallBig     = 110 // SMALL_BIG_EXT: n uint8, sign, n bytes little-endian
)

// appendBinary writes b as BINARY_EXT.
func appendBinary(dst []byte, b []byte) ([]byte, bool) {
	if uint64(len(b)) > math.MaxUint32 {
		return dst, false // Encode reports it
	}
	dst = binary.BigEndian.AppendUint32(append(dst, tagBinary), uint32(len(b)))
	return append(dst, b...), true
}

// binaryBody returns the bytes of the BINARY_EXT at the front of b and the
// length of its encoding.
func binaryBody(b []byte) ([]byte, int, bool) {
	if len(b) < 5 || b[0] != tagBinary {
		return nil, 0, false
	}
	n := uint64(binary.BigEndian.Uint32(b[1:]))
	if n > uint64(len(b)-5) {
		return nil, 0, false
	}
	return b[5 : 5+n], 5 + int(n), true
}

func appendStringRaw(dst []byte, s string) ([]byte, bool) {
	if uint64(len(s)) > math.MaxUint32 {
		return dst, false
	}
	dst = binary.BigEndian.AppendUint32(append(dst, tagBinary), uint32(len(s)))
	return append(dst, s...), true
}

// readStringRaw copies: the bytes it reads are borrowed.
func readStringRaw(b []byte, a *arena) (string, int, bool) {
	data, n, ok := binaryBody(b)
	if !ok {
		return "", 0, false
	}
	return a.str(data), n, true
}

func readBytesRaw(b []byte, a *arena) ([]byte, int, bool) {
	data, n, ok := binaryBody(b)
	if !ok {
		return nil, 0, false
	}
	return a.bytes(data), n, true
}

// arena holds the bytes of the strings and byte slices that one traversal
// decodes, in shared chunks, so that a traversal allocates a chunk now
// and then instead of every value (the term path's etf.RawBatch does the
// same). A value kept after the traversal keeps its chunk alive. Each
// value has its own bytes: a []byte is capped at its end, and no chunk
// byte is written after it is handed out, so strings stay immutable. A
// nil arena allocates each value on its own.
type arena struct {
	chunk []byte // len arenaChunk; bytes from used on are free
	used  int    // kept apart from chunk: a store into a slice header is a write barrier
}

const (
	arenaChunk = 16 << 10 // bytes of a chunk
	arenaMax   = 512      // larger values get an allocation of their own
)

// bytes returns a copy of b, never nil (as Bytes' Decode gives).
func (a *arena) bytes(b []byte) []byte {
	if a == nil || len(b) > arenaMax || len(b) == 0 {
		return append([]byte{}, b...)
	}
	if len(a.chunk)-a.used < len(b) {
		a.chunk, a.used = make([]byte, arenaChunk), 0
	}
	n := a.used
	a.used += copy(a.chunk[n:], b)
	return a.chunk[n:a.used:a.used]
}

// str returns b as a string.
func (a *arena) str(b []byte) string {
	if a == nil || len(b) > arenaMax || len(b) == 0 {
		return string(b)
	}
	c := a.bytes(b)
	return stringView(c)
}

// appendIntRaw writes v as etf.Encode writes the etf.Int or *etf.BigInt
// that Integer's Encode makes of it.
func appendIntRaw[T integer](dst []byte, v T) ([]byte, bool) {
	var neg bool
	var u uint64
	if v < 0 {
		i := int64(v)
		if i >= math.MinInt32 {
			return binary.BigEndian.AppendUint32(append(dst, tagInteger), uint32(int32(i))), true
		}
		neg, u = true, uint64(-i) // -MinInt64 wraps to 2^63, as wanted
	} else {
		u = uint64(v)
		switch {
		case u <= math.MaxUint8:
			return append(dst, tagSmallInteger, byte(u)), true
		case u <= math.MaxInt32:
			return binary.BigEndian.AppendUint32(append(dst, tagInteger), uint32(u)), true
		}
	}
	n := 0
	for x := u; x != 0; x >>= 8 {
		n++
	}
	dst = append(dst, tagSmallBig, byte(n), b2byte(neg))
	for ; u != 0; u >>= 8 {
		dst = append(dst, byte(u))
	}
	return dst, true
}

func b2byte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// readIntRaw reads the integer encodings that fit 32 bits; a bignum, or a
// value outside T's range, goes to the term path.
func readIntRaw[T integer](b []byte, _ *arena) (T, int, bool) {
	var x int64
	var n int
	switch {
	case len(b) >= 2 && b[0] == tagSmallInteger:
		x, n = int64(b[1]), 2
	case len(b) >= 5 && b[0] == tagInteger:
		x, n = int64(int32(binary.BigEndian.Uint32(b[1:]))), 5
	default:
		return 0, 0, false
	}
	v := T(x)
	if int64(v) != x || (v < 0) != (x < 0) {
		return 0, 0, false
	}
	return v, n, true
}

// bufPool holds the buffers that the handles encode keys and objects
// into and copy looked-up objects to: pooled, because the codecs' direct
// functions are called through func values, which the compiler cannot
// see into, so a buffer on the stack would escape anyway.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// maxPooledBuf bounds the buffers kept for reuse.
const maxPooledBuf = 64 << 10

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(p *[]byte, b []byte) {
	if cap(b) > maxPooledBuf {
		return
	}
	*p = b[:0]
	bufPool.Put(p)
}

// More ETF tags, for atoms and floats.
const (
	tagNewFloat      = 70  // NEW_FLOAT_EXT: IEEE 754 float64, big-endian
	tagAtom          = 100 // ATOM_EXT: length uint16, Latin-1 text
	tagSmallAtom     = 115 // SMALL_ATOM_EXT: length uint8, Latin-1 text
	tagAtomUTF8      = 118 // ATOM_UTF8_EXT: length uint16, UTF-8 text
	tagSmallAtomUTF8 = 119 // SMALL_ATOM_UTF8_EXT: length uint8, UTF-8 text
)

func appendFloatRaw(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	return binary.BigEndian.AppendUint64(append(dst, tagNewFloat), math.Float64bits(f)), true
}

func readFloatRaw(b []byte, _ *arena) (float64, int, bool) {
	if len(b) < 9 || b[0] != tagNewFloat {
		return 0, 0, false
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(b[1:]))
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, 0, false
	}
	return f, 9, true
}

// appendAtomRaw writes s as etf.Encode writes etf.Atom(s): ATOM_EXT when
// every character fits Latin-1, else the UTF-8 forms. Text that is no
// atom (not UTF-8, over 255 characters) is left to Encode, which says so.
func appendAtomRaw(dst []byte, s string) ([]byte, bool) {
	latin1, chars := true, 0
	for _, r := range s {
		if r == utf8.RuneError || r > 0xFF {
			latin1 = false
		}
		chars++
	}
	if chars > maxAtomChars || !utf8.ValidString(s) {
		return dst, false
	}
	switch {
	case latin1:
		dst = binary.BigEndian.AppendUint16(append(dst, tagAtom), uint16(chars))
		for _, r := range s {
			dst = append(dst, byte(r))
		}
		return dst, true
	case len(s) <= 255:
		dst = append(dst, tagSmallAtomUTF8, byte(len(s)))
	default:
		dst = binary.BigEndian.AppendUint16(append(dst, tagAtomUTF8), uint16(len(s)))
	}
	return append(dst, s...), true
}

// atomText returns the text of the atom at the front of b when it is
// already the UTF-8 the atom decodes to (UTF-8 forms, ASCII Latin-1), and
// the length of its encoding; Latin-1 text past ASCII goes to the term
// path, which converts it.
func atomText(b []byte) ([]byte, int, bool) {
	if len(b) < 2 {
		return nil, 0, false
	}
	var n, hdr int
	switch b[0] {
	case tagSmallAtom, tagSmallAtomUTF8:
		n, hdr = int(b[1]), 2
	case tagAtom, tagAtomUTF8:
		if len(b) < 3 {
			return nil, 0, false
		}
		n, hdr = int(binary.BigEndian.Uint16(b[1:])), 3
	default:
		return nil, 0, false
	}
	if n > len(b)-hdr {
		return nil, 0, false
	}
	text := b[hdr : hdr+n]
	if b[0] == tagAtom || b[0] == tagSmallAtom {
		for _, c := range text {
			if c >= utf8.RuneSelf {
				return nil, 0, false
			}
		}
	} else if !utf8.Valid(text) || utf8.RuneCount(text) > maxAtomChars {
		return nil, 0, false
	}
	return text, hdr + n, true
}

func readAtomRaw(b []byte, a *arena) (string, int, bool) {
	text, n, ok := atomText(b)
	if !ok {
		return "", 0, false
	}
	return a.str(text), n, true
}

func appendBoolRaw(dst []byte, v bool) ([]byte, bool) {
	if v {
		return appendAtomRaw(dst, "true")
	}
	return appendAtomRaw(dst, "false")
}

func readBoolRaw(b []byte, _ *arena) (bool, int, bool) {
	text, n, ok := atomText(b)
	switch {
	case !ok:
		return false, 0, false
	case string(text) == "true":
		return true, n, true
	case string(text) == "false":
		return false, n, true
	}
	return false, 0, false
}
