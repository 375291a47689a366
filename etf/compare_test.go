package etf

import (
	"encoding/hex"
	"math"
	"math/big"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

func opaqueHex(s string) *Opaque {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return &Opaque{Raw: b}
}

var (
	refTerm  = opaqueHex("5a 0001" + nodeA + "00000000 00000001")
	funTerm  = opaqueHex("71 64 0005 6c69737473 64 0003 6d6170 61 02")
	portTerm = opaqueHex("59" + nodeA + "00000005 00000001")
	pidTerm  = opaqueHex("58" + nodeA + "00000001 00000000 00000000")
)

// orderChain is strictly increasing in Erlang term order (checked against
// erl's < by hand; TestOTPDifferential checks random pairs live).
var orderChain = []Term{
	Float(-1e300), bigLit("-0x10000000000000000"), Int(math.MinInt64), Float(-1.5), Int(-1), Int(0), Float(0.5), Int(1), Float(1.5), Int(2),
	Float(9007199254740992), Int(9007199254740993), Float(9007199254740994), bigLit("0x10000000000000000"),
	Float(1.8446744073709556e19), bigLit("1" + strings.Repeat("0", 400)),
	Atom(""), Atom("a"), Atom("b"), Atom("z"), Atom("é"), Atom("Ω"), Atom("日本"),
	refTerm, funTerm, portTerm, pidTerm,
	Tuple{}, Tuple{Atom("z")}, Tuple{Atom("a"), Atom("a")}, Tuple{Atom("a"), Atom("b")}, Tuple{Int(1), Int(2), Int(3)},
	Map{}, Map{{Int(1), Atom("a")}}, Map{{Int(2), Atom("a")}}, Map{{Float(1), Atom("a")}}, Map{{Atom("a"), Int(1)}},
	Map{{Atom("a"), Int(2)}}, Map{{Atom("a"), Int(1)}, {Atom("b"), Int(1)}},
	Nil,
	List{Int(0)}, &ImproperList{Elems: []Term{Int(1)}, Tail: Int(2)}, List{Int(1)}, List{Int(1), Int(2)},
	&ImproperList{Elems: []Term{Int(1), Atom("a")}, Tail: Atom("b")}, List{Int(1), Atom("a")}, List{Atom("a")},
	Binary{}, Bitstring{Bytes: []byte{0}, Bits: 1}, Binary{0}, Binary{1, 2}, Bitstring{Bytes: []byte{0x80}, Bits: 1}, Binary{128}, Binary{255},
}

func TestCompareChain(t *testing.T) {
	for i, a := range orderChain {
		for j, b := range orderChain {
			want := cmpOrdered(i, j)
			if got := Compare(a, b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", shortEnc(a), shortEnc(b), got, want)
			}
			if got := Equal(a, b); got != (i == j) {
				t.Errorf("Equal(%s, %s) = %v", shortEnc(a), shortEnc(b), got)
			}
			// CompareExact differs only between an integer and a float.
			_, af := a.(Float)
			_, bf := b.(Float)
			if a.Type() == TypeNumber && b.Type() == TypeNumber && af != bf {
				want = 1
				if bf {
					want = -1
				}
			}
			if got := CompareExact(a, b); got != want {
				t.Errorf("CompareExact(%s, %s) = %d, want %d", shortEnc(a), shortEnc(b), got, want)
			}
		}
	}
}

func TestCompareNumbers(t *testing.T) {
	negZero := Float(math.Copysign(0, -1))
	tests := []struct {
		a, b       Term
		cmp, exact int
		wantEqual  bool
	}{
		{Int(1), Float(1), 0, -1, false},
		{Float(1), Int(1), 0, 1, false},
		{Int(2), Float(1.5), 1, -1, false},
		{Float(1.5), Int(2), -1, 1, false},
		{negZero, Float(0), 0, 0, true},
		{Int(0), negZero, 0, -1, false},
		{Int(9007199254740993), Float(9007199254740992), 1, -1, false},
		{Int(9007199254740991), Float(9007199254740992), -1, -1, false},
		{bigLit("0x8000000000000000"), Float(0x1p63), 0, -1, false},
		{Int(math.MaxInt64), Float(0x1p63), -1, -1, false},
		{Int(math.MinInt64), Float(-0x1p63), 0, -1, false},
		{Int(math.MinInt64), Float(math.Nextafter(-0x1p63, 0)), -1, -1, false},
		{bigLit("0x10000000000000001"), Float(0x1p64), 1, -1, false},
		{bigLit("0xffffffffffffffff"), Float(0x1p64), -1, -1, false},
		{bigLit("1" + strings.Repeat("0", 400)), Float(math.MaxFloat64), 1, -1, false},
		{bigLit("-1" + strings.Repeat("0", 400)), Float(-math.MaxFloat64), -1, -1, false},
		{Int(-3), Float(-2.5), -1, -1, false},
		{Int(-2), Float(-2.5), 1, -1, false},
		{bigLit("0x10000000000000000"), Int(math.MaxInt64), 1, 1, false},
		{bigLit("-0x10000000000000000"), Int(math.MinInt64), -1, -1, false},
		{bigLit("-0x10000000000000000"), bigLit("0x10000000000000000"), -1, -1, false},
		// Not Erlang values, but Compare must stay total and not panic.
		{Float(math.Inf(1)), Int(math.MaxInt64), 1, 1, false},
		{Float(math.Inf(-1)), bigLit("-1" + strings.Repeat("0", 400)), -1, 1, false},
		{Float(math.NaN()), Float(math.Inf(1)), 1, 1, false},
		{Float(math.NaN()), Int(1), 1, 1, false},
		{Float(math.NaN()), bigLit("0x10000000000000000"), 1, 1, false},
	}
	for _, tc := range tests {
		if got := Compare(tc.a, tc.b); got != tc.cmp {
			t.Errorf("Compare(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.cmp)
		}
		if got := Compare(tc.b, tc.a); got != -tc.cmp {
			t.Errorf("Compare(%v, %v) = %d, want %d", tc.b, tc.a, got, -tc.cmp)
		}
		if got := CompareExact(tc.a, tc.b); got != tc.exact {
			t.Errorf("CompareExact(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.exact)
		}
		if got := CompareExact(tc.b, tc.a); got != -tc.exact {
			t.Errorf("CompareExact(%v, %v) = %d, want %d", tc.b, tc.a, got, -tc.exact)
		}
		if got := Equal(tc.a, tc.b); got != tc.wantEqual {
			t.Errorf("Equal(%v, %v) = %v", tc.a, tc.b, got)
		}
	}
}

// dets_utils:cmp/2 puts integers before floats through lists and equal-size
// tuples, and uses plain term order elsewhere.
func TestCompareExactStructure(t *testing.T) {
	tests := []struct {
		a, b  Term
		exact int
		cmp   int
	}{
		{Tuple{Int(1), Atom("a")}, Tuple{Float(1), Atom("a")}, -1, 0},
		{Tuple{Int(2), Atom("a")}, Tuple{Float(1.5), Atom("a")}, -1, 1},
		{Tuple{Float(1)}, Tuple{Int(1), Int(2)}, -1, -1},
		{List{Float(1)}, List{Int(2)}, 1, -1},
		{List{Int(1), Int(2)}, List{Int(1), Float(2)}, -1, 0},
		{&ImproperList{Elems: []Term{Int(1)}, Tail: Int(2)}, &ImproperList{Elems: []Term{Int(1)}, Tail: Float(2)}, -1, 0},
		{Tuple{List{Tuple{Int(5)}}}, Tuple{List{Tuple{Float(5)}}}, -1, 0},
		// Maps fall back to term order, with an exact tie-break.
		{Map{{Atom("a"), Int(2)}}, Map{{Atom("a"), Float(1.5)}}, 1, 1},
		{Map{{Atom("a"), Int(1)}}, Map{{Atom("a"), Float(1)}}, -1, 0},
		{Map{{Int(1), Atom("a")}}, Map{{Float(1), Atom("a")}}, -1, -1},
	}
	for _, tc := range tests {
		if got := CompareExact(tc.a, tc.b); got != tc.exact {
			t.Errorf("CompareExact(%s, %s) = %d, want %d", shortEnc(tc.a), shortEnc(tc.b), got, tc.exact)
		}
		if got := CompareExact(tc.b, tc.a); got != -tc.exact {
			t.Errorf("CompareExact reversed = %d, want %d", got, -tc.exact)
		}
		if got := Compare(tc.a, tc.b); got != tc.cmp {
			t.Errorf("Compare(%s, %s) = %d, want %d", shortEnc(tc.a), shortEnc(tc.b), got, tc.cmp)
		}
	}
}

func TestEqualShapes(t *testing.T) {
	pidOld := opaqueHex("67" + nodeA + "00000001 00000000 02")
	pidNew := opaqueHex("58" + nodeA + "00000001 00000000 00000002")
	pidUTF8 := opaqueHex("58 77 03 614068 00000001 00000000 00000002")
	refShort := opaqueHex("5a 0001" + nodeA + "00000000 00000003")
	refPadded := opaqueHex("5a 0003" + nodeA + "00000000 00000003 00000000 00000000")
	refOld := opaqueHex("72 0001" + nodeA + "00 00000003")
	portNew := opaqueHex("59" + nodeA + "00000005 00000001")
	portV4 := opaqueHex("78" + nodeA + "0000000000000005 00000001")
	equal := [][2]Term{
		{Map{{Atom("a"), Int(1)}, {Atom("b"), Int(2)}}, Map{{Atom("b"), Int(2)}, {Atom("a"), Int(1)}}},
		{&ImproperList{Elems: []Term{Int(1)}, Tail: List{Int(2)}}, List{Int(1), Int(2)}},
		{List{}, Nil},
		{Binary{}, Binary(nil)},
		{func() Term { b := new(BigInt); b.v.SetInt64(7); return b }(), Int(7)},
		{Bitstring{Bytes: []byte{0xff}, Bits: 3}, Bitstring{Bytes: []byte{0xe0}, Bits: 3}},
		{pidOld, pidNew}, {pidNew, pidUTF8}, {refShort, refPadded}, {refShort, refOld}, {portNew, portV4},
		{opaqueHex("58 64 0001 e9 00000001 00000000 00000002"), opaqueHex("58 76 0002 c3a9 00000001 00000000 00000002")},
		{nil, nil},
	}
	for _, p := range equal {
		if !Equal(p[0], p[1]) || Compare(p[0], p[1]) != 0 || CompareExact(p[1], p[0]) != 0 {
			t.Errorf("%#v and %#v should be equal", p[0], p[1])
		}
		if Phash2(p[0]) != Phash2(p[1]) {
			t.Errorf("%#v and %#v are equal but hash differently", p[0], p[1])
		}
	}
	differ := [][2]Term{
		{Binary{0}, Bitstring{Bytes: []byte{0}, Bits: 7}},
		{Map{{Int(1), Int(1)}}, Map{{Float(1), Int(1)}}},
		{Tuple{Int(1)}, Tuple{Float(1)}},
		{pidNew, opaqueHex("58" + nodeA + "00000001 00000000 00000003")},
		{refShort, opaqueHex("5a 0002" + nodeA + "00000000 00000003 00000001")},
		{Atom("a"), nil},
	}
	for _, p := range differ {
		if Equal(p[0], p[1]) || CompareExact(p[0], p[1]) == 0 {
			t.Errorf("%#v and %#v should differ", p[0], p[1])
		}
	}
}

// OTP 25 lists:sort/1 of pids, ports and references (HEX(term_to_binary)).
var otpSortedOpaques = [][]string{
	{
		"8358640003614068000000010000000000000000",
		"8358640003614068000000010000000000000001",
		"8358640003614068000000010000000000000007",
		"8358640003624068000000010000000000000000",
		"8358640003624068000000010000000000000001",
		"8358640003624068000000010000000000000007",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000000000000",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000000000001",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000000000007",
		"835864000D6E6F6E6F6465406E6F686F7374000000050000000000000000",
		"835864000D6E6F6E6F6465406E6F686F7374000000090000000000000000",
		"83586400036140680000012C0000000000000000",
		"83586400036140680000012C0000000000000001",
		"83586400036140680000012C0000000000000007",
		"83586400036240680000012C0000000000000000",
		"83586400036240680000012C0000000000000001",
		"83586400036240680000012C0000000000000007",
		"835864000D6E6F6E6F6465406E6F686F73740000012C0000000000000000",
		"835864000D6E6F6E6F6465406E6F686F73740000012C0000000000000001",
		"835864000D6E6F6E6F6465406E6F686F73740000012C0000000000000007",
		"8358640003614068000000010000000200000000",
		"8358640003614068000000010000000200000001",
		"8358640003614068000000010000000200000007",
		"8358640003624068000000010000000200000000",
		"8358640003624068000000010000000200000001",
		"8358640003624068000000010000000200000007",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000200000000",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000200000001",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000200000007",
		"83586400036140680000012C0000000200000000",
		"83586400036140680000012C0000000200000001",
		"83586400036140680000012C0000000200000007",
		"83586400036240680000012C0000000200000000",
		"83586400036240680000012C0000000200000001",
		"83586400036240680000012C0000000200000007",
		"835864000D6E6F6E6F6465406E6F686F73740000012C0000000200000000",
		"835864000D6E6F6E6F6465406E6F686F73740000012C0000000200000001",
		"835864000D6E6F6E6F6465406E6F686F73740000012C0000000200000007",
		"835864000D6E6F6E6F6465406E6F686F7374000000010000000300000000",
	},
	{
		"83596400036140680000000100000000",
		"83596400036140680000012C00000000",
		"8378640003614068000001000000000000000000",
		"83596400036140680000000100000001",
		"83596400036140680000012C00000001",
		"8378640003614068000001000000000000000001",
		"83596400036140680000000100000007",
		"83596400036140680000012C00000007",
		"8378640003614068000001000000000000000007",
		"835964000D6E6F6E6F6465406E6F686F73740000000000000000",
		"835964000D6E6F6E6F6465406E6F686F73740000000100000000",
		"835964000D6E6F6E6F6465406E6F686F73740000000300000000",
		"835964000D6E6F6E6F6465406E6F686F73740000000400000000",
		"835964000D6E6F6E6F6465406E6F686F73740000012C00000000",
		"835964000D6E6F6E6F6465406E6F686F73740000000100000001",
		"835964000D6E6F6E6F6465406E6F686F73740000012C00000001",
		"835964000D6E6F6E6F6465406E6F686F73740000000100000007",
		"835964000D6E6F6E6F6465406E6F686F73740000012C00000007",
	},
	{
		"835A00016400036140680000000000000001",
		"835A00016400036140680000000000000002",
		"835A000364000361406800000000000000030000000000000000",
		"835A0002640003614068000000000000000200000001",
		"835A0002640003614068000000000000000100000002",
		"835A000364000361406800000000000000010000000200000003",
		"835A000364000361406800000000000000000000000000000005",
		"835A00016400036140680000000100000001",
		"835A00016400036140680000000100000002",
		"835A000364000361406800000001000000030000000000000000",
		"835A0002640003614068000000010000000200000001",
		"835A0002640003614068000000010000000100000002",
		"835A000364000361406800000001000000010000000200000003",
		"835A000364000361406800000001000000000000000000000005",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000010000000000000000",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000020000000000000000",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000030000000000000000",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000020000000100000000",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000010000000200000000",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000010000000200000003",
		"835A000364000D6E6F6E6F6465406E6F686F737400000000000000000000000000000005",
		"835A000364000D6E6F6E6F6465406E6F686F73740000000000012F85F5780002AD8EBB4A",
		"835A000364000D6E6F6E6F6465406E6F686F73740000000000012F86F5780002AD8EBB4A",
		"835A000164000D6E6F6E6F6465406E6F686F73740000000100000001",
		"835A000164000D6E6F6E6F6465406E6F686F73740000000100000002",
		"835A000364000D6E6F6E6F6465406E6F686F737400000001000000030000000000000000",
		"835A000264000D6E6F6E6F6465406E6F686F7374000000010000000200000001",
		"835A000264000D6E6F6E6F6465406E6F686F7374000000010000000100000002",
		"835A000364000D6E6F6E6F6465406E6F686F737400000001000000010000000200000003",
		"835A000364000D6E6F6E6F6465406E6F686F737400000001000000000000000000000005",
	},
}

func TestCompareOpaqueOTPOrder(t *testing.T) {
	for _, group := range otpSortedOpaques {
		terms := make([]Term, len(group))
		for i, s := range group {
			v, err := Decode(hx(s))
			if err != nil {
				t.Fatal(err)
			}
			terms[i] = v
		}
		for i := range terms {
			for j := range terms {
				if got := Compare(terms[i], terms[j]); got != cmpOrdered(i, j) {
					t.Errorf("Compare(%s, %s) = %d, want %d", group[i], group[j], got, cmpOrdered(i, j))
				}
			}
		}
	}
}

func TestCompareNil(t *testing.T) {
	if Compare(nil, Int(0)) != -1 || Compare(Int(0), nil) != 1 || Compare(nil, nil) != 0 {
		t.Error("nil must sort before every term")
	}
	// Malformed hand-built terms must not panic.
	odd := []Term{nil, (*BigInt)(nil), (*ImproperList)(nil), (*Opaque)(nil), &Opaque{}, &Opaque{Raw: []byte{0x58}},
		Bitstring{}, Bitstring{Bytes: []byte{1}, Bits: 12}, &ImproperList{Tail: nil}, Tuple{nil}, Map{{nil, nil}},
		new(BigInt), Float(math.NaN())}
	for _, a := range odd {
		for _, b := range odd {
			if Compare(a, b) != -Compare(b, a) || CompareExact(a, b) != -CompareExact(b, a) {
				t.Errorf("order of %#v and %#v is not antisymmetric", a, b)
			}
			Equal(a, b)
		}
	}
}

// Random terms: the three relations must be consistent orders.
func TestCompareProperties(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	for range 3000 {
		a, b := randomPair(r, 3)
		c, e, x := Compare(a, b), Equal(a, b), CompareExact(a, b)
		if Compare(b, a) != -c || CompareExact(b, a) != -x || Equal(b, a) != e {
			t.Fatalf("not symmetric for %s, %s", shortEnc(a), shortEnc(b))
		}
		if e != (x == 0) {
			t.Fatalf("Equal %v but CompareExact %d for %s, %s", e, x, shortEnc(a), shortEnc(b))
		}
		if e && c != 0 {
			t.Fatalf("Equal but Compare %d", c)
		}
		if !Equal(a, a) || Compare(a, a) != 0 {
			t.Fatalf("%s not equal to itself", shortEnc(a))
		}
	}
	// Sorting must give a consistent total order (transitivity).
	terms := make([]Term, 150)
	for i := range terms {
		if i > 0 && r.Intn(3) == 0 {
			terms[i] = mutate(r, terms[r.Intn(i)])
		} else {
			terms[i] = randomTerm(r, 3)
		}
	}
	for _, cmp := range []func(a, b Term) int{Compare, CompareExact} {
		s := slices.Clone(terms)
		slices.SortFunc(s, cmp)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if cmp(s[i], s[j]) > 0 {
					t.Fatalf("sorted order broken at %d, %d: %s > %s", i, j, shortEnc(s[i]), shortEnc(s[j]))
				}
			}
		}
	}
}

func TestCompareBigFloatExact(t *testing.T) {
	// Every float beyond 2^63 is an integer; the BigInt just above or below
	// it must compare accordingly, without rounding.
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	for range 500 {
		f := math.Ldexp(1+r.Float64(), 64+r.Intn(900))
		if r.Intn(2) == 0 {
			f = -f
		}
		v, _ := new(big.Float).SetFloat64(f).Int(nil)
		eq := NewBigInt(v)
		above := NewBigInt(new(big.Int).Add(v, big.NewInt(1)))
		below := NewBigInt(new(big.Int).Sub(v, big.NewInt(1)))
		if Compare(eq, Float(f)) != 0 || Compare(above, Float(f)) != 1 || Compare(below, Float(f)) != -1 {
			t.Fatalf("exact comparison failed around %g", f)
		}
	}
}
