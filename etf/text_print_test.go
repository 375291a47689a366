package etf

// Tests of the printer: Format, FormatStrict and float notation.

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// formatCases pair terms with the text Format must give. Each text was
// written by hand from the rules in text.go; TestTextOTPFormatTable checks
// that erl reads every one back as the term.
var formatCases = []struct {
	term Term
	want string
}{
	// atoms
	{Atom("ok"), "ok"},
	{Atom("a@b_C9"), "a@b_C9"},
	{Atom(""), "''"},
	{Atom("Hello"), "'Hello'"},
	{Atom("_x"), "'_x'"},
	{Atom("1abc"), "'1abc'"},
	{Atom("a.b"), "'a.b'"},
	{Atom("hello world"), "'hello world'"},
	{Atom("it's"), `'it\'s'`},
	{Atom(`back\slash`), `'back\\slash'`},
	{Atom(`say "hi"`), `'say "hi"'`},
	{Atom("end"), "'end'"},
	{Atom("fun"), "'fun'"},
	{Atom("andalso"), "'andalso'"},
	{Atom("maybe"), "'maybe'"},
	{Atom("else"), "'else'"},
	{Atom("é"), "'é'"},
	{Atom("ßa"), "'ßa'"},
	{Atom("日本語"), "'日本語'"},
	{Atom("emoji😀"), "'emoji😀'"},
	{Atom("ab\ncd"), `'ab\ncd'`},
	{Atom("t\tr\rv\vb\bf\fe\x1b"), `'t\tr\rv\vb\bf\fe\e'`},
	{Atom("\x00"), `'\x{0}'`},
	{Atom("\x7f"), `'\x{7f}'`},
	{Atom("\u0085"), `'\x{85}'`},
	{Atom("\u00a0"), `'\x{a0}'`},
	{Atom("a\u200bb"), `'a\x{200b}b'`},
	// integers
	{Int(0), "0"},
	{Int(-1), "-1"},
	{Int(math.MaxInt64), "9223372036854775807"},
	{Int(math.MinInt64), "-9223372036854775808"},
	{parseBigTerm("18446744073709551616"), "18446744073709551616"},
	{parseBigTerm("-9223372036854775809"), "-9223372036854775809"},
	// floats
	{Float(0), "0.0"},
	{negativeZero, "-0.0"},
	{Float(1), "1.0"},
	{Float(-1.5), "-1.5"},
	{Float(0.1), "0.1"},
	{Float(0.001), "0.001"},
	{Float(1e-5), "1.0e-5"},
	{Float(100), "100.0"},
	{Float(1234567), "1234567.0"},
	{Float(123456789.125), "123456789.125"},
	{Float(1e15), "1.0e15"},
	{Float(1e16), "1.0e16"},
	{Float(1e21), "1.0e21"},
	{Float(-2.5e-10), "-2.5e-10"},
	{Float(5e-324), "5.0e-324"},
	{Float(math.MaxFloat64), "1.7976931348623157e308"},
	{Float(9007199254740993), "9007199254740992.0"},
	// binaries and bit strings
	{Binary{}, "<<>>"},
	{Binary{1, 2, 3}, "<<1,2,3>>"},
	{Binary("abc"), `<<"abc">>`},
	{Binary(`a"b\c`), `<<"a\"b\\c">>`},
	{Binary("line\n\ttab\r"), `<<"line\n\ttab\r">>`},
	{Binary("é"), `<<"é"/utf8>>`},
	{Binary("日本\n"), `<<"日本\n"/utf8>>`},
	{Binary{0xC3}, "<<195>>"},
	{Binary{0, 'a'}, "<<0,97>>"},
	{Binary{'a', 0x7f}, "<<97,127>>"},
	{Bitstring{Bytes: []byte{0xA0}, Bits: 3}, "<<5:3>>"},
	{Bitstring{Bytes: []byte{'a', 'b', 0x80}, Bits: 1}, `<<"ab",1:1>>`},
	{Bitstring{Bytes: []byte{1, 0xF0}, Bits: 4}, "<<1,15:4>>"},
	// lists and strings
	{Nil, "[]"},
	{List{}, "[]"},
	{Str("abc"), `"abc"`},
	{Str(`a"b\c'`), `"a\"b\\c'"`},
	{Str("é\n"), `"é\n"`},
	{Str("日本"), `"日本"`},
	{List{Int(1000)}, `"Ϩ"`},
	{List{Int(0)}, "[0]"},
	{List{Int(8)}, "[8]"},
	{List{Int(127)}, "[127]"},
	{List{Int(128)}, "[128]"},
	{List{Int(160)}, "[160]"},
	{List{Int(0xFFFF)}, "[65535]"},
	{List{Int(0xD800)}, "[55296]"},
	{List{Int(-1)}, "[-1]"},
	{List{Int(0x110000)}, "[1114112]"},
	{List{Int('a'), Float(1)}, "[97,1.0]"},
	{List{Atom("a"), Int(1)}, "[a,1]"},
	{List{Nil, Str("x")}, `[[],"x"]`},
	{&ImproperList{Elems: []Term{Atom("a"), Atom("b")}, Tail: Atom("c")}, "[a,b|c]"},
	{&ImproperList{Elems: []Term{Int('a')}, Tail: Binary("b")}, `[97|<<"b">>]`},
	// tuples and maps
	{Tuple{}, "{}"},
	{Tuple{Atom("a"), Int(1)}, "{a,1}"},
	{Tuple{Tuple{Tuple{}}}, "{{{}}}"},
	{Map{}, "#{}"},
	{Map{{Atom("b"), Int(1)}, {Atom("a"), Int(2)}}, "#{a => 2,b => 1}"},
	{Map{{Float(1), Atom("x")}, {Int(1), Atom("y")}}, "#{1 => y,1.0 => x}"},
	{Map{{Str("k"), Nil}, {Map{}, Map{{Int(-1), negativeZero}}}}, `#{#{} => #{-1 => -0.0},"k" => []}`},
	{Tuple{List{Binary("a")}, Map{{Atom("k"), Tuple{}}}}, `{[<<"a">>],#{k => {}}}`},
	// external funs
	{exportFun("lists", "map", 2), "fun lists:map/2"},
	{&Opaque{Raw: []byte{113, 100, 0, 2, 'h', 233, 119, 3, 'x', 208, 128, 97, 2}}, "fun 'hé':'xЀ'/2"},
	{exportFun("end", "Fun", 0), "fun 'end':'Fun'/0"},
	// OTP reads an export's arity in any integer encoding (and writes it
	// back as SMALL_INTEGER_EXT).
	{exportWithArityBytes(tagInteger, 0, 0, 0, 3), "fun m:f/3"},
	{exportWithArityBytes(tagSmallBig, 1, 0, 3), "fun m:f/3"},
	{exportWithArityBytes(tagSmallBig, 5, 0, 2, 0, 0, 0, 1), "fun m:f/2"}, // 2^32+2: OTP keeps 32 bits
}

