package etf

import "encoding/binary"

// The layout of each tag of the external format, in one table that every
// walker reads: decoder.term and decoder.skip (through head and needBody),
// hashBody, cmpBody, Raw.TupleElement and tagType (through headerOf), and
// flatShape, whose fast path uses the same constants. A term is its tag, a
// header of fixed size, then a body whose length the header's count gives:
// bytes, sub-terms, or key-value pairs. What a walker does with the parts
// (build, validate, hash, compare) stays in the walker; where the parts
// are is known only here. Pids, ports, references and funs have an
// irregular layout of sub-terms and fields, which skipOpaque alone reads.

// bodyKind says what a header's count counts.
type bodyKind uint8

const (
	bodyUnread bodyKind = iota // not a term in a file: refused by the walkers
	bodyFixed                  // no count: the header is the whole term
	bodyBytes                  // count bytes of text or data
	bodyTerms                  // count sub-terms (tuples)
	bodyList                   // count sub-terms, then a tail
	bodyPairs                  // count key-value pairs (maps)
	bodyOpaque                 // pids, ports, references, funs: skipOpaque
)

// tagLayout is one tag's layout.
type tagLayout struct {
	typ    Type     // the Type the tag alone decides; 0 when it does not (STRING_EXT, LIST_EXT)
	body   bodyKind // what follows the header
	header uint8    // header bytes after the tag: the count first, then fixed fields
	width  uint8    // bytes of the big-endian count (0, 1, 2 or 4)
	// The names in "x needs n bytes" errors, for the header and the body.
	headWhat, bodyWhat string
}

// Header sizes of the commonest tags, which the table is built from and
// which the fast paths (hashBody, cmpBody, flatShape and their helpers)
// use without reading the table, which measurably slowed Raw.Phash2Body.
const (
	smallIntegerHeader = 1 // SMALL_INTEGER_EXT: Int:8 (the whole term)
	integerHeader      = 4 // INTEGER_EXT: Int:32
	smallAtomHeader    = 1 // SMALL_ATOM_EXT, SMALL_ATOM_UTF8_EXT: Len:8
	atomHeader         = 2 // ATOM_EXT, ATOM_UTF8_EXT: Len:16
	binaryHeader       = 4 // BINARY_EXT: Len:32
	smallTupleHeader   = 1 // SMALL_TUPLE_EXT: Arity:8
	largeTupleHeader   = 4 // LARGE_TUPLE_EXT: Arity:32
)

var layouts = func() (t [256]tagLayout) {
	fixed := func(typ Type, n uint8, what string) tagLayout {
		return tagLayout{typ: typ, body: bodyFixed, header: n, headWhat: what}
	}
	counted := func(typ Type, body bodyKind, header, width uint8, headWhat, bodyWhat string) tagLayout {
		return tagLayout{typ, body, header, width, headWhat, bodyWhat}
	}
	t[tagSmallInteger] = fixed(TypeNumber, smallIntegerHeader, "SMALL_INTEGER_EXT")
	t[tagInteger] = fixed(TypeNumber, integerHeader, "INTEGER_EXT")
	t[tagNewFloat] = fixed(TypeNumber, 8, "NEW_FLOAT_EXT")
	t[tagFloat] = fixed(TypeNumber, 31, "FLOAT_EXT")
	t[tagNil] = fixed(TypeNil, 0, "NIL_EXT")
	// A bignum's header is its length and its sign byte.
	t[tagSmallBig] = counted(TypeNumber, bodyBytes, 2, 1, "SMALL_BIG_EXT", "bignum magnitude")
	t[tagLargeBig] = counted(TypeNumber, bodyBytes, 5, 4, "LARGE_BIG_EXT", "bignum magnitude")
	t[tagAtom] = counted(TypeAtom, bodyBytes, atomHeader, 2, "atom length", "atom text")
	t[tagAtomUTF8] = t[tagAtom]
	t[tagSmallAtom] = counted(TypeAtom, bodyBytes, smallAtomHeader, 1, "atom length", "atom text")
	t[tagSmallAtomUTF8] = t[tagSmallAtom]
	t[tagString] = counted(0, bodyBytes, 2, 2, "STRING_EXT", "STRING_EXT")
	t[tagBinary] = counted(TypeBitstring, bodyBytes, binaryHeader, 4, "BINARY_EXT", "BINARY_EXT")
	// BIT_BINARY_EXT's header is its length and the bits in its last byte.
	t[tagBitBinary] = counted(TypeBitstring, bodyBytes, 5, 4, "BIT_BINARY_EXT", "BIT_BINARY_EXT")
	t[tagSmallTuple] = counted(TypeTuple, bodyTerms, smallTupleHeader, 1, "SMALL_TUPLE_EXT", "tuple elements")
	t[tagLargeTuple] = counted(TypeTuple, bodyTerms, largeTupleHeader, 4, "LARGE_TUPLE_EXT", "tuple elements")
	t[tagList] = counted(0, bodyList, 4, 4, "LIST_EXT", "list elements")
	t[tagMap] = counted(TypeMap, bodyPairs, 4, 4, "MAP_EXT", "map pairs")
	for tag, typ := range map[byte]Type{
		tagPid: TypePid, tagNewPid: TypePid,
		tagPort: TypePort, tagNewPort: TypePort, tagV4Port: TypePort,
		tagReference: TypeReference, tagNewReference: TypeReference, tagNewerReference: TypeReference,
		tagExport: TypeFun, tagNewFun: TypeFun, tagFun: TypeFun,
	} {
		t[tag] = tagLayout{typ: typ, body: bodyOpaque}
	}
	return t
}()

// head reads the header of the term whose tag d has just read (the layout
// l): it checks that the header is there, reads its count, and leaves d.off
// after the count (the fixed fields after it are there to read).
func (d *decoder) head(l *tagLayout) (n uint64, err error) {
	if err := d.need(uint64(l.header), l.headWhat); err != nil {
		return 0, err
	}
	switch l.width {
	case 1:
		n = uint64(d.u8())
	case 2:
		n = uint64(d.u16())
	case 4:
		n = uint64(d.u32())
	}
	return n, nil
}

// needBody checks that the body of n (the header's count) can be there:
// n bytes, or n sub-terms (and a list's tail, a map's values) of at
// least a byte each.
func (d *decoder) needBody(l *tagLayout, n uint64) error {
	switch l.body {
	case bodyList:
		n++
	case bodyPairs:
		n *= 2
	}
	return d.need(n, l.bodyWhat)
}

// headerOf is head for walkers that give up rather than explain: the
// layout of the term at the start of b, its header's length including
// the tag, and the header's count. ok is false when b is empty or shorter
// than the header.
func headerOf(b []byte) (l *tagLayout, hdr int, n uint64, ok bool) {
	if len(b) == 0 {
		return nil, 0, 0, false
	}
	l = &layouts[b[0]]
	hdr = 1 + int(l.header)
	if len(b) < hdr {
		return l, 0, 0, false
	}
	switch l.width {
	case 1:
		n = uint64(b[1])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[1:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(b[1:]))
	}
	return l, hdr, n, true
}
