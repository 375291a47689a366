package etf

import (
	"math"
	"math/big"
	"math/rand"

	"github.com/godets/godets/internal/testutil"
)

// randomTerm returns a random term built only from the modelled types (no
// Opaque). depth bounds nesting: at depth <= 0 only scalars are produced.
// Shared by the codec, order, hash and text tests.
//
// Generated maps have keys that are distinct under Equal, and at most 32 of
// them, so OTP encodes them in sorted key order.
func randomTerm(r *rand.Rand, depth int) Term {
	if depth <= 0 {
		return randomScalar(r)
	}
	switch r.Intn(12) {
	case 0, 1, 2, 3, 4:
		return randomScalar(r)
	case 5:
		return randomString(r)
	case 6, 7:
		n := r.Intn(5)
		if r.Intn(20) == 0 {
			n = 256 + r.Intn(20) // LARGE_TUPLE_EXT
		}
		t := make(Tuple, n)
		for i := range t {
			t[i] = randomTerm(r, depth-1-n/64)
		}
		return t
	case 8, 9:
		n := r.Intn(5)
		l := make(List, n)
		for i := range l {
			l[i] = randomTerm(r, depth-1)
		}
		return l
	case 10:
		n := 1 + r.Intn(3)
		elems := make([]Term, n)
		for i := range elems {
			elems[i] = randomTerm(r, depth-1)
		}
		var tail Term
		for {
			tail = randomTerm(r, depth-1)
			switch tail.(type) {
			case List, *ImproperList:
				continue
			}
			break
		}
		return &ImproperList{Elems: elems, Tail: tail}
	default:
		return randomMap(r, depth-1)
	}
}

func randomMap(r *rand.Rand, depth int) Map {
	n := r.Intn(6)
	if r.Intn(8) == 0 {
		n = 20 + r.Intn(13) // up to 32 keys: still a flatmap in OTP
	}
	m := make(Map, 0, n)
	for tries := 0; len(m) < n && tries < 4*n; tries++ {
		k := randomTerm(r, depth)
		if _, dup := m.Get(k); dup {
			continue
		}
		m = append(m, Pair{Key: k, Value: randomTerm(r, depth)})
	}
	return m
}

var interestingInts = []int64{
	0, 1, -1, 2, 127, 128, 255, 256, -255, -256, 1000,
	1<<27 - 1, 1 << 27, -(1 << 27), -(1 << 27) - 1,
	math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1,
	math.MaxUint32, math.MaxUint32 + 1, 1 << 40, -(1 << 40),
	math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1,
	1 << 53, 1<<53 + 1, -(1 << 53) - 1,
}

var interestingFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 0.1, -2.5, 1e300, -1e-300,
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
	1 << 53, 1<<53 + 2, 1 << 63, -(1 << 63), 1 << 64, 9007199254740993, 255, 256, 1e15, 123456789.125,
}

var interestingAtoms = []Atom{
	"", "a", "ok", "true", "false", "undefined", "nil", "hello_world", "Hello", "with space",
	"it's", `back\slash`, "a.b", "a@b", "_x", "1abc", "é", "Ωmega", "日本語", "emoji😀",
	"ÿ", "ab\ncd", "\x00", "[]", "{}", "-", "+", "andalso", "'", "\"",
}

func randomScalar(r *rand.Rand) Term {
	switch r.Intn(10) {
	case 0:
		return randomAtom(r)
	case 1, 2:
		return randomInt(r)
	case 3:
		return randomBig(r)
	case 4:
		return randomFloat(r)
	case 5, 6:
		return randomBinary(r)
	case 7:
		return randomBitstring(r)
	case 8:
		return randomString(r)
	default:
		return Int(r.Intn(300) - 20)
	}
}