// exportWithArityBytes is fun m:f/A with the arity's encoding given byte by byte.
func exportWithArityBytes(arity ...byte) *Opaque {
	return &Opaque{Raw: append([]byte{tagExport, tagAtom, 0, 1, 'm', tagAtom, 0, 1, 'f'}, arity...)}
}

func TestFormat(t *testing.T) {
	for _, c := range formatCases {
		got, err := FormatStrict(c.term)
		if err != nil {
			t.Errorf("FormatStrict(%#v): %v", c.term, err)
			continue
		}
		if got != c.want {
			t.Errorf("FormatStrict(%#v) = %s, want %s", c.term, got, c.want)
		}
		if f := Format(c.term); f != got {
			t.Errorf("Format(%#v) = %s, FormatStrict gave %s", c.term, f, got)
		}
		if s := c.term.String(); s != got {
			t.Errorf("String() = %s, want %s", s, got)
		}
		back, err := Parse(got)
		if err != nil {
			t.Errorf("Parse(%s): %v", got, err)
			continue
		}
		if !equalWithZeroSigns(back, c.term) {
			t.Errorf("Parse(%s) = %s, not the formatted term", got, Format(back))
		}
	}
}

func TestAppendFormat(t *testing.T) {
	buf := []byte("x = ")
	buf = AppendFormat(buf, Tuple{Atom("a"), Int(1)})
	if string(buf) != "x = {a,1}" {
		t.Fatalf("AppendFormat gave %q", buf)
	}
	out, err := AppendFormatStrict([]byte("keep"), Tuple{&Opaque{Raw: []byte{tagNewPid, 1, 2}}})
	if err == nil || string(out) != "keep" {
		t.Fatalf("AppendFormatStrict on a pid = %q, %v; want the buffer unchanged and an error", out, err)
	}
}

