package matchspec

import (
	"math"
	"math/big"
	"math/bits"

	"github.com/godets/godets/etf"
)

// MaxIntBits is the largest integer, in bits, arithmetic produces: a larger
// result raises (system_limit in OTP terms). OTP's own limit is 33,554,368
// bits; this one is lower so that every operation stays within
// milliseconds, which bounds the time a hostile specification takes.
const MaxIntBits = 1 << 18

// arith runs the numeric functions.
func arith(f fn, a, b etf.Term) (etf.Term, bool) {
	switch f {
	case fnPlus1:
		if typeOf(a) != etf.TypeNumber {
			return nil, false
		}
		return a, true
	case fnNeg:
		return neg(a)
	case fnAbs:
		return abs(a)
	case fnFloat:
		x, ok := toFloat(a)
		if !ok {
			return nil, false
		}
		return etf.Float(x), true
	case fnRound, fnTrunc:
		switch v := a.(type) {
		case etf.Int, *etf.BigInt:
			return a, true
		case etf.Float:
			if f == fnRound {
				return floatToInt(math.Round(float64(v))), true
			}
			return floatToInt(math.Trunc(float64(v))), true
		}
		return nil, false
	case fnAdd, fnSub, fnMul:
		return addSubMul(f, a, b)
	case fnFDiv:
		x, ok1 := toFloat(a)
		y, ok2 := toFloat(b)
		if !ok1 || !ok2 || y == 0 {
			return nil, false
		}
		return finite(x / y)
	case fnDiv, fnRem:
		return divRem(f, a, b)
	case fnBand, fnBor, fnBxor:
		return bitwise(f, a, b)
	case fnBnot:
		if v, ok := a.(etf.Int); ok {
			return ^v, true
		}
		if v, ok := toBig(a); ok { // toBig refuses a nil *BigInt
			return etf.NewBigInt(new(big.Int).Not(v)), true
		}
		return nil, false
	case fnBsl, fnBsr:
		return shift(f, a, b)
	}
	return nil, false
}

func finite(x float64) (etf.Term, bool) {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil, false
	}
	return etf.Float(x), true
}

// bigResult returns v as a term, or fails when it is over MaxIntBits.
func bigResult(v *big.Int) (etf.Term, bool) {
	if v.BitLen() > MaxIntBits {
		return nil, false
	}
	return etf.NewBigInt(v), true
}

func toBig(t etf.Term) (*big.Int, bool) {
	switch v := t.(type) {
	case etf.Int:
		return big.NewInt(int64(v)), true
	case *etf.BigInt:
		if v == nil {
			return nil, false
		}
		return v.Big(), true
	}
	return nil, false
}

// toFloat converts a number as OTP does. Bignums go through OTP's own
// algorithm (digit by digit from the top, rounding at each step), whose
// result can be one unit in the last place off the correctly rounded one.
func toFloat(t etf.Term) (float64, bool) {
	switch v := t.(type) {
	case etf.Int:
		return float64(v), true
	case etf.Float:
		return float64(v), true
	case *etf.BigInt:
		if v == nil {
			return 0, false
		}
		return bigToFloat(v.Big())
	}
	return 0, false
}

// bigToFloat accumulates 64-bit digits, most significant first:
// d = d*2^64 + float(digit), failing once d is not finite.
func bigToFloat(x *big.Int) (float64, bool) {
	words := x.Bits()
	var digits []uint64
	if bits.UintSize == 64 {
		digits = make([]uint64, len(words))
		for i, w := range words {
			digits[i] = uint64(w)
		}
	} else {
		for i := 0; i < len(words); i += 2 {
			d := uint64(words[i])
			if i+1 < len(words) {
				d |= uint64(words[i+1]) << 32
			}
			digits = append(digits, d)
		}
	}
	const base = 18446744073709551616.0 // 2^64
	d := 0.0
	for i := len(digits) - 1; i >= 0; i-- {
		d = float64(d*base) + float64(digits[i])
		if math.IsInf(d, 0) {
			return 0, false
		}
	}
	if x.Sign() < 0 {
		d = -d
	}
	return d, true
}

// floatToInt converts an integral float exactly.
func floatToInt(f float64) etf.Term {
	if f >= -9.223372036854775808e18 && f < 9.223372036854775808e18 {
		return etf.Int(int64(f))
	}
	v, _ := new(big.Float).SetFloat64(f).Int(nil)
	return etf.NewBigInt(v)
}

