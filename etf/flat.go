package etf

import (
	"math"
	"unsafe"
)

// Decode's fast path for the commonest stored object, a small tuple of
// binaries such as {Key, Value}:
//
//	<<131, SMALL_TUPLE_EXT, N, (BINARY_EXT Len:32 Bytes)*N>>, N = 2..4
//
// The general decoder allocates the bytes, the tuple's elements and one
// boxed header per value (five allocations for a pair). Here one block
// holds the tuple header, the binary headers and the elements, with the
// Terms built by boxAt (see box.go), and one more holds the bytes: two
// allocations. The terms are the ones the general decoder returns.

// flat2 is also BatchDecoder's chunk entry for a pair (batch.go).
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
	return boxAt(tupleTab, unsafe.Pointer(tup))
}
