package etf

import (
	"bytes"
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// Working on encoded terms without building them: Validate, and the
// walkers behind Raw's TupleElement, Phash2Body and CompareBodies (raw.go).
//
// They let a caller that stores term_to_binary bytes (DETS keeps every
// object encoded) validate, slice, hash and order encodings without the
// allocations of Decode. They never allocate for the common types
// (integers, atoms, binaries, tuples, [], strings); where an encoding is
// outside what they handle, they say so (ok false) and the caller decodes.
//
// A "body" below is one encoded term without the leading version byte 131:
// the bytes of an element inside an enclosing encoding.

// Validate reports whether b is a complete external term that Decode
// accepts, returning the error Decode would return. It builds no terms
// except for maps (checked for duplicate keys by decoding them), FLOAT_EXT
// text, the integer fields of exports and funs, and compressed input,
// which it inflates.
//
// A term nested deeper than MaxDepth, which OTP reads and Decode refuses,
// is walked to its end all the same: the error then matches ErrTooDeep
// only when the rest of the term is sound, so that a store can tell such
// a term from damage and keep its bytes. Two parts of a deep term are not
// walked: a map or fun lying deeper than MaxDepth, and anything below
// more than maxOpen tuples and lists that all still have elements to come
// (their error matches ErrTooDeep at once).
func Validate(b []byte) error {
	if _, _, ok := flatShape(b, math.MaxUint32); ok {
		return nil // the commonest dets object, {Binary, Binary}, and kin
	}
	if len(b) == 0 || b[0] != tagVersion {
		_, err := Decode(b)
		return err
	}
	d := &decoder{b: b, off: 1}
	if len(b) >= 2 && b[1] == tagCompressed {
		var err error
		if d, err = inflate(b); err != nil {
			return err
		}
	}
	if err := d.skip(0); err != nil {
		return err
	}
	if d.off != len(d.b) {
		what := ""
		if d.inflated {
			what = " (in decompressed data)"
		}
		return derr(d.off, "%d trailing bytes after the term%s", len(d.b)-d.off, what)
	}
	if d.deepAt != 0 {
		return d.tooDeep(d.deepAt - 1)
	}
	return nil
}

// maxOpen bounds the tuples and lists that skip keeps open at once (each
// with elements still to walk): 24 bytes each, so a hostile term cannot
// make it hold more than 24 MiB, while a list nested a million deep,
// which OTP reads, is still walked to its end.
const maxOpen = 1 << 20

// openTerms is a tuple or list that skip has entered and not finished.
type openTerms struct {
	left  uint64 // terms of it not yet started
	depth int    // their nesting, counted as term counts it
	list  bool   // LIST_EXT: the last of them is the tail
}

// skip validates the term at d.off, nested depth deep, exactly as term
// would decode it, and moves past it. Tuples and lists are entered with a
// stack on the heap rather than by recursion, so nesting deeper than
// MaxDepth costs no goroutine stack: skip notes the first such term in
// d.deepAt and carries on. A container leaves the stack as its last term
// starts, so a chain of last elements ({a, {b, {c, ...}}}, a long list
// split into LIST_EXTs) takes no stack at all.
func (d *decoder) skip(depth int) error {
	if depth > MaxDepth && d.deepAt == 0 {
		d.deepAt = d.off + 1
	}
	n, list, err := d.skipHead(depth)
	if err != nil || n == 0 {
		return err // most terms hold no others: no stack
	}
	var spare [8]openTerms
	open := append(spare[:0], openTerms{left: n, depth: depth + 1, list: list})
	for {
		// Start the next term: the first not yet started in the
		// innermost open container.
		top := &open[len(open)-1]
		top.left--
		depth = top.depth
		if top.left == 0 {
			if top.list && d.off < len(d.b) && d.b[d.off] == tagList {
				depth-- // a tail that is a list continues its list
			}
			open = open[:len(open)-1]
		}
		if depth > MaxDepth && d.deepAt == 0 {
			d.deepAt = d.off + 1
		}
		n, list, err := d.skipHead(depth)
		if err != nil {
			return err
		}
		if n > 0 {
			if len(open) == maxOpen {
				return d.tooDeep(d.off)
			}
			open = append(open, openTerms{left: n, depth: depth + 1, list: list})
		}
		if len(open) == 0 { // every container left as its last term started
			return nil
		}
	}
}

// skipHead validates the term at d.off at nesting depth. A tuple or list
// with terms inside is only entered: skipHead moves past its header and
// returns how many terms follow (a list's tail among them, list set).
// Anything else it moves past whole, returning 0.
func (d *decoder) skipHead(depth int) (n uint64, list bool, err error) {
	if err := d.need(1, "tag"); err != nil {
		return 0, false, err
	}
	start := d.off
	tag := d.u8()
	l := &layouts[tag]
	// body skips the bytes of a header's count, checking they are there.
	body := func(n uint64) error {
		if err := d.needBody(l, n); err != nil {
			return err
		}
		d.off += int(n)
		return nil
	}
	switch tag {
	case tagSmallInteger, tagInteger:
		if _, err := d.head(l); err != nil {
			return 0, false, err
		}
		d.off += int(l.header)
		return 0, false, nil
	case tagSmallBig, tagLargeBig:
		n, _, err := d.bigHeader(tag)
		d.off += n
		return 0, false, err
	case tagNewFloat:
		if _, err := d.head(l); err != nil {
			return 0, false, err
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(d.take(8)))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false, d.errf(start, "float is not finite")
		}
		return 0, false, nil
	case tagFloat:
		_, err := d.floatText(start)
		return 0, false, err
	case tagAtom, tagSmallAtom, tagAtomUTF8, tagSmallAtomUTF8:
		d.off = start
		_, _, err := d.atomName()
		return 0, false, err
	case tagSmallTuple, tagLargeTuple:
		n, err := d.head(l)
		if err != nil {
			return 0, false, err
		}
		return n, false, d.needBody(l, n)
	case tagNil:
		return 0, false, nil
	case tagString, tagBinary:
		n, err := d.head(l)
		if err != nil {
			return 0, false, err
		}
		return 0, false, body(n)
	case tagList:
		n, err := d.head(l)
		if err != nil {
			return 0, false, err
		}
		return n + 1, true, d.needBody(l, n)
	case tagBitBinary:
		n, _, err := d.bitHeader(start, l)
		d.off += int(n)
		return 0, false, err
	}
	switch tag {
	case tagMap, tagPid, tagNewPid, tagPort, tagNewPort, tagV4Port, tagReference,
		tagNewReference, tagNewerReference, tagExport, tagNewFun, tagFun:
		// Decoded or walked by recursion, which depth bounds.
		if depth > MaxDepth {
			return 0, false, d.tooDeep(start)
		}
		if tag == tagMap {
			_, err := d.mapTerm(start, depth)
			return 0, false, err
		}
		d.off = start
		return 0, false, d.skipOpaque(depth)
	case tagAtomCacheRef:
		return 0, false, d.errf(start, "ATOM_CACHE_REF is only valid in distribution messages")
	case tagAtomInternalRef2, tagAtomInternalRef3:
		return 0, false, d.errf(start, "%s", internalRefReason)
	case tagCompressed:
		return 0, false, d.errf(start, "compressed term not at top level")
	case tagVersion:
		return 0, false, d.errf(start, "version byte inside a term")
	}
	return 0, false, d.errf(start, "unknown tag %d", tag)
}

