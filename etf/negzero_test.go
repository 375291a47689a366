package etf

import (
	"math"
	"math/big"
	"math/rand"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

var negZero = Float(math.Copysign(0, -1))

// aPid is a NEW_PID_EXT of node 'a', an opaque term.
var aPid = &Opaque{Raw: []byte{tagNewPid, tagSmallAtomUTF8, 1, 'a', 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}}

// body is t's encoding without the version byte.
func body(t testing.TB, term Term) []byte {
	t.Helper()
	b, err := Encode(term)
	if err != nil {
		t.Fatal(err)
	}
	return b[1:]
}

func TestHasNegativeZero(t *testing.T) {
	var raw Raw
	// A binary holding -0.0's own NEW_FLOAT_EXT bytes is no float.
	lookalike := Binary{tagNewFloat, 0x80, 0, 0, 0, 0, 0, 0, 0}
	cases := []struct {
		term Term
		has  bool
	}{
		{negZero, true},
		{Float(0), false},
		{Float(-1.5), false},
		{lookalike, false},
		{Tuple{Int(70), Str("F"), Atom("F")}, false},
		{Tuple{Int(1), negZero}, true},
		{Tuple{Tuple{Tuple{Binary("x"), List{Int(1), negZero}}}}, true},
		{List{Float(0), Float(1)}, false},
		{&ImproperList{Elems: []Term{Int(1)}, Tail: negZero}, true},
		{Map{{Key: negZero, Value: Int(1)}}, true},
		{Map{{Key: Int(1), Value: Tuple{negZero}}}, true},
		{Map{{Key: Float(0), Value: lookalike}}, false},
		{NewBigInt(new(big.Int).Lsh(big.NewInt(-3), 100)), false},
		{Bitstring{Bytes: []byte{0x80}, Bits: 1}, false},
		{List{}, false},
	}
	for _, c := range cases {
		b := body(t, c.term)
		if has, ok := raw.HasNegativeZero(b); has != c.has || !ok {
			t.Errorf("%v: HasNegativeZero = %v, %v, want %v, true", c.term, has, ok, c.has)
		}
		for cut := range len(b) {
			if _, ok := raw.HasNegativeZero(b[:cut]); ok {
				t.Errorf("%v cut to %d bytes: ok", c.term, cut)
			}
		}
		if _, ok := raw.HasNegativeZero(append(b, tagNil)); ok {
			t.Errorf("%v with a trailing byte: ok", c.term)
		}
	}
	// What only a decode tells: opaque terms and FLOAT_EXT text.
	floatText := append([]byte{tagFloat}, make([]byte, 31)...)
	copy(floatText[1:], "-0.00000000000000000000e+00")
	if v, err := (Raw{}).DecodeBody(floatText); err != nil || !math.Signbit(float64(v.(Float))) {
		t.Fatalf("FLOAT_EXT -0.0 decodes to %v, %v", v, err)
	}
	pid := body(t, Tuple{Int(1), aPid})
	for _, b := range [][]byte{floatText, pid, nil, {tagAtomCacheRef, 0}} {
		if _, ok := raw.HasNegativeZero(b); ok {
			t.Errorf("%x: ok, want a decode", b)
		}
	}
	// A header counting more sub-terms than there are bytes stops the walk.
	if _, ok := raw.HasNegativeZero([]byte{tagList, 0xff, 0xff, 0xff, 0xff, tagNil}); ok {
		t.Error("a list of 2^32-1 elements in 6 bytes: ok")
	}
	deep := body(t, negZero)
	for range 10000 { // far deeper than Decode takes: the walk does not recurse
		deep = append([]byte{tagSmallTuple, 1}, deep...)
	}
	if has, ok := raw.HasNegativeZero(deep); !has || !ok {
		t.Errorf("10000 nested tuples around -0.0: %v, %v", has, ok)
	}
	key := body(t, Tuple{Binary("FFF"), Float(2.5), List{Int(1)}})
	if n := testing.AllocsPerRun(100, func() { raw.HasNegativeZero(key) }); n != 0 {
		t.Errorf("HasNegativeZero allocates %v times", n)
	}
}

// TestHasNegativeZeroRandom: on random terms, HasNegativeZero answers
// (ok) exactly when no opaque term is inside, and then as a walk of the
// decoded term does.
func TestHasNegativeZeroRandom(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewSource(seed))
	var raw Raw
	for i := range 20000 {
		term := randomTerm(r, 4)
		switch i % 6 {
		case 0, 3:
			term = Tuple{term, negZero}
		case 1:
			term = List{term, aPid}
		}
		want, opaque := termNegZero(term)
		has, ok := raw.HasNegativeZero(body(t, term))
		if ok == opaque || (ok && has != want) {
			t.Fatalf("%v: HasNegativeZero = %v, %v; the term has -0.0 %v, opaque parts %v", term, has, ok, want, opaque)
		}
	}
}

// termNegZero walks a term: whether it holds -0.0, and whether it holds
// an opaque term (pid, port, reference, fun).
func termNegZero(term Term) (has, opaque bool) {
	var walk func(Term)
	walk = func(x Term) {
		switch v := x.(type) {
		case Float:
			has = has || (v == 0 && math.Signbit(float64(v)))
		case Tuple:
			for _, e := range v {
				walk(e)
			}
		case List:
			for _, e := range v {
				walk(e)
			}
		case *ImproperList:
			for _, e := range v.Elems {
				walk(e)
			}
			walk(v.Tail)
		case Map:
			for _, p := range v {
				walk(p.Key)
				walk(p.Value)
			}
		case *Opaque:
			opaque = true
		}
	}
	walk(term)
	return has, opaque
}
