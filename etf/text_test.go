package etf

// Helpers shared by the text tests: the seed, term comparison that sees
// float signs, and sample terms.

import (
	"flag"
	"math"
	"math/big"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

var textSeedFlag = flag.Int64("text.seed", 0, "seed for randomized text tests (0: TEXT_SEED or time)")

// txtSeed returns the seed for a randomized text test and logs it.
func txtSeed(t testing.TB) int64 {
	t.Helper()
	seed := *textSeedFlag
	if seed == 0 {
		if s := os.Getenv("TEXT_SEED"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("bad TEXT_SEED %q: %v", s, err)
			}
			seed = v
		}
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -text.seed=%d or TEXT_SEED=%d)", seed, seed, seed)
	return seed
}

// txtBig parses a decimal integer for test tables.
func txtBig(s string) Term {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad test integer " + s)
	}
	return NewBigInt(v)
}

// txtSame is Equal that also tells -0.0 from 0.0: the text form must keep
// the sign, even where OTP 25's =:= does not look at it.
func txtSame(a, b Term) bool {
	if !Equal(a, b) {
		return false
	}
	return slices.Equal(txtFloatSigns(a, nil), txtFloatSigns(b, nil))
}

// txtFloatSigns lists the sign bits of every float in t, in a canonical walk
// (map pairs in key order).
func txtFloatSigns(t Term, acc []bool) []bool {
	switch v := t.(type) {
	case Float:
		return append(acc, math.Signbit(float64(v)))
	case Tuple:
		for _, e := range v {
			acc = txtFloatSigns(e, acc)
		}
	case List:
		for _, e := range v {
			acc = txtFloatSigns(e, acc)
		}
	case *ImproperList:
		for _, e := range v.Elems {
			acc = txtFloatSigns(e, acc)
		}
		acc = txtFloatSigns(v.Tail, acc)
	case Map:
		s := slices.Clone(v)
		slices.SortFunc(s, func(a, b Pair) int { return CompareExact(a.Key, b.Key) })
		for _, p := range s {
			acc = txtFloatSigns(p.Key, acc)
			acc = txtFloatSigns(p.Value, acc)
		}
	}
	return acc
}

// txtExport builds fun M:F/A as OTP 25 encodes it (checked in erl:
// term_to_binary(fun lists:map/2)).
func txtExport(m, f string, arity int) *Opaque { return &Opaque{Raw: exportRaw(m, f, arity)} }

var txtNegZero = Float(math.Copysign(0, -1))

// txtDeepTuple returns n nested tuples: {{...{}...}}.
func txtDeepTuple(n int) Term {
	var t Term = Tuple{}
	for i := 1; i < n; i++ {
		t = Tuple{t}
	}
	return t
}

// txtBenchTerm is a typical DETS object: {<<16-byte key>>, <<100-byte value>>}.
func txtBenchTerm() Term {
	r := rand.New(rand.NewSource(1))
	k, v := make(Binary, 16), make(Binary, 100)
	r.Read(k)
	r.Read(v)
	return Tuple{k, v}
}
