package etf

import (
	"math/big"
	"strings"
	"testing"
)

// TestLayoutsMatchEncode checks the tag table against Encode, which has
// its own knowledge of the format: for each kind of term, the tag's Type
// is the term's, and a byte body's header and count add up to exactly the
// encoding; a term body's count is its number of elements.
func TestLayoutsMatchEncode(t *testing.T) {
	huge := new(big.Int).Lsh(big.NewInt(1), 2100)
	cases := []struct {
		term  Term
		tag   byte
		count uint64 // elements, for sub-term bodies
	}{
		{Int(7), tagSmallInteger, 0},
		{Int(-70000), tagInteger, 0},
		{Int(1 << 40), tagSmallBig, 0},
		{NewBigInt(huge), tagLargeBig, 0},
		{Float(1.5), tagNewFloat, 0},
		{Atom("ok"), tagAtom, 0},
		{Atom(strings.Repeat("é", 255)), tagAtom, 0},
		{Atom("Ж"), tagSmallAtomUTF8, 0},
		{Atom(strings.Repeat("Ж", 200)), tagAtomUTF8, 0},
		{Nil, tagNil, 0},
		{Str("abc"), tagString, 0},
		{Binary("data"), tagBinary, 0},
		{Bitstring{Bytes: []byte{0xE0}, Bits: 3}, tagBitBinary, 0},
		{Tuple{Int(1), Int(2)}, tagSmallTuple, 2},
		{make(Tuple, 300), tagLargeTuple, 300},
		{List{Atom("a"), Float(2)}, tagList, 2},
		{Map{{Int(1), Int(2)}}, tagMap, 1},
	}
	for _, c := range cases {
		if tup, ok := c.term.(Tuple); ok {
			for i := range tup {
				if tup[i] == nil {
					tup[i] = Nil
				}
			}
		}
		enc, err := Encode(c.term)
		if err != nil {
			t.Fatalf("Encode(%v): %v", c.term, err)
		}
		body := enc[1:]
		if body[0] != c.tag {
			t.Fatalf("Encode(%v) has tag %d, the case says %d", c.term, body[0], c.tag)
		}
		l, hdr, n, ok := headerOf(body)
		if !ok {
			t.Errorf("tag %d: headerOf refuses Encode's %x", c.tag, body)
			continue
		}
		if want := c.term.Type(); l.typ != want && !(c.tag == tagString || c.tag == tagList) {
			t.Errorf("tag %d: table says type %v, the term is %v", c.tag, l.typ, want)
		}
		switch l.body {
		case bodyFixed:
			if hdr != len(body) {
				t.Errorf("tag %d: header of %d bytes, the encoding has %d", c.tag, hdr, len(body))
			}
		case bodyBytes:
			if uint64(hdr)+n != uint64(len(body)) {
				t.Errorf("tag %d: header %d + count %d, the encoding has %d bytes", c.tag, hdr, n, len(body))
			}
		case bodyTerms, bodyList, bodyPairs:
			if n != c.count {
				t.Errorf("tag %d: count %d, the term has %d", c.tag, n, c.count)
			}
		default:
			t.Errorf("tag %d: body kind %d", c.tag, l.body)
		}
	}
}