func TestFormatStrictRefuses(t *testing.T) {
	pid := &Opaque{Raw: []byte{tagNewPid, 119, 1, 'n', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}
	cases := []struct {
		name   string
		term   Term
		marker string // part of Format's output
	}{
		{"pid", pid, "#Pid<58"},
		{"pid inside", Tuple{Atom("a"), List{pid}}, "{a,[#Pid<"},
		{"reference", &Opaque{Raw: []byte{tagNewerReference, 0, 1}}, "#Ref<5A0001>"},
		{"port", &Opaque{Raw: []byte{tagNewPort, 1}}, "#Port<5901>"},
		{"local fun", &Opaque{Raw: []byte{tagNewFun, 0, 0}}, "#Fun<700000>"},
		{"truncated export", &Opaque{Raw: []byte{tagExport, tagAtom, 0, 5, 'l'}}, "#Fun<71"},
		{"export arity 300", exportWithArityBytes(tagInteger, 0, 0, 1, 44), "fun m:f/300"},
		{"export arity negative", exportWithArityBytes(tagInteger, 0xff, 0xff, 0xff, 0xff), "#Fun<71"},
		{"empty opaque", &Opaque{}, "#Opaque<>"},
		{"nil opaque", (*Opaque)(nil), "#Invalid<nil>"},
		{"nil term", nil, "#Invalid<nil>"},
		{"nil in tuple", Tuple{nil}, "{#Invalid<nil>}"},
		{"nil bigint", (*BigInt)(nil), "#Invalid<nil>"},
		{"nil improper list", (*ImproperList)(nil), "#Invalid<nil>"},
		{"NaN", Float(math.NaN()), "#Float<NaN>"},
		{"+Inf", Float(math.Inf(1)), "#Float<+Inf>"},
		{"-Inf", List{Float(math.Inf(-1))}, "[#Float<-Inf>]"},
		{"long atom", Atom(strings.Repeat("a", 256)), "aaaa"},
		{"long unicode atom", Atom(strings.Repeat("é", 256)), "'éé"},
		{"atom with U+FFFF", Atom("a\uffffb"), "'a"},
		{"atom not UTF-8", Atom("a\xffb"), "'a"},
		{"bitstring without bytes", Bitstring{Bits: 3}, "<<>>"},
		{"bitstring with 0 bits", Bitstring{Bytes: []byte{1}, Bits: 0}, "<<1>>"},
		{"bitstring with 8 bits", Bitstring{Bytes: []byte{1}, Bits: 8}, "<<1>>"},
		{"bitstring padding", Bitstring{Bytes: []byte{0xFF}, Bits: 3}, "<<7:3>>"},
		{"improper list with list tail", &ImproperList{Elems: []Term{Int(1)}, Tail: List{Int(2)}}, "[1|[2]]"},
		{"improper list without elements", &ImproperList{Tail: Atom("t")}, "t"},
		{"map with duplicate keys", Map{{Int(1), Atom("a")}, {Int(1), Atom("b")}}, "#{1 => a,1 => b}"},
		{"too deep", nestedTuples(maxTextDepth + 1), "{{{{"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FormatStrict(c.term)
			var fe *FormatError
			if !errors.Is(err, ErrNoText) || !errors.As(err, &fe) || fe.Reason == "" {
				t.Fatalf("FormatStrict: %v, want a *FormatError matching ErrNoText", err)
			}
			if !strings.HasPrefix(err.Error(), "etf: ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line with the package prefix", err)
			}
			if got := Format(c.term); !strings.Contains(got, c.marker) {
				t.Errorf("Format = %.80s, want it to contain %s", got, c.marker)
			}
		})
	}
	// The deepest term Decode accepts still has a text form.
	deep := nestedTuples(maxTextDepth)
	s, err := FormatStrict(deep)
	if err != nil {
		t.Fatalf("FormatStrict at the depth limit: %v", err)
	}
	back, err := Parse(s)
	if err != nil || !Equal(back, deep) {
		t.Fatalf("Parse at the depth limit: %v", err)
	}
}

func TestFormatRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	n := 5000
	if testing.Short() {
		n = 1000
	}
	for i := 0; i < n; i++ {
		tm := randomTerm(r, 1+r.Intn(5))
		s, err := FormatStrict(tm)
		if err != nil {
			t.Fatalf("FormatStrict(%s): %v", Format(tm), err)
		}
		if f := Format(tm); f != s {
			t.Fatalf("Format and FormatStrict differ: %s vs %s", f, s)
		}
		back, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%s): %v", s, err)
		}
		if !equalWithZeroSigns(back, tm) {
			t.Fatalf("round trip changed the term:\n text %s\n back %s", s, Format(back))
		}
		if again := Format(back); again != s {
			t.Fatalf("Format is not stable: %s then %s", s, again)
		}
	}
}

var printedFloatRE = regexp.MustCompile(`^-?[0-9]+\.[0-9]+(e-?[1-9][0-9]*)?$`)

func TestFloatFormatRandom(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	check := func(f float64) {
		s := Format(Float(f))
		if !printedFloatRE.MatchString(s) {
			t.Fatalf("Format(%v) = %s, not in the form erl_scan reads", f, s)
		}
		back, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%s): %v", s, err)
		}
		bf, ok := back.(Float)
		if !ok || math.Float64bits(float64(bf)) != math.Float64bits(f) {
			t.Fatalf("Format(%v) = %s reads back as %v", f, s, back)
		}
		// The digits are the shortest that round-trip: strconv's.
		want := strconv.FormatFloat(math.Abs(f), 'e', -1, 64)
		digits := strings.ReplaceAll(want[:strings.IndexByte(want, 'e')], ".", "")
		got := strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(s, "-"), ".", ""), "0")
		if i := strings.IndexByte(got, 'e'); i >= 0 {
			got = got[:i]
		}
		got = strings.TrimRight(got, "0")
		if f != 0 && got != strings.TrimRight(digits, "0") {
			t.Fatalf("Format(%v) = %s, digits %s, want %s", f, s, got, digits)
		}
	}
	for _, f := range interestingFloats {
		check(f)
		check(-f)
	}
	for i := 0; i < 20000; i++ {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(f)
	}
	for e := -330; e <= 308; e++ {
		check(math.Pow(10, float64(e)))
	}
}

func BenchmarkFormat(b *testing.B) {
	term := typicalDETSObject()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFormat(buf[:0], term)
	}
	b.SetBytes(int64(len(buf)))
}

func ExampleFormat() {
	t := Tuple{Atom("user"), Int(42), Str("Zoë"), Binary("raw"), Float(1e10), Map{{Atom("admin"), True}}}
	fmt.Println(Format(t))
	// Output: {user,42,"Zoë",<<"raw">>,1.0e10,#{admin => true}}
}