func randomAtom(r *rand.Rand) Atom {
	switch r.Intn(4) {
	case 0:
		return interestingAtoms[r.Intn(len(interestingAtoms))]
	case 1:
		// long atoms near the 255 character limit, sometimes multi-byte
		n := 200 + r.Intn(56)
		c := []rune{'x', 'é', '世'}[r.Intn(3)]
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = c
		}
		return Atom(rs)
	default:
		n := r.Intn(12)
		rs := make([]rune, n)
		for i := range rs {
			switch r.Intn(10) {
			case 0:
				rs[i] = rune(0xA0 + r.Intn(0x60)) // latin1 upper half
			case 1:
				rs[i] = rune(0x100 + r.Intn(0x2000)) // beyond latin1
			case 2:
				rs[i] = rune(0x1F300 + r.Intn(0x100)) // 4-byte UTF-8
			case 3:
				rs[i] = rune(0x20 + r.Intn(0x5F)) // printable ASCII incl. quotes
			default:
				rs[i] = rune('a' + r.Intn(26))
			}
		}
		return Atom(rs)
	}
}

func randomInt(r *rand.Rand) Term {
	switch r.Intn(4) {
	case 0:
		v := interestingInts[r.Intn(len(interestingInts))]
		return Int(v + int64(r.Intn(3)-1)*int64(r.Intn(2)))
	case 1:
		return Int(r.Int63() - r.Int63())
	case 2:
		return Int(int64(int32(r.Uint32())))
	default:
		return Int(r.Intn(1<<16) - 1<<15)
	}
}

func randomBig(r *rand.Rand) Term {
	nbits := 63 + r.Intn(200)
	if r.Intn(10) == 0 {
		nbits = 63 + r.Intn(2100) // LARGE_BIG_EXT sometimes (> 255 bytes)
	}
	v := new(big.Int).Rand(r, new(big.Int).Lsh(big.NewInt(1), uint(nbits)))
	v.SetBit(v, nbits-1, 1)
	if r.Intn(2) == 0 {
		v.Neg(v)
	}
	if r.Intn(4) == 0 {
		// exactly ±2^63, ±2^64 and their neighbours
		e := uint([]int{63, 64, 127, 128, 1023, 1024}[r.Intn(6)])
		v = new(big.Int).Lsh(big.NewInt(1), e)
		v.Add(v, big.NewInt(int64(r.Intn(3)-1)))
		if r.Intn(2) == 0 {
			v.Neg(v)
		}
	}
	return NewBigInt(v)
}

func randomFloat(r *rand.Rand) Float {
	switch r.Intn(4) {
	case 0:
		return Float(interestingFloats[r.Intn(len(interestingFloats))])
	case 1:
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return Float(f)
			}
		}
	case 2:
		return Float(float64(r.Intn(2001) - 1000))
	default:
		return Float(r.NormFloat64() * math.Pow(10, float64(r.Intn(40)-20)))
	}
}

func randomBinary(r *rand.Rand) Binary {
	n := r.Intn(20)
	if r.Intn(15) == 0 {
		n = r.Intn(300)
	}
	b := make(Binary, n)
	r.Read(b)
	if r.Intn(3) == 0 {
		for i := range b {
			b[i] = 'a' + b[i]%26 // printable
		}
	}
	return b
}

func randomBitstring(r *rand.Rand) Bitstring {
	n := 1 + r.Intn(6)
	bits := uint8(1 + r.Intn(7))
	b := make([]byte, n)
	r.Read(b)
	b[n-1] &= byte(0xFF << (8 - bits))
	return Bitstring{Bytes: b, Bits: bits}
}

// randomString returns a list of small integers: STRING_EXT when all are
// 0..255, otherwise a LIST_EXT of code points.
func randomString(r *rand.Rand) List {
	n := r.Intn(12)
	if r.Intn(300) == 0 {
		n = 65535 + r.Intn(3) // the STRING_EXT length limit
	}
	l := make(List, n)
	lim := 256
	if r.Intn(3) == 0 {
		lim = 0x800
	}
	for i := range l {
		if n > 1000 {
			l[i] = Int('a' + i%26)
		} else {
			l[i] = Int(r.Intn(lim))
		}
	}
	return l
}

