package etf

import (
	"math"
)

// Decode's fast path for the commonest stored object, a small tuple of
// binaries such as {Key, Value}:
//
//	<<131, SMALL_TUPLE_EXT, N, (BINARY_EXT Len:32 Bytes)*N>>, N = 2..4
//
// The general decoder allocates the bytes, the tuple's elements and one
// boxed header per value (five allocations for a pair). Here one block
// holds the tuple header, the binary headers and the elements, with the
// Terms built by termOfTuple and termOfBinary (see unsafe.go), and one
// more holds the bytes: two allocations. The terms are the ones the general decoder returns.

// flat2 is also RawBatch's chunk entry for a pair (batch.go).
type flat2 struct {
	tup   Tuple
	bins  [2]Binary
	elems [2]Term
}

type flat3 struct {
	tup   Tuple
	bins  [3]Binary
	elems [3]Term
}

type flat4 struct {
	tup   Tuple
	bins  [4]Binary
	elems [4]Term
}

// decodeFlat decodes b when it has the shape above, and returns nil for
// anything else, valid or not, which the general decoder then handles.
func decodeFlat(b []byte) Term {
	n, ends, ok := flatShape(b, math.MaxUint32)
	if !ok || n < 2 || n > 4 {
		return nil
	}
	data := make([]byte, len(b)-flatData) // the bytes, and the few header bytes between
	copy(data, b[flatData:])
	var bins []Binary
	var t Tuple
	var tup *Tuple
	switch n {
	case 2:
		s := new(flat2)
		bins, t, tup = s.bins[:], s.elems[:], &s.tup
	case 3:
		s := new(flat3)
		bins, t, tup = s.bins[:], s.elems[:], &s.tup
	default:
		s := new(flat4)
		bins, t, tup = s.bins[:], s.elems[:], &s.tup
	}
	fillFlat(t, bins, data, &ends)
	*tup = t
	return termOfTuple(tup)
}

// onePairN holds a DecodeOne result whose pair has up to N bytes of
// binaries (and the 5 header bytes between them); the sizes fill the
// runtime's size classes of 192, 256, 384 and 640 bytes.
type (
	onePair64 struct {
		one  [1]Term
		p    flat2
		data [64]byte
	}
	onePair128 struct {
		one  [1]Term
		p    flat2
		data [128]byte
	}
	onePair256 struct {
		one  [1]Term
		p    flat2
		data [256]byte
	}
	onePair512 struct {
		one  [1]Term
		p    flat2
		data [512]byte
	}
)

const onePairMax = 512

// decodeOnePair is DecodeOne for <<131, SMALL_TUPLE_EXT, 2, BINARY_EXT,
// ..., BINARY_EXT, ...>> of up to onePairMax bytes of data, and nil for
// anything else.
func decodeOnePair(b []byte) []Term {
	n, ends, ok := flatShape(b, math.MaxUint32)
	if !ok || n != 2 || len(b)-flatData > onePairMax {
		return nil
	}
	src := b[flatData:]
	var one []Term
	var p *flat2
	var data []byte
	switch {
	case len(src) <= 64:
		s := new(onePair64)
		one, p, data = s.one[:], &s.p, s.data[:]
	case len(src) <= 128:
		s := new(onePair128)
		one, p, data = s.one[:], &s.p, s.data[:]
	case len(src) <= 256:
		s := new(onePair256)
		one, p, data = s.one[:], &s.p, s.data[:]
	default:
		s := new(onePair512)
		one, p, data = s.one[:], &s.p, s.data[:]
	}
	data = data[:len(src):len(src)]
	copy(data, src)
	fillFlat(p.elems[:], p.bins[:], data, &ends)
	p.tup = p.elems[:]
	one[0] = termOfTuple(&p.tup)
	return one
}
