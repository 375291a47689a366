package dets

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/godets/godets/etf"
)

// TestKeySpanShortcut: leadingBinary, keySpan's shortcut for a binary key
// in position 1, gives exactly the general walk's answer (the span, or
// nil) on encodings of many shapes, and on every truncation and many
// one-byte mutations of them. Seeded: -seed.
func TestKeySpanShortcut(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(testSeed(t)), 0))
	walk := func(enc []byte) []byte {
		s, e, ok := encodings.TupleElement(enc, 1)
		if !ok {
			return nil
		}
		return enc[s:e]
	}
	check := func(enc []byte) {
		t.Helper()
		got, want := keySpan(enc, 1), walk(enc)
		if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
			t.Fatalf("keySpan(% x) = % x, the walk gives % x", enc, got, want)
		}
	}
	bin := func(n int) etf.Binary {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	terms := []etf.Term{
		etf.Tuple{bin(16), bin(100)},
		etf.Tuple{bin(0)},
		etf.Tuple{bin(1), etf.Int(7), etf.Atom("x")},
		etf.Tuple{etf.Int(5), bin(3)},
		etf.Tuple{etf.Atom("k"), bin(3)},
		etf.Tuple{},
		bin(20),
		etf.List{bin(2)},
	}
	big := make(etf.Tuple, 300) // LARGE_TUPLE_EXT: the walk's case
	for i := range big {
		big[i] = bin(2)
	}
	terms = append(terms, big)
	for _, term := range terms {
		enc, err := etf.Encode(term)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= len(enc); n++ {
			check(enc[:n])
		}
		for range 200 {
			m := bytes.Clone(enc)
			m[r.IntN(min(len(m), 12))] = byte(r.IntN(256))
			check(m)
		}
	}
}
