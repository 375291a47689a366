package etf

// Helpers shared by the text tests: the seed, term comparison that sees
// float signs, and sample terms.

import (
	"math"
	"math/big"
	"math/rand"
	"slices"

	"github.com/godets/godets/internal/testutil"
)

// The old text seed flag and variable still replay.
var _ = testutil.SeedAlias("text.seed", "TEXT_SEED")

// parseBigTerm parses a decimal integer for test tables.
func parseBigTerm(s string) Term {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad test integer " + s)
	}
	return NewBigInt(v)
}

// equalWithZeroSigns is Equal that also tells -0.0 from 0.0: the text form must keep
// the sign, even where OTP 25's =:= does not look at it.
func equalWithZeroSigns(a, b Term) bool {
	if !Equal(a, b) {
		return false
	}
	return slices.Equal(floatSignBits(a, nil), floatSignBits(b, nil))
}

// floatSignBits lists the sign bits of every float in t, in a canonical walk
// (map pairs in key order).
func floatSignBits(t Term, acc []bool) []bool {
	switch v := t.(type) {
	case Float:
		return append(acc, math.Signbit(float64(v)))
	case Tuple:
		for _, e := range v {
			acc = floatSignBits(e, acc)
		}
	case List:
		for _, e := range v {
			acc = floatSignBits(e, acc)
		}
	case *ImproperList:
		for _, e := range v.Elems {
			acc = floatSignBits(e, acc)
		}
		acc = floatSignBits(v.Tail, acc)
	case Map:
		s := slices.Clone(v)
		slices.SortFunc(s, func(a, b Pair) int { return CompareExact(a.Key, b.Key) })
		for _, p := range s {
			acc = floatSignBits(p.Key, acc)
			acc = floatSignBits(p.Value, acc)
		}
	}
	return acc
}

// exportFun builds fun M:F/A as OTP 25 encodes it (checked in erl:
// term_to_binary(fun lists:map/2)).
func exportFun(m, f string, arity int) *Opaque { return &Opaque{Raw: exportRaw(m, f, arity)} }

var negativeZero = Float(math.Copysign(0, -1))

// nestedTuples returns n nested tuples: {{...{}...}}.
func nestedTuples(n int) Term {
	var t Term = Tuple{}
	for i := 1; i < n; i++ {
		t = Tuple{t}
	}
	return t
}

// typicalDETSObject is a typical DETS object: {<<16-byte key>>, <<100-byte value>>}.
func typicalDETSObject() Term {
	r := rand.New(rand.NewSource(1))
	k, v := make(Binary, 16), make(Binary, 100)
	r.Read(k)
	r.Read(v)
	return Tuple{k, v}
}