// The old etf seed flag and variable still replay (the kit's are -seed
// and GODETS_SEED).
var _ = testutil.SeedAlias("etf.seed", "ETF_SEED")

// randomPair returns two terms worth comparing: often b is a near copy of a
// (one leaf changed, or an integer swapped for the equal float), so that
// comparisons reach deep into the structure rather than stopping at the
// type.
func randomPair(r *rand.Rand, depth int) (Term, Term) {
	a := randomTerm(r, depth)
	switch r.Intn(6) {
	case 0:
		return a, randomTerm(r, depth)
	case 1:
		return randomNumberPair(r)
	case 2:
		return a, a
	default:
		return a, mutate(r, a)
	}
}

// randomNumberPair returns an integer and a float close to it.
func randomNumberPair(r *rand.Rand) (Term, Term) {
	var i Term
	if r.Intn(2) == 0 {
		i = randomInt(r)
	} else {
		i = randomBig(r)
	}
	var f float64
	switch v := i.(type) {
	case Int:
		f = float64(v)
	case *BigInt:
		f, _ = new(big.Float).SetInt(&v.v).Float64()
	}
	if math.IsInf(f, 0) {
		f = math.Copysign(math.MaxFloat64, f)
	}
	switch r.Intn(3) {
	case 0:
		f = math.Nextafter(f, math.Inf(1))
	case 1:
		f = math.Nextafter(f, math.Inf(-1))
	}
	if math.IsInf(f, 0) {
		f = math.Copysign(math.MaxFloat64, f)
	}
	if r.Intn(2) == 0 {
		return i, Float(f)
	}
	return Float(f), i
}

// mutate returns a copy of t with one leaf changed.
func mutate(r *rand.Rand, t Term) Term {
	switch v := t.(type) {
	case Tuple:
		if len(v) > 0 {
			c := append(Tuple(nil), v...)
			i := r.Intn(len(c))
			c[i] = mutate(r, c[i])
			return c
		}
	case List:
		if len(v) > 0 {
			c := append(List(nil), v...)
			i := r.Intn(len(c))
			c[i] = mutate(r, c[i])
			return c
		}
	case *ImproperList:
		c := &ImproperList{Elems: append([]Term(nil), v.Elems...), Tail: v.Tail}
		if i := r.Intn(len(c.Elems) + 1); i < len(c.Elems) {
			c.Elems[i] = mutate(r, c.Elems[i])
		} else if m := mutate(r, c.Tail); !isListTerm(m) {
			c.Tail = m
		}
		return c
	case Map:
		if len(v) > 0 {
			c := append(Map(nil), v...)
			i := r.Intn(len(c))
			if r.Intn(3) == 0 {
				k := mutate(r, c[i].Key)
				if _, dup := c.Get(k); !dup {
					c[i].Key = k
				}
			} else {
				c[i].Value = mutate(r, c[i].Value)
			}
			return c
		}
	case Int:
		switch r.Intn(3) {
		case 0:
			if f := float64(v); int64(f) == int64(v) && f < 0x1p63 {
				return Float(f)
			}
		case 1:
			return v + 1
		}
		return v - 1
	case Float:
		if f := float64(v); f == math.Trunc(f) && math.Abs(f) < 0x1p63 && r.Intn(2) == 0 {
			return Int(int64(f))
		}
		return Float(math.Nextafter(float64(v), 0))
	case Binary:
		if len(v) > 0 {
			c := append(Binary(nil), v...)
			c[r.Intn(len(c))]++
			if r.Intn(3) == 0 {
				return c[:len(c)-1]
			}
			return c
		}
		return Binary{0}
	}
	return randomTerm(r, 1)
}

func isListTerm(t Term) bool {
	switch t.(type) {
	case List, *ImproperList:
		return true
	}
	return false
}