// hashBody mixes the term at the start of b into h and returns the bytes
// it took.
func hashBody(b []byte, h uint32, depth int) (uint32, int, bool) {
	if len(b) == 0 || depth > MaxDepth {
		return 0, 0, false
	}
	switch b[0] {
	case tagSmallInteger, tagInteger:
		x, n, ok := smallInt(b)
		if !ok {
			return 0, 0, false
		}
		return hashInt64(x, h), n, true
	case tagBinary:
		data, n, ok := binaryData(b)
		if !ok {
			return 0, 0, false
		}
		return hashBits(data, 8*int64(len(data)), h), n, true
	case tagNil:
		return hashNil(h), 1, true
	case tagSmallAtomUTF8, tagAtomUTF8, tagSmallAtom, tagAtom:
		name, n, ok := atomText(b)
		if !ok {
			return 0, 0, false
		}
		a := atomHashBytes(name, b[0] == tagSmallAtomUTF8 || b[0] == tagAtomUTF8)
		if h == 0 {
			return a, n, true
		}
		return uint32Hash(a, hconst3, h), n, true
	case tagSmallTuple, tagLargeTuple:
		arity, off, ok := tupleHeader(b)
		if !ok || arity > uint64(len(b)-off) {
			return 0, 0, false
		}
		h = uint32Hash(uint32(arity), hconst9, h)
		for range arity {
			var n int
			h, n, ok = hashBody(b[off:], h, depth+1)
			if !ok {
				return 0, 0, false
			}
			off += n
		}
		return h, off, true
	}
	return 0, 0, false
}

// atomText returns an atom encoding's text and total length. UTF-8 text is
// checked as Decode checks it; Latin-1 text longer than 255 is refused.
func atomText(b []byte) ([]byte, int, bool) {
	var n, off int
	switch b[0] {
	case tagSmallAtomUTF8, tagSmallAtom:
		if off = 1 + smallAtomHeader; len(b) < off {
			return nil, 0, false
		}
		n = int(b[1])
	default:
		if off = 1 + atomHeader; len(b) < off {
			return nil, 0, false
		}
		n = int(binary.BigEndian.Uint16(b[1:]))
	}
	if n > len(b)-off {
		return nil, 0, false
	}
	name := b[off : off+n]
	if b[0] == tagSmallAtom || b[0] == tagAtom {
		if n > maxAtomChars {
			return nil, 0, false
		}
	} else if !utf8.Valid(name) || (n > maxAtomChars && utf8.RuneCount(name) > maxAtomChars) {
		return nil, 0, false
	}
	return name, off + n, true
}

