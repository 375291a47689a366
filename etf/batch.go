package etf

import (
	"encoding/binary"
)

// RawBatch decodes many encodings in a row, as a storage engine's scan
// does: each Decode is the package's Decode, but the results share
// backing arrays (tuple elements, binaries' bytes, and the headers of
// boxed tuples and binaries, see unsafe.go, or all of these together for
// a pair of binaries). A batch of small terms then costs a small fraction
// of an allocation per term: the dets engine's common object, {Binary,
// Binary}, takes about 1/80 of one instead of Decode's 3. It belongs with
// Raw and follows its rules for the bytes.
//
// Results never alias the input, and are never reused or written by later
// calls; but one retained term keeps the shared chunks it lives in alive
// (tens of KiB at most). The zero value is ready to use; a RawBatch is
// not safe for concurrent use.
type RawBatch struct {
	terms []Term   // tuple elements
	bytes []byte   // binaries' bytes
	bins  []Binary // headers of boxed binaries
	tups  []Tuple  // headers of boxed tuples
	pairs []flat2  // flat pairs: headers and elements together
}

// A chunk starts at the size below and each next one of its kind doubles,
// up to batchGrowth times that: a long batch allocates rarely, a short one
// little.
const (
	batchTerms   = 256  // tuple elements per shared chunk
	batchBytes   = 8192 // binary bytes per shared chunk
	batchHeaders = 128  // binary or tuple headers per shared chunk
	batchPairs   = 64   // flat pairs per shared chunk (104 bytes each)
	batchGrowth  = 4
	// Larger tuples and binaries get their own allocation: sharing saves
	// little on them, and a chunk's tail is wasted when the next one is
	// started.
	batchMaxTuple  = batchTerms / 4
	batchMaxBinary = batchBytes / 4
	// flatTuple takes tuples up to this arity.
	flatMaxArity = 16
)

// newChunk returns an empty chunk to follow old, whose first chunk size
// is first.
func newChunk[T any](old []T, first int) []T {
	return make([]T, 0, chunkCap(old, first))
}

// newBytesChunk is newChunk for binaries' bytes, without zeroing them
// first: every byte is written before a slice capped at it is handed out.
func newBytesChunk(old []byte) []byte {
	return noZeroBytes(min(chunkCap(old, batchBytes), noZeroChunkMax))
}

// noZeroChunkMax bounds an unzeroed chunk: such an allocation is rounded
// up to its size class first, and the class above 27264 bytes, 32768, is
// served as a large object (pages of its own, see batchChunkMax).
const noZeroChunkMax = 24 << 10

func chunkCap[T any](old []T, first int) int {
	return min(max(2*cap(old), first), batchGrowth*first, batchChunkMax/sizeOf[T]())
}

// batchChunkMax bounds a chunk's bytes: the runtime serves allocations up
// to this size from its per-size caches; a larger one takes pages of its
// own, which the scavenger returns to the OS and the next chunk faults
// back in.
const batchChunkMax = 32<<10 - 8

// Decode is the package's Decode, drawing on bd's shared chunks.
func (bd *RawBatch) Decode(b []byte) (Term, error) {
	if t := bd.flatPair(b); t != nil {
		return t, nil
	}
	if t := bd.flatTuple(b); t != nil {
		return t, nil
	}
	if len(b) == 0 || b[0] != tagVersion || (len(b) >= 2 && b[1] == tagCompressed) {
		return Decode(b)
	}
	return decodeWhole(b, bd)
}

// flatTuple decodes the most common shape of a dets object, a small tuple
// of binaries, <<131, SMALL_TUPLE_EXT, N, (BINARY_EXT Len Bytes)*N>>, as
// the general decoder would, only faster. Anything else, including
// anything invalid, it leaves to the general decoder: it returns nil.
func (bd *RawBatch) flatTuple(b []byte) Term {
	// Check the whole input before taking space from the chunks.
	n, ends, ok := flatShape(b, batchMaxBinary)
	if !ok {
		return nil
	}
	// One copy covers every binary (and the few header bytes between).
	src := b[flatData:]
	if cap(bd.bytes)-len(bd.bytes) < len(src) {
		if len(src) > batchBytes/2 {
			return nil
		}
		bd.bytes = newBytesChunk(bd.bytes)
	}
	if cap(bd.terms)-len(bd.terms) < n {
		bd.terms = newChunk(bd.terms, batchTerms)
	}
	if cap(bd.bins)-len(bd.bins) < n {
		bd.bins = newChunk(bd.bins, batchHeaders)
	}
	if len(bd.tups) == cap(bd.tups) {
		bd.tups = newChunk(bd.tups, batchHeaders)
	}
	a := len(bd.bytes)
	bd.bytes = append(bd.bytes, src...)
	data := bd.bytes[a:]
	a = len(bd.terms)
	t := Tuple(bd.terms[a : a+n : a+n])
	bd.terms = bd.terms[:a+n]
	a = len(bd.bins)
	bins := bd.bins[a : a+n : a+n]
	bd.bins = bd.bins[:a+n]
	fillFlat(t, bins, data, &ends)
	a = len(bd.tups)
	bd.tups = append(bd.tups, t)
	return termOfTuple(&bd.tups[a])
}

