package kinds

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"
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
	return unsafe.String(unsafe.SliceData(c), len(c))
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
