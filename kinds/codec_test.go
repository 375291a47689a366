package kinds

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
)

// roundTrip encodes v, checks the term against want (built by hand from the
// Erlang form), and decodes it back to v.
func roundTrip[T any](t *testing.T, c Codec[T], v T, want etf.Term, eq func(a, b T) bool) {
	t.Helper()
	got, err := c.Encode(v)
	if err != nil {
		t.Fatalf("Encode(%v): %v", v, err)
	}
	if !etf.Equal(got, want) {
		t.Fatalf("Encode(%v) = %#v, want %#v", v, got, want)
	}
	back, err := c.Decode(got)
	if err != nil {
		t.Fatalf("Decode(%#v): %v", got, err)
	}
	if !eq(back, v) {
		t.Fatalf("Decode(Encode(%v)) = %v", v, back)
	}
}

func eq[T comparable](a, b T) bool { return a == b }

func TestBuiltinRoundTrips(t *testing.T) {
	for _, s := range []string{"", "package", "héllo", "\xff\x00raw"} {
		roundTrip(t, String, s, etf.Binary(s), eq)
	}
	for _, s := range []string{"", "abc", "héllo ✓"} {
		roundTrip(t, Charlist, s, etf.Str(s), eq)
	}
	roundTrip(t, Bytes, []byte{1, 2, 3}, etf.Binary{1, 2, 3}, func(a, b []byte) bool { return string(a) == string(b) })
	for _, i := range []int64{0, 1, -1, 255, 256, math.MaxInt64, math.MinInt64} {
		roundTrip(t, Int, i, etf.Int(i), eq)
	}
	for _, f := range []float64{0, -1.5, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		roundTrip(t, Float, f, etf.Float(f), eq)
	}
	roundTrip(t, Bool, true, etf.Atom("true"), eq)
	roundTrip(t, Bool, false, etf.Atom("false"), eq)
	roundTrip(t, Atom, "ok", etf.Atom("ok"), eq)
	roundTrip(t, Atom, strings.Repeat("é", 255), etf.Atom(strings.Repeat("é", 255)), eq)
	roundTrip(t, Term, etf.Term(etf.Tuple{etf.Atom("a"), etf.Int(1)}), etf.Tuple{etf.Atom("a"), etf.Int(1)}, etf.Equal)
	roundTrip(t, Integer[uint64](), math.MaxUint64, etf.NewUint(math.MaxUint64), eq)
	roundTrip(t, Integer[int8](), -128, etf.Int(-128), eq)
	roundTrip(t, Integer[uint8](), 255, etf.Int(255), eq)
	roundTrip(t, List(Int), []int64{1, 2, 3}, etf.List{etf.Int(1), etf.Int(2), etf.Int(3)}, func(a, b []int64) bool {
		return len(a) == len(b) && (len(a) == 0 || a[0] == b[0] && a[1] == b[1] && a[2] == b[2])
	})
	roundTrip(t, Tuple2(String, Float), Pair[string, float64]{"x", 2.5}, etf.Tuple{etf.Binary("x"), etf.Float(2.5)}, eq)
}