// flatPair is flatTuple for its commonest case, a pair such as {Key,
// Value}, <<131, SMALL_TUPLE_EXT, 2, BINARY_EXT, L1:32, B1:L1, BINARY_EXT,
// L2:32, B2:L2>>: it checks the two lengths directly and keeps the tuple's
// header, elements and binary headers in one chunk entry. Anything else it
// leaves to flatTuple and the general decoder: it returns nil.
func (bd *RawBatch) flatPair(b []byte) Term {
	const minLen = flatData + binHead // two empty binaries
	if len(b) < minLen || b[0] != tagVersion || b[1] != tagSmallTuple || b[2] != 2 || b[3] != tagBinary || !boxOK {
		return nil
	}
	l1 := binary.BigEndian.Uint32(b[4:])
	if l1 > batchMaxBinary || int(l1) > len(b)-minLen {
		return nil
	}
	m := flatData + int(l1) // the second binary's tag; m+binHead <= len(b)
	if b[m] != tagBinary {
		return nil
	}
	l2 := binary.BigEndian.Uint32(b[m+1:])
	src := b[flatData:]
	if l2 > batchMaxBinary || int(l2) != len(b)-m-binHead || len(src) > batchBytes/2 {
		return nil
	}
	if cap(bd.bytes)-len(bd.bytes) < len(src) {
		bd.bytes = newBytesChunk(bd.bytes)
	}
	if len(bd.pairs) == cap(bd.pairs) {
		bd.pairs = newChunk(bd.pairs, batchPairs)
	}
	a := len(bd.bytes)
	bd.bytes = append(bd.bytes, src...)
	data := bd.bytes[a:len(bd.bytes):len(bd.bytes)]
	bd.pairs = bd.pairs[:len(bd.pairs)+1]
	p := &bd.pairs[len(bd.pairs)-1]
	b0, b1 := Binary{}, Binary{} // each header is written once
	if l1 > 0 {
		b0 = data[:l1:l1]
	}
	if l2 > 0 {
		b1 = data[l1+binHead:]
	}
	p.bins[0], p.bins[1] = b0, b1
	p.elems[0] = termOfBinary(&p.bins[0])
	p.elems[1] = termOfBinary(&p.bins[1])
	p.tup = p.elems[:]
	return termOfTuple(&p.tup)
}

// The fast paths for tuples of binaries read the layout of SMALL_TUPLE_EXT
// and BINARY_EXT from layout.go's constants, without the table: binHead
// is a binary's tag and length, flatData is where a flat tuple's first
// binary's bytes start (after the version, tuple tag, arity and binHead).
const (
	binHead  = 1 + binaryHeader
	flatData = 1 + 1 + smallTupleHeader + binHead
)

// flatShape reports whether b is <<131, SMALL_TUPLE_EXT, N, (BINARY_EXT
// Len Bytes)*N>> with 1 <= N <= flatMaxArity and every Len <= maxBin, with
// N and where each binary's bytes end in b.
func flatShape(b []byte, maxBin uint32) (n int, ends [flatMaxArity]int, ok bool) {
	if len(b) < 3 || b[0] != tagVersion || b[1] != tagSmallTuple || !boxOK {
		return 0, ends, false
	}
	n = int(b[2])
	if n == 0 || n > flatMaxArity {
		return 0, ends, false
	}
	off := 3
	for i := range n {
		if len(b)-off < binHead || b[off] != tagBinary {
			return 0, ends, false
		}
		l := binary.BigEndian.Uint32(b[off+1:])
		if l > maxBin || uint64(l) > uint64(len(b)-off-binHead) { // no int(l): it wraps on 32-bit
			return 0, ends, false
		}
		off += binHead + int(l)
		ends[i] = off
	}
	return n, ends, off == len(b)
}

// fillFlat points bins at the binaries in data (a copy of a flat tuple's
// encoding from flatData on; ends from flatShape) and boxes them into t.
// An empty binary is Binary{}, as the general decoder makes it.
func fillFlat(t Tuple, bins []Binary, data []byte, ends *[flatMaxArity]int) {
	start := 0
	for i := range t {
		end := ends[i] - flatData
		if end > start {
			bins[i] = data[start:end:end]
		} else {
			bins[i] = Binary{}
		}
		t[i] = termOfBinary(&bins[i])
		start = end + binHead
	}
}

// tuple returns a zeroed n-element tuple, from the shared chunk when small.
func (d *decoder) tuple(n int) Tuple {
	bd := d.batch
	if bd == nil || n == 0 || n > batchMaxTuple {
		return make(Tuple, n)
	}
	if cap(bd.terms)-len(bd.terms) < n {
		bd.terms = newChunk(bd.terms, batchTerms)
	}
	a := len(bd.terms)
	bd.terms = bd.terms[:a+n]
	return Tuple(bd.terms[a : a+n : a+n])
}

// boxBinary returns b as a Term, its header in a shared chunk when batching.
func (d *decoder) boxBinary(b []byte) Term {
	bd := d.batch
	if bd == nil || !boxOK {
		return Binary(b)
	}
	if len(bd.bins) == cap(bd.bins) {
		bd.bins = newChunk(bd.bins, batchHeaders)
	}
	bd.bins = append(bd.bins, b)
	return termOfBinary(&bd.bins[len(bd.bins)-1])
}

// boxTuple returns t as a Term, its header in a shared chunk when batching.
func (d *decoder) boxTuple(t Tuple) Term {
	bd := d.batch
	if bd == nil || !boxOK {
		return t
	}
	if len(bd.tups) == cap(bd.tups) {
		bd.tups = newChunk(bd.tups, batchHeaders)
	}
	bd.tups = append(bd.tups, t)
	return termOfTuple(&bd.tups[len(bd.tups)-1])
}
