package etf

// Raw gathers the operations on encodings that storage engines need when
// they keep terms as their term_to_binary bytes (the dets engine keeps
// every object so): slicing out a tuple's element, hashing and ordering
// encodings without building terms, and decoding with fewer allocations.
// A program that only converts terms needs none of it: Decode, Encode,
// Validate, Phash2 and CompareExact are the same operations on terms.
//
// Raw has no state; its zero value is its only value, so a call costs what
// a plain function call costs. A variable of it reads best (in an if or
// for header, etf.Raw{} would need parentheses):
//
//	var raw etf.Raw
//	if h, ok := raw.Phash2Body(body); ok {
//		// use h
//	}
//
// The rules for the bytes:
//
//   - An encoding starts with the version byte 131, as Decode takes it. A
//     body is one term's encoding without the version byte, as it sits
//     inside an enclosing encoding: the span TupleElement returns is one.
//   - Any bytes are safe: no method panics, reads outside its slices,
//     keeps them or writes them, and no result aliases them.
//   - DecodeBody and DecodeOne validate what they decode, as Decode does.
//     The others validate only what they walk: TupleElement the elements
//     up to pos, Phash2Body and CompareBodies the parts they read, and
//     CompareBodies may answer from the two tags alone. The caller
//     validates the whole encoding first (Validate) when it relies on more,
//     such as taking equal bytes for equal terms.
//   - An answer with ok true is the one the term-level function gives on
//     the decoded terms (Tuple.Element, Phash2, CompareExact). ok false
//     says only "not here": decode and use that function.
type Raw struct{}

// DecodeBody decodes a body (no version byte) that must hold exactly one
// term, as Decode decodes an encoding. The result never aliases b.
func (Raw) DecodeBody(b []byte) (Term, error) {
	d := decoder{b: b}
	t, err := d.term(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(b) {
		return nil, derr(d.off, "%d trailing bytes after the term", len(b)-d.off)
	}
	if d.deepAt != 0 {
		return nil, d.tooDeep(d.deepAt - 1)
	}
	return t, nil
}

// DecodeOne is Decode, returning the term as the only element of a new
// slice, as a lookup returns it. For a pair of binaries of up to 512
// bytes (onePairMax), the slice's array, the tuple, its headers and the
// bytes share one allocation instead of three.
func (Raw) DecodeOne(b []byte) ([]Term, error) {
	if one := decodeOnePair(b); one != nil {
		return one, nil
	}
	t, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return []Term{t}, nil
}

// TupleElement returns the byte span [start, end) in b of element pos
// (1-based) of the tuple that the encoding b holds; the span is a body.
// ok is false when b is compressed, not a tuple, has fewer than pos
// elements, or is malformed before the end of that element. Elements up
// to pos are validated as Decode would, except that one nested deeper than
// MaxDepth is walked as Validate walks it (a store can slice the key out
// of an object OTP wrote with a deep value); the rest of b is not looked
// at.
func (Raw) TupleElement(b []byte, pos int) (start, end int, ok bool) {
	if len(b) < 3 || b[0] != tagVersion || pos < 1 {
		return 0, 0, false
	}
	l, hdr, n, ok := headerOf(b[1:])
	if !ok || l.body != bodyTerms {
		return 0, 0, false
	}
	d := decoder{b: b, off: 1 + hdr}
	if uint64(pos) > n {
		return 0, 0, false
	}
	for i := 1; i <= pos; i++ {
		start = d.off
		if d.skip(1) != nil {
			return 0, 0, false
		}
	}
	return start, d.off, true
}

// Phash2Body returns erlang:phash2 of the term that body encodes, without
// decoding it, for integers (SMALL_INTEGER_EXT, INTEGER_EXT), atoms,
// binaries, [] and tuples of those. ok is false for any other encoding, or
// when body is not exactly one such term; then decode and use Phash2.
func (Raw) Phash2Body(body []byte) (h uint32, ok bool) {
	h, n, ok := hashBody(body, 0, 0)
	if !ok || n != len(body) {
		return 0, false
	}
	return h & phash2Mask, true
}

// CompareBodies compares the terms that two bodies encode in CompareExact
// order, without decoding them. It handles integers (SMALL_INTEGER_EXT,
// INTEGER_EXT), atoms in UTF-8 or ASCII text, binaries (BINARY_EXT), []
// and tuples of those, and terms of different types when the tags alone
// tell the types apart. ok is false otherwise (including malformed input);
// then decode and use CompareExact. Equal terms can have different
// encodings (a Latin-1 and a UTF-8 atom), so callers must not compare
// bodies byte by byte except as a shortcut for equality.
func (Raw) CompareBodies(a, b []byte) (c int, ok bool) {
	c, na, nb, ok := cmpBody(a, b, 0)
	if !ok || na != len(a) || nb != len(b) {
		return 0, false
	}
	return c, true
}

// BodyEnd returns the end of the term whose encoding starts at b[off] (a
// body, as inside a tuple or list), validating it as Decode would. ok is
// false when b holds no complete, valid term at off.
func (Raw) BodyEnd(b []byte, off int) (end int, ok bool) {
	if off < 0 || off >= len(b) {
		return 0, false
	}
	d := decoder{b: b, off: off}
	if d.skip(1) != nil || d.deepAt != 0 {
		return 0, false
	}
	return d.off, true
}

// HasNegativeZero reports whether the term that body encodes holds the
// float -0.0 anywhere, reading only tags and headers. OTP 25 takes -0.0
// and 0.0 for the same key (=:=) while their encodings differ in the sign
// bit, so a store that hashes key encodings must hash a key holding -0.0
// as its 0.0 form; this tells it when there is something to rewrite, and
// never allocates. ok is false when body is not exactly one term, or holds
// a pid, port, reference, fun or FLOAT_EXT (text) float, whose -0.0 only
// a decode tells; then decode. Only the headers are validated.
func (Raw) HasNegativeZero(body []byte) (has, ok bool) { return hasNegZero(body) }