// TestDecodeMismatch feeds every built-in codec terms of the wrong shape and
// checks for a typed error that names the expectation and the term found.
func TestDecodeMismatch(t *testing.T) {
	big1 := etf.NewBigInt(new(big.Int).Lsh(big.NewInt(1), 70))
	cases := []struct {
		name     string
		decode   func(etf.Term) error
		in       etf.Term
		expected string
		got      string
	}{
		{"String/int", dec(String), etf.Int(42), "binary", "integer 42"},
		{"String/charlist", dec(String), etf.Str("abc"), "binary", "list of 3 elements"},
		{"String/bitstring", dec(String), etf.Bitstring{Bytes: []byte{0xa0}, Bits: 3}, "binary", "bitstring of 3 bits"},
		{"Bytes/atom", dec(Bytes), etf.Atom("x"), "binary", `atom "x"`},
		{"Charlist/binary", dec(Charlist), etf.Binary("abc"), "list of code points", "binary of 3 bytes"},
		{"Charlist/badelem", dec(Charlist), etf.List{etf.Atom("a")}, "list of code points", "list with a non-code-point element"},
		{"Int/binary", dec(Int), etf.Binary("12"), "integer", "binary of 2 bytes"},
		{"Int/float", dec(Int), etf.Float(1), "integer", "float 1"},
		{"Int/big", dec(Int), big1, "integer in int64 range", "integer of 71 bits"},
		{"Uint8/300", dec(Integer[uint8]()), etf.Int(300), "integer in uint8 range", "integer 300"},
		{"Uint/neg", dec(Integer[uint]()), etf.Int(-1), "integer in uint range", "integer -1"},
		{"Float/int", dec(Float), etf.Int(1), "float", "integer 1"},
		{"Bool/atom", dec(Bool), etf.Atom("yes"), "atom true or false", `atom "yes"`},
		{"Bool/binary", dec(Bool), etf.Binary("true"), "atom true or false", "binary of 4 bytes"},
		{"Atom/binary", dec(Atom), etf.Binary("ok"), "atom", "binary of 2 bytes"},
		{"Term/nil", dec(Term), nil, "any term", "no term"},
		{"List/tuple", dec(List(Int)), etf.Tuple{}, "list of integer", "tuple of arity 0"},
		{"List/improper", dec(List(Int)), &etf.ImproperList{Elems: []etf.Term{etf.Int(1)}, Tail: etf.Int(2)}, "list of integer", "improper list"},
		{"Tuple2/arity3", dec(Tuple2(Int, Int)), etf.Tuple{etf.Int(1), etf.Int(2), etf.Int(3)}, "tuple of arity 2", "tuple of arity 3"},
		{"Tuple2/list", dec(Tuple2(Int, Int)), etf.List{etf.Int(1), etf.Int(2)}, "tuple of arity 2", "list of 2 elements"},
		{"Tuple2/map", dec(Tuple2(Int, Int)), etf.Map{}, "tuple of arity 2", "map of 0 pairs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.decode(c.in)
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrDecode) {
				t.Fatalf("got %v, want a *DecodeError", err)
			}
			if de.Expected != c.expected || de.Got != c.got {
				t.Fatalf("got Expected=%q Got=%q, want %q, %q", de.Expected, de.Got, c.expected, c.got)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "kinds: ") || strings.Contains(msg, "\n") {
				t.Fatalf("message %q is not one prefixed line", msg)
			}
		})
	}
}

func dec[T any](c Codec[T]) func(etf.Term) error {
	return func(x etf.Term) error {
		v, err := c.Decode(x)
		if err == nil {
			return errors.New("decode succeeded")
		}
		var zero T
		if any(v) != nil && !isZero(v, zero) {
			return errors.New("decode returned a non-zero value with its error")
		}
		return err
	}
}

func isZero[T any](v, zero T) bool {
	switch x := any(v).(type) {
	case []byte:
		return x == nil
	case []int64:
		return x == nil
	case etf.Term:
		return x == nil
	}
	return any(v) == any(zero)
}

type user struct {
	Name  string
	Age   int64
	Tags  []string
	Admin bool
}

var userCodec = Record("user",
	Field(String, func(u *user) *string { return &u.Name }),
	Field(Int, func(u *user) *int64 { return &u.Age }),
	Field(List(Atom), func(u *user) *[]string { return &u.Tags }),
	Field(Bool, func(u *user) *bool { return &u.Admin }),
)