// atomHashBytes is atomHash over encoded atom text: UTF-8 text as is,
// Latin-1 text byte by byte (what atomHash gives for its UTF-8 form).
func atomHashBytes(s []byte, isUTF8 bool) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		v := uint32(s[i])
		if isUTF8 && i+1 < len(s) && v&0xFE == 0xC2 && s[i+1]&0xC0 == 0x80 {
			v = (v<<6 | uint32(s[i+1])&0x3F) & 0xFF
			i++
		}
		h = h<<4 + v
		if g := h & 0xf0000000; g != 0 {
			h ^= g >> 24
			h ^= g
		}
	}
	return h
}

// cmpBody compares the terms at the starts of a and b; when they are equal
// it also returns the bytes each took.
func cmpBody(a, b []byte, depth int) (c, na, nb int, ok bool) {
	if len(a) == 0 || len(b) == 0 || depth > MaxDepth {
		return 0, 0, 0, false
	}
	ta, tb := tagType(a), tagType(b)
	if ta == 0 || tb == 0 {
		return 0, 0, 0, false
	}
	if ta != tb {
		return cmpOrdered(ta, tb), 0, 0, true
	}
	switch ta {
	case TypeNumber:
		x, na, ok1 := smallInt(a)
		y, nb, ok2 := smallInt(b)
		if !ok1 || !ok2 {
			return 0, 0, 0, false
		}
		return cmpOrdered(x, y), na, nb, true
	case TypeAtom:
		x, na, ok1 := atomText(a)
		y, nb, ok2 := atomText(b)
		if !ok1 || !ok2 || !plainAtom(a[0], x) || !plainAtom(b[0], y) {
			return 0, 0, 0, false
		}
		return bytes.Compare(x, y), na, nb, true
	case TypeBitstring:
		if a[0] != tagBinary || b[0] != tagBinary {
			return 0, 0, 0, false
		}
		x, na, ok1 := binaryData(a)
		y, nb, ok2 := binaryData(b)
		if !ok1 || !ok2 {
			return 0, 0, 0, false
		}
		return bytes.Compare(x, y), na, nb, true
	case TypeNil:
		if a[0] != tagNil || b[0] != tagNil {
			return 0, 0, 0, false
		}
		return 0, 1, 1, true
	case TypeTuple:
		xa, offa, ok1 := tupleHeader(a)
		xb, offb, ok2 := tupleHeader(b)
		if !ok1 || !ok2 {
			return 0, 0, 0, false
		}
		if xa != xb {
			return cmpOrdered(xa, xb), 0, 0, true
		}
		for range xa {
			c, ea, eb, ok := cmpBody(a[offa:], b[offb:], depth+1)
			if !ok || c != 0 {
				return c, 0, 0, ok
			}
			offa += ea
			offb += eb
		}
		return 0, offa, offb, true
	}
	return 0, 0, 0, false
}

// plainAtom reports whether atom text compares correctly as raw bytes:
// UTF-8 text, or Latin-1 text that is ASCII.
func plainAtom(tag byte, text []byte) bool {
	if tag == tagSmallAtomUTF8 || tag == tagAtomUTF8 {
		return true
	}
	for _, c := range text {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// smallInt reads SMALL_INTEGER_EXT or INTEGER_EXT.
func smallInt(b []byte) (int64, int, bool) {
	switch b[0] {
	case tagSmallInteger:
		if len(b) >= 1+smallIntegerHeader {
			return int64(b[1]), 1 + smallIntegerHeader, true
		}
	case tagInteger:
		if len(b) >= 1+integerHeader {
			return int64(int32(binary.BigEndian.Uint32(b[1:]))), 1 + integerHeader, true
		}
	}
	return 0, 0, false
}

// binaryData reads BINARY_EXT (the tag checked): its bytes and its whole
// length.
func binaryData(b []byte) ([]byte, int, bool) {
	if len(b) < binHead {
		return nil, 0, false
	}
	n := uint64(binary.BigEndian.Uint32(b[1:]))
	if n > uint64(len(b)-binHead) {
		return nil, 0, false
	}
	return b[binHead : binHead+n], binHead + int(n), true
}

// tupleHeader returns a tuple encoding's arity and header length.
func tupleHeader(b []byte) (uint64, int, bool) {
	if b[0] == tagSmallTuple {
		if len(b) < 1+smallTupleHeader {
			return 0, 0, false
		}
		return uint64(b[1]), 1 + smallTupleHeader, true
	}
	if len(b) < 1+largeTupleHeader {
		return 0, 0, false
	}
	return uint64(binary.BigEndian.Uint32(b[1:])), 1 + largeTupleHeader, true
}

// tagType is the Type of the term an encoding starts with, when its tag
// alone decides it (and, for STRING_EXT, its length), else 0.
func tagType(b []byte) Type {
	if b[0] == tagString {
		if len(b) < 3 {
			return 0
		}
		if b[1] == 0 && b[2] == 0 {
			return TypeNil
		}
		return TypeList
	}
	return layouts[b[0]].typ // 0 for LIST_EXT: one of length 0 takes its tail's type
}
