package etf

import (
	"encoding/binary"
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
	if !boxOK || len(b) < 3 || b[0] != tagVersion || b[1] != tagSmallTuple {
		return nil
	}
	n := int(b[2])
	if n < 2 || n > 4 {
		return nil
	}
	var starts, ends [4]int
	off, total := 3, 0
	for i := range n {
		if len(b)-off < 5 || b[off] != tagBinary {
			return nil
		}
		l := binary.BigEndian.Uint32(b[off+1:])
		if uint64(l) > uint64(len(b)-off-5) {
			return nil
		}
		starts[i], ends[i] = off+5, off+5+int(l)
		off = ends[i]
		total += int(l)
	}
	if off != len(b) {
		return nil
	}
	data := make([]byte, total)
	var bins []Binary
	var elems []Term
	var tup *Tuple
	switch n {
	case 2:
		s := new(flat2)
		bins, elems, tup = s.bins[:], s.elems[:], &s.tup
	case 3:
		s := new(flat3)
		bins, elems, tup = s.bins[:], s.elems[:], &s.tup
	default:
		s := new(flat4)
		bins, elems, tup = s.bins[:], s.elems[:], &s.tup
	}
	at := 0
	for i := range n {
		l := copy(data[at:], b[starts[i]:ends[i]])
		if l == 0 {
			bins[i] = Binary{} // as the general decoder: empty, not nil
		} else {
			bins[i] = Binary(data[at : at+l : at+l])
		}
		at += l
		elems[i] = boxAt(binaryTab, unsafe.Pointer(&bins[i]))
	}
	*tup = Tuple(elems[:n:n])
	return boxAt(tupleTab, unsafe.Pointer(tup))
}