func TestRecord(t *testing.T) {
	u := user{"ann", 41, []string{"a", "b"}, true}
	want := etf.Tuple{etf.Atom("user"), etf.Binary("ann"), etf.Int(41), etf.List{etf.Atom("a"), etf.Atom("b")}, etf.True}
	roundTrip(t, userCodec, u, want, func(a, b user) bool {
		return a.Name == b.Name && a.Age == b.Age && a.Admin == b.Admin && strings.Join(a.Tags, ",") == strings.Join(b.Tags, ",")
	})

	// A nested mismatch reports where it is.
	bad := etf.Tuple{etf.Atom("user"), etf.Binary("ann"), etf.Int(41), etf.List{etf.Atom("a"), etf.Binary("b")}, etf.True}
	_, err := userCodec.Decode(bad)
	var de *DecodeError
	if !errors.As(err, &de) || de.Path != ".4[1]" || de.Expected != "atom" || de.Got != "binary of 1 byte" {
		t.Fatalf("nested mismatch: %v (%+v)", err, de)
	}
	if got := err.Error(); got != `kinds: .4[1]: expected atom, got binary of 1 byte` {
		t.Fatalf("message %q", got)
	}

	// The tag is checked.
	wrongTag := append(etf.Tuple{etf.Atom("admin")}, want[1:]...)
	if _, err := userCodec.Decode(wrongTag); !errors.As(err, &de) || de.Path != ".1" || de.Got != `atom "admin"` {
		t.Fatalf("wrong tag: %v", err)
	}
	// A wrong arity is a mismatch of the whole record.
	if _, err := userCodec.Decode(want[:4]); !errors.As(err, &de) || de.Got != "tuple of arity 4" || !strings.Contains(de.Expected, "arity 5") {
		t.Fatalf("wrong arity: %v", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	check := func(name string, err error) {
		t.Helper()
		var ee *EncodeError
		if !errors.As(err, &ee) || !errors.Is(err, ErrEncode) {
			t.Errorf("%s: got %v, want *EncodeError", name, err)
		}
	}
	_, err := Float.Encode(math.NaN())
	check("NaN", err)
	_, err = Float.Encode(math.Inf(-1))
	check("-Inf", err)
	_, err = Atom.Encode(strings.Repeat("a", 256))
	check("long atom", err)
	_, err = Atom.Encode("\xff")
	check("invalid utf-8 atom", err)
	_, err = Charlist.Encode("\xff")
	check("invalid utf-8 charlist", err)
	_, err = Term.Encode(nil)
	check("nil term", err)
	_, err = List(Float).Encode([]float64{1, math.NaN()})
	check("nested NaN", err)
	var ee *EncodeError
	if errors.As(err, &ee); ee == nil || ee.Path != "[1]" {
		t.Errorf("nested NaN path: %+v", ee)
	}
}

type level int

var errBadLevel = errors.New("unknown level")

var levelCodec = Convert(Atom,
	func(s string) (level, error) {
		switch s {
		case "low":
			return 1, nil
		case "high":
			return 2, nil
		}
		return 0, errBadLevel
	},
	func(l level) (string, error) {
		switch l {
		case 1:
			return "low", nil
		case 2:
			return "high", nil
		}
		return "", errBadLevel
	})

func TestConvert(t *testing.T) {
	roundTrip(t, levelCodec, 2, etf.Atom("high"), eq)
	_, err := levelCodec.Decode(etf.Atom("mid"))
	if !errors.Is(err, ErrDecode) || !errors.Is(err, errBadLevel) {
		t.Fatalf("bad level: %v", err)
	}
	if _, err := levelCodec.Decode(etf.Int(1)); !errors.Is(err, ErrDecode) {
		t.Fatalf("wrong shape: %v", err)
	}
	if _, err := levelCodec.Encode(7); !errors.Is(err, ErrEncode) {
		t.Fatalf("encode bad level: %v", err)
	}
}

func TestDescribeIsShort(t *testing.T) {
	huge := etf.Atom(strings.Repeat("x", 250))
	_, err := Int.Decode(huge)
	if len(err.Error()) > 120 {
		t.Fatalf("message too long: %d bytes", len(err.Error()))
	}
	_, err = Int.Decode(etf.Binary(make([]byte, 1<<20)))
	if !strings.Contains(err.Error(), "binary of 1048576 bytes") {
		t.Fatalf("message %q", err)
	}
}

// TestZeroCodec: a codec with missing functions inside a combinator gives
// an error, not a panic.
func TestZeroCodec(t *testing.T) {
	var z Codec[int64]
	if _, err := List(z).Decode(etf.List{etf.Int(1)}); !errors.Is(err, ErrDecode) {
		t.Fatalf("List(zero).Decode: %v", err)
	}
	if _, err := List(z).Encode([]int64{1}); !errors.Is(err, ErrEncode) {
		t.Fatalf("List(zero).Encode: %v", err)
	}
	c := Tuple(Field(z, func(p *struct{ X int64 }) *int64 { return &p.X }))
	if _, err := c.Decode(etf.Tuple{etf.Int(1)}); !errors.Is(err, ErrDecode) {
		t.Fatalf("Tuple(zero).Decode: %v", err)
	}
}