func neg(a etf.Term) (etf.Term, bool) {
	switch v := a.(type) {
	case etf.Int:
		if v == math.MinInt64 {
			return etf.NewBigInt(new(big.Int).Neg(big.NewInt(int64(v)))), true
		}
		return -v, true
	case *etf.BigInt:
		if v == nil {
			return nil, false
		}
		return etf.NewBigInt(new(big.Int).Neg(v.Big())), true
	case etf.Float:
		return -v, true
	}
	return nil, false
}

func abs(a etf.Term) (etf.Term, bool) {
	switch v := a.(type) {
	case etf.Int:
		if v >= 0 {
			return v, true
		}
		return neg(v)
	case *etf.BigInt:
		if v == nil {
			return nil, false
		}
		return etf.NewBigInt(new(big.Int).Abs(v.Big())), true
	case etf.Float:
		if v < 0 {
			return -v, true
		}
		return v, true // abs(-0.0) is -0.0 in OTP 25
	}
	return nil, false
}

func addSubMul(f fn, a, b etf.Term) (etf.Term, bool) {
	x, xi := a.(etf.Int)
	y, yi := b.(etf.Int)
	if xi && yi {
		switch f {
		case fnAdd:
			s := x + y
			if (s > x) == (y > 0) {
				return s, true
			}
		case fnSub:
			d := x - y
			if (d < x) == (y > 0) {
				return d, true
			}
		case fnMul:
			if x == 0 || y == 0 {
				return etf.Int(0), true
			}
			p := x * y
			if p/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64) {
				return p, true
			}
		}
	}
	if isInteger(a) && isInteger(b) {
		p, _ := toBig(a)
		q, _ := toBig(b)
		if f == fnMul && p.BitLen()+q.BitLen() > MaxIntBits+1 {
			return nil, false
		}
		switch f {
		case fnAdd:
			return bigResult(p.Add(p, q))
		case fnSub:
			return bigResult(p.Sub(p, q))
		default:
			return bigResult(p.Mul(p, q))
		}
	}
	fx, ok1 := toFloat(a)
	fy, ok2 := toFloat(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	switch f {
	case fnAdd:
		return finite(fx + fy)
	case fnSub:
		return finite(fx - fy)
	default:
		return finite(fx * fy)
	}
}

func divRem(f fn, a, b etf.Term) (etf.Term, bool) {
	x, xi := a.(etf.Int)
	y, yi := b.(etf.Int)
	if xi && yi {
		if y == 0 {
			return nil, false
		}
		if !(x == math.MinInt64 && y == -1) {
			if f == fnDiv {
				return x / y, true
			}
			return x % y, true
		}
	}
	p, ok1 := toBig(a)
	q, ok2 := toBig(b)
	if !ok1 || !ok2 || q.Sign() == 0 {
		return nil, false
	}
	if f == fnDiv {
		return bigResult(p.Quo(p, q))
	}
	return bigResult(p.Rem(p, q))
}

func bitwise(f fn, a, b etf.Term) (etf.Term, bool) {
	x, xi := a.(etf.Int)
	y, yi := b.(etf.Int)
	if xi && yi {
		switch f {
		case fnBand:
			return x & y, true
		case fnBor:
			return x | y, true
		default:
			return x ^ y, true
		}
	}
	p, ok1 := toBig(a)
	q, ok2 := toBig(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	switch f {
	case fnBand:
		return bigResult(p.And(p, q))
	case fnBor:
		return bigResult(p.Or(p, q))
	default:
		return bigResult(p.Xor(p, q))
	}
}

// shift is bsl and bsr; a negative count shifts the other way.
func shift(f fn, a, b etf.Term) (etf.Term, bool) {
	if !isInteger(a) || !isInteger(b) {
		return nil, false
	}
	left := f == fnBsl
	n, small := b.(etf.Int)
	var count int64
	if small {
		count = int64(n)
		if count < 0 {
			left, count = !left, -count
			if count < 0 { // MinInt64
				count = math.MaxInt64
			}
		}
	} else {
		if b.(*etf.BigInt).Sign() < 0 {
			left = !left
		}
		count = math.MaxInt64
	}
	v, _ := toBig(a)
	if left {
		if v.Sign() == 0 {
			return etf.Int(0), true
		}
		if count > MaxIntBits || int64(v.BitLen())+count > MaxIntBits {
			return nil, false
		}
		return bigResult(v.Lsh(v, uint(count)))
	}
	if count > int64(v.BitLen()) {
		if v.Sign() < 0 {
			return etf.Int(-1), true
		}
		return etf.Int(0), true
	}
	return etf.NewBigInt(v.Rsh(v, uint(count))), true
}
