package etf

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	{txtBig("18446744073709551616"), "18446744073709551616"},
	{txtBig("-9223372036854775809"), "-9223372036854775809"},
	// floats
	{Float(0), "0.0"},
	{txtNegZero, "-0.0"},
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
	{Map{{Str("k"), Nil}, {Map{}, Map{{Int(-1), txtNegZero}}}}, `#{#{} => #{-1 => -0.0},"k" => []}`},
	{Tuple{List{Binary("a")}, Map{{Atom("k"), Tuple{}}}}, `{[<<"a">>],#{k => {}}}`},
	// external funs
	{txtExport("lists", "map", 2), "fun lists:map/2"},
	{&Opaque{Raw: []byte{113, 100, 0, 2, 'h', 233, 119, 3, 'x', 208, 128, 97, 2}}, "fun 'hé':'xЀ'/2"},
	{txtExport("end", "Fun", 0), "fun 'end':'Fun'/0"},
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
		if !txtSame(back, c.term) {
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
		{"too deep", txtDeepTuple(maxTextDepth + 1), "{{{{"},
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
	deep := txtDeepTuple(maxTextDepth)
	s, err := FormatStrict(deep)
	if err != nil {
		t.Fatalf("FormatStrict at the depth limit: %v", err)
	}
	back, err := Parse(s)
	if err != nil || !Equal(back, deep) {
		t.Fatalf("Parse at the depth limit: %v", err)
	}
}

// txtDeepTuple returns n nested tuples: {{...{}...}}.
func txtDeepTuple(n int) Term {
	var t Term = Tuple{}
	for i := 1; i < n; i++ {
		t = Tuple{t}
	}
	return t
}

// parseCases pair text with the term erl reads from it. The texts and terms
// were written by hand (the binary results from erl 25 by experiment);
// TestTextOTPParseTable checks every row against erl.
var parseCases = []struct {
	text string
	want Term
}{
	// atoms and escapes
	{"ok", Atom("ok")},
	{"a@b_C9", Atom("a@b_C9")},
	{"ßa", Atom("ßa")},
	{"éÀ", Atom("éÀ")},
	{"maybe", Atom("maybe")},
	{"else", Atom("else")},
	{"'end'", Atom("end")},
	{"''", Atom("")},
	{`'it\'s'`, Atom("it's")},
	{`'a"b'`, Atom(`a"b`)},
	{`'\n\r\t\v\b\f\e\s\d'`, Atom("\n\r\t\v\b\f\x1b \x7f")},
	{`'\\\'\"\a\z'`, Atom(`\'"az`)},
	{`'\101\60\0'`, Atom("A0\x00")},
	{`'\1012'`, Atom("A2")},
	{`'\x41\x{42}\x{1F600}\x{00000043}'`, Atom("AB😀C")},
	{`'\^a\^Z\^@\^['`, Atom("\x01\x1a\x00\x1b")},
	{`'\^?'`, Atom("\x1f")},
	{"'line\nbreak'", Atom("line\nbreak")},
	{"'a\\\nb'", Atom("a\nb")},
	{"'日本'", Atom("日本")},
	{"'" + strings.Repeat("x", 255) + "'", Atom(strings.Repeat("x", 255))},
	// integers
	{"0", Int(0)},
	{"007", Int(7)},
	{"-12", Int(-12)},
	{"+12", Int(12)},
	{"- 12", Int(-12)},
	{"-(12)", Int(-12)},
	{"(-12)", Int(-12)},
	{"((7))", Int(7)},
	{"1_000_000", Int(1000000)},
	{"16#FF", Int(255)},
	{"16#ff_ff", Int(65535)},
	{"-16#10", Int(-16)},
	{"2#1010", Int(10)},
	{"36#Zz", Int(35*36 + 35)},
	{"1_6#10", Int(16)},
	{"9223372036854775807", Int(math.MaxInt64)},
	{"9223372036854775808", txtBig("9223372036854775808")},
	{"-9223372036854775808", Int(math.MinInt64)},
	{"-9223372036854775809", txtBig("-9223372036854775809")},
	{"16#10000000000000000", txtBig("18446744073709551616")},
	{"$a", Int('a')},
	{"$ ", Int(' ')},
	{"$\\n", Int('\n')},
	{"$\\\\", Int('\\')},
	{"$\\x{1F600}", Int(0x1F600)},
	{"$\\^c", Int(3)},
	{"$é", Int(0xE9)},
	{"$%", Int('%')},
	{"-$a", Int(-97)},
	{"$\n", Int('\n')},
	// floats
	{"1.0", Float(1)},
	{"0.5", Float(0.5)},
	{"-0.0", txtNegZero},
	{"+0.0", Float(0)},
	{"1.0e10", Float(1e10)},
	{"1.5E3", Float(1500)},
	{"2.5e+10", Float(2.5e10)},
	{"1.0e-3", Float(0.001)},
	{"1_0.2_5e1_0", Float(10.25e10)},
	{"1.0e-400", Float(0)},
	{"1.7976931348623157e308", Float(math.MaxFloat64)},
	{"-(1.5)", Float(-1.5)},
	// strings and lists
	{`""`, Nil},
	{`"abc"`, Str("abc")},
	{`"ab" "cd"`, Str("abcd")},
	{"\"a\" % comment\n \"b\"", Str("ab")},
	{`"\x{3E8}\400\777"`, List{Int(1000), Int(256), Int(511)}},
	{`"é😀"`, Str("é😀")},
	{"[]", Nil},
	{"[ ]", Nil},
	{"[1,2,3]", List{Int(1), Int(2), Int(3)}},
	{"[a|b]", &ImproperList{Elems: []Term{Atom("a")}, Tail: Atom("b")}},
	{"[a,b|c]", &ImproperList{Elems: []Term{Atom("a"), Atom("b")}, Tail: Atom("c")}},
	{"[a|[]]", List{Atom("a")}},
	{"[a|[b|[c]]]", List{Atom("a"), Atom("b"), Atom("c")}},
	{`[$a|"bc"]`, Str("abc")},
	{"[a|[b|c]]", &ImproperList{Elems: []Term{Atom("a"), Atom("b")}, Tail: Atom("c")}},
	{"[[]]", List{Nil}},
	// tuples and maps
	{"{}", Tuple{}},
	{"{ a , 1 }", Tuple{Atom("a"), Int(1)}},
	{"{{}}", Tuple{Tuple{}}},
	{"#{}", Map{}},
	{"#{a => 1}", Map{{Atom("a"), Int(1)}}},
	{"#{a => 1, a => 2}", Map{{Atom("a"), Int(2)}}},
	{"#{1 => a, 1.0 => b}", Map{{Int(1), Atom("a")}, {Float(1), Atom("b")}}},
	{"#{[] => #{}, {} => <<>>}", Map{{Nil, Map{}}, {Tuple{}, Binary{}}}},
	{"#{k=>v}", Map{{Atom("k"), Atom("v")}}},
	// binaries
	{"<<>>", Binary{}},
	{"<< >>", Binary{}},
	{"<<1,2,3>>", Binary{1, 2, 3}},
	{`<<"abc">>`, Binary("abc")},
	{`<<"ab" "c">>`, Binary("abc")},
	{`<<"">>`, Binary{}},
	{`<<("ab")>>`, Binary("ab")},
	{`<<"a", 1, "b">>`, Binary("a\x01b")},
	{`<<"é">>`, Binary{0xE9}},
	{`<<"Ā">>`, Binary{0x00}},
	{`<<"é"/utf8>>`, Binary("é")},
	{`<<"Ā😀"/utf8>>`, Binary("Ā😀")},
	{`<<""/utf8>>`, Binary{}},
	{"<<300>>", Binary{44}},
	{"<<-1>>", Binary{255}},
	{"<<(-1)>>", Binary{255}},
	{"<<+1>>", Binary{1}},
	{"<<$a>>", Binary{'a'}},
	{"<<5:3>>", Bitstring{Bytes: []byte{0xA0}, Bits: 3}},
	{"<<1:1,0:7>>", Binary{0x80}},
	{"<<1,2,5:3>>", Bitstring{Bytes: []byte{1, 2, 0xA0}, Bits: 3}},
	{"<<1:16>>", Binary{0, 1}},
	{"<<1:(16)>>", Binary{0, 1}},
	{"<<1:0>>", Binary{}},
	{"<<-1:4>>", Bitstring{Bytes: []byte{0xF0}, Bits: 4}},
	{"<<1:$a>>", Bitstring{Bytes: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80}, Bits: 1}},
	{"<<16#ABC:12/little>>", Bitstring{Bytes: []byte{0xBC, 0xA0}, Bits: 4}},
	{"<<16#ABCDE:20/little>>", Bitstring{Bytes: []byte{0xDE, 0xBC, 0xA0}, Bits: 4}},
	{"<<-1:12/little>>", Bitstring{Bytes: []byte{0xFF, 0xF0}, Bits: 4}},
	{"<<1:16/little>>", Binary{1, 0}},
	{"<<1:64/signed-little>>", Binary{1, 0, 0, 0, 0, 0, 0, 0}},
	{"<<258:16/native>>", Binary{2, 1}},
	{"<<1:8/integer-unit:2-signed>>", Binary{0, 1}},
	{"<<1:8/big-big>>", Binary{1}},
	{"<<16#123456789ABCDEF01:72>>", Binary{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x01}},
	{"<<-2:72/little>>", Binary{0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
	{"<<16#123456789ABCDEF0123:76>>", Bitstring{Bytes: []byte{0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0, 0x12, 0x30}, Bits: 4}},
	{"<<1.5/float>>", Binary{63, 248, 0, 0, 0, 0, 0, 0}},
	{"<<3/float>>", Binary{64, 8, 0, 0, 0, 0, 0, 0}},
	{`<<"a"/float>>`, Binary{64, 88, 64, 0, 0, 0, 0, 0}},
	{"<<1.5:32/float>>", Binary{63, 192, 0, 0}},
	{"<<1.5:16/float>>", Binary{62, 0}},
	{"<<1:16/float>>", Binary{60, 0}},
	{"<<1.5:64/little-float>>", Binary{0, 0, 0, 0, 0, 0, 248, 63}},
	{"<<-0.0/float>>", Binary{128, 0, 0, 0, 0, 0, 0, 0}},
	{"<<-0.0:16/float>>", Binary{128, 0}},
	{"<<100000.0:16/float>>", Binary{124, 0}},
	{"<<65504.0:16/float>>", Binary{123, 255}},
	{"<<65519.0:16/float>>", Binary{123, 255}},
	{"<<65520.0:16/float>>", Binary{124, 0}},
	{"<<1.0e-8:16/float>>", Binary{0, 0}},
	{"<<3.0e-8:16/float>>", Binary{0, 1}},
	{"<<2.0e-5:16/float>>", Binary{1, 80}},
	{"<<1.0e300:32/float>>", Binary{127, 128, 0, 0}},
	{"<<1.0e-50:32/float>>", Binary{0, 0, 0, 0}},
	{`<<"abc":16>>`, Binary{0, 97, 0, 98, 0, 99}},
	{`<<"a":0>>`, Binary{}},
	{`<<"abc"/utf16>>`, Binary{0, 97, 0, 98, 0, 99}},
	{`<<"ab"/little-utf16>>`, Binary{97, 0, 98, 0}},
	{`<<"ab"/utf32>>`, Binary{0, 0, 0, 97, 0, 0, 0, 98}},
	{`<<$\x{1F600}/utf16-little>>`, Binary{61, 216, 0, 222}},
	{"<<1/utf32-little>>", Binary{1, 0, 0, 0}},
	{"<<1/utf8-little>>", Binary{1}},
	{"<<1/utf16-signed>>", Binary{0, 1}},
	{"<<16#FFFE/utf8>>", Binary{239, 191, 190}},
	{"<<<<1,2>>/binary>>", Binary{1, 2}},
	{"<<(<<1>>)/binary>>", Binary{1}},
	{"<<<<1>>:all/binary>>", Binary{1}},
	{"<<<<1:3>>/bits>>", Bitstring{Bytes: []byte{0x20}, Bits: 3}},
	{"<<<<1:3>>/bitstring, 1:5>>", Binary{0x21}},
	{"<<<<1,2>>:1/binary>>", Binary{1}},
	{"<<<<1,2>>:1/bytes>>", Binary{1}},
	{"<<<<1,2>>:8/bits>>", Binary{1}},
	{"<<<<1,2>>:8/binary-unit:1>>", Binary{1}},
	{"<<<<1,2,3>>:2/binary-unit:4>>", Binary{1}},
	{"<<1:1, <<255>>/binary>>", Bitstring{Bytes: []byte{0xFF, 0x80}, Bits: 1}},
	// external funs, comments and white space
	{"fun lists:map/2", txtExport("lists", "map", 2)},
	{"fun 'hé':'x\\x{400}'/2", &Opaque{Raw: []byte{113, 100, 0, 2, 'h', 233, 119, 3, 'x', 208, 128, 97, 2}}},
	{"fun m:f/0", txtExport("m", "f", 0)},
	{"fun m:f/255", txtExport("m", "f", 255)},
	{"[fun m:f/1]", List{txtExport("m", "f", 1)}},
	{"% lead\n{a, % inside\n b} % trail", Tuple{Atom("a"), Atom("b")}},
	{"\t\r\n {a,\fb}\v", Tuple{Atom("a"), Atom("b")}},
	{"\u0085a\u00a0", Atom("a")},
	{"\x00a", Atom("a")},
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		got, err := Parse(c.text)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.text, err)
			continue
		}
		if !txtSame(got, c.want) {
			t.Errorf("Parse(%q) = %s, want %s", c.text, Format(got), Format(c.want))
		}
		// A final dot is accepted.
		if dotted, err := Parse(c.text + "\n."); err != nil || !txtSame(dotted, got) {
			t.Errorf("Parse(%q + dot) = %v, %v", c.text, dotted, err)
		}
	}
}

// parseErrorCases are texts erl refuses too (TestTextOTPParseTable checks
// that), with where Parse must report the problem.
var parseErrorCases = []struct {
	text      string
	line, col int
	reason    string // part of the message
}{
	{"{a,", 1, 4, "end of input"},
	{"{a,}", 1, 4, "'}'"},
	{"[a,]", 1, 4, "']'"},
	{"#{a => 1,}", 1, 10, "'}'"},
	{"<<1,>>", 1, 5, "'>>'"},
	{"[a|b|c]", 1, 5, "expected ']'"},
	{"[a|]", 1, 4, "']'"},
	{"{a b}", 1, 4, "atom b"},
	{"X", 1, 1, "variable X"},
	{"_", 1, 1, "variable _"},
	{"{ok, Value}", 1, 6, "variable Value"},
	{"Édouard", 1, 1, "variable"},
	{"end", 1, 1, "reserved word end"},
	{"fun", 1, 1, "fun"},
	{"fun f/1", 1, 1, "fun Module:Function/Arity"},
	{"fun M:f/1", 1, 1, "fun Module:Function/Arity"},
	{"fun m:f/a", 1, 9, "arity"},
	{"fun m:f/256", 1, 9, "arity"},
	{"fun (X) -> X end", 1, 1, "fun Module:Function/Arity"},
	{"1 + 2", 1, 3, "'+'"},
	{"- - 1", 1, 1, "number literal"},
	{"--1", 1, 1, "'--'"},
	{"-(-1)", 1, 1, "number literal"},
	{"-a", 1, 1, "number literal"},
	{`-"a"`, 1, 1, "number literal"},
	{"a:b", 1, 2, "':'"},
	{"f(1)", 1, 2, "'('"},
	{"#r{a=1}", 1, 1, "records"},
	{"#{a := 1}", 1, 5, "':='"},
	{"#{a = 1}", 1, 5, "'=>'"},
	{"#{}#{}", 1, 4, "'#'"},
	{"#{a=>1}#{a=>2}", 1, 8, "'#'"},
	{"{a}.b", 1, 4, "'.'"},
	{"'abc", 1, 1, "unterminated quoted atom"},
	{"\"abc", 1, 1, "unterminated string"},
	{"\"ab\ncd", 1, 1, "unterminated string"},
	{"'" + strings.Repeat("x", 256) + "'", 1, 1, "255"},
	{strings.Repeat("y", 256), 1, 1, "255"},
	{`'\x{}'`, 1, 2, `\x`},
	{`'\x{110000}'`, 1, 2, `\x`},
	{`'\x{D800}'`, 1, 2, `\x`},
	{`'\x{FFFF}'`, 1, 2, `\x`},
	{`'\xg'`, 1, 2, `\x`},
	{`"\x4"`, 1, 2, `\x`},
	{`"\x{41"`, 1, 2, `\x`},
	{"\"a\uffffb\"", 1, 3, "U+FFFF"},
	{"[$", 1, 3, "end of input"},
	{"$\uffff", 1, 2, "U+FFFF"},
	{"1.0e400", 1, 1, "float"},
	{"1.0e", 1, 1, "float"},
	{"1.0e+", 1, 1, "float"},
	{"2#", 1, 1, "integer"},
	{"2#2", 1, 1, "integer"},
	{"1#0", 1, 1, "base"},
	{"37#0", 1, 1, "base"},
	{"1e5", 1, 2, "atom e5"},
	{"1.e5", 1, 2, "'.'"},
	{"\ufeffa", 1, 1, "U+FEFF"},
	{"\u0100", 1, 1, "U+0100"},
	{"a \u00a1", 1, 3, "'¡'"},
	{"<<1.0>>", 1, 3, "integer value"},
	{"<<a>>", 1, 3, "integer value"},
	{"<<{1}>>", 1, 3, "integer value"},
	{"<<[1]>>", 1, 3, "integer value"},
	{"<<(1 bsl 3)>>", 1, 6, "reserved word bsl"},
	{`<<""/binary>>`, 1, 3, "binary value"},
	{`<<"a"/binary>>`, 1, 3, "binary value"},
	{"<<1/binary>>", 1, 3, "binary value"},
	{"<<<<1:3>>/binary>>", 1, 3, "not a multiple"},
	{"<<<<1>>:9/bits>>", 1, 3, "exceeds"},
	{"<<1:8/bytes>>", 1, 3, "binary value"},
	{"<<1/unit:8>>", 1, 3, "unit without size"},
	{"<<1:8/unit:0>>", 1, 12, "unit"},
	{"<<1:8/unit:257>>", 1, 12, "unit"},
	{"<<1:8/big-little>>", 1, 11, "conflicting"},
	{"<<1:8/foo>>", 1, 7, "unknown type specifier foo"},
	{"<<1:8/big:8>>", 1, 7, "unknown type specifier"},
	{"<<1:-1>>", 1, 5, "size"},
	{"<<1:(-1)>>", 1, 3, "negative size"},
	{"<<1:1.0>>", 1, 5, "size"},
	{"<<1:a>>", 1, 3, "size"},
	{"<<1:all>>", 1, 3, "size"},
	{"<<1:3/float>>", 1, 3, "16, 32 or 64"},
	{"<<1:0/float>>", 1, 3, "16, 32 or 64"},
	{"<<1/utf8:2>>", 1, 5, "unknown type specifier"},
	{"<<1:8/utf8>>", 1, 3, "no size"},
	{"<<16#D800/utf8>>", 1, 3, "code point"},
	{"<<16#D800/utf16>>", 1, 3, "code point"},
	{"<<16#110000/utf32>>", 1, 3, "code point"},
	{"<<-1/utf8>>", 1, 3, "code point"},
	{"<<1.0/utf8>>", 1, 3, "code point"},
	{"<<1:8/integer-float>>", 1, 15, "conflicting"},
	{"\n\n  {a,\n   X}", 4, 4, "variable X"},
}

func TestParseErrors(t *testing.T) {
	for _, c := range parseErrorCases {
		_, err := Parse(c.text)
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", c.text, err)
			continue
		}
		if se.Line != c.line || se.Col != c.col || !strings.Contains(se.Reason, c.reason) {
			t.Errorf("Parse(%q): %v; want line %d, column %d, reason containing %q", c.text, err, c.line, c.col, c.reason)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): error has more than one line: %q", c.text, err)
		}
	}
}

func TestParseOnlyErrors(t *testing.T) {
	// Cases where Parse's own contract (not erl's) decides.
	for _, c := range []struct {
		text      string
		line, col int
	}{
		{"", 1, 1},
		{"  % only a comment\n", 2, 1},
		{"a. b", 1, 4},
		{"a.b", 1, 2},
		{"a..", 1, 2},
		{"'\xe9'", 1, 2}, // Latin-1 bytes are not UTF-8
		{"a % \xff", 1, 5},
	} {
		_, err := Parse(c.text)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != c.line || se.Col != c.col {
			t.Errorf("Parse(%q) = %v, want a syntax error at %d:%d", c.text, err, c.line, c.col)
		}
	}
}

func TestParseAll(t *testing.T) {
	text := "%% a consult file\n{a, 1}.\n\"two\". % comment\n[3|\n4].\n\n<<5>>. fun m:f/6.\n"
	got, err := ParseAll(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Term{Tuple{Atom("a"), Int(1)}, Str("two"), &ImproperList{Elems: []Term{Int(3)}, Tail: Int(4)}, Binary{5}, txtExport("m", "f", 6)}
	if len(got) != len(want) {
		t.Fatalf("ParseAll gave %d terms, want %d", len(got), len(want))
	}
	for i := range want {
		if !Equal(got[i], want[i]) {
			t.Errorf("term %d = %s, want %s", i, Format(got[i]), Format(want[i]))
		}
	}
	if got, err := ParseAll(" % nothing\n"); err != nil || len(got) != 0 {
		t.Errorf("ParseAll of a comment = %v, %v; want no terms", got, err)
	}

	for _, c := range []struct {
		text      string
		line, col int
		reason    string
	}{
		{"a.\nb.\n{c,\n d e}.\n", 4, 4, "atom e"},
		{"a.\nb", 2, 2, "missing '.'"},
		{"a.\nb c.", 2, 3, "expected '.'"},
		{"a.b.", 1, 2, "'.'"},
		{"a.\n\n'\xe9'.\n", 3, 2, "UTF-8"},
		{"a.\n$", 2, 2, "end of input"},
	} {
		_, err := ParseAll(c.text)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != c.line || se.Col != c.col || !strings.Contains(se.Reason, c.reason) {
			t.Errorf("ParseAll(%q) = %v, want %d:%d %q", c.text, err, c.line, c.col, c.reason)
		}
	}
}

// encodingCases check how ParseAll picks the encoding; TestTextOTPConsult
// checks each against file:consult/1.
var encodingCases = []struct {
	name string
	text string
	want []Term // nil: an error
}{
	{"utf-8 by default", "'\xc3\xa9'.", []Term{Atom("é")}},
	{"latin-1 bytes are not utf-8", "'\xe9'.", nil},
	{"latin-1 comment", "%% coding: latin-1\n'\xe9'.", []Term{Atom("é")}},
	{"declaration after a term", "x. % -*- coding: latin-1 -*-\n'\xe9'.", []Term{Atom("x"), Atom("é")}},
	{"upper-case name", "%% coding: LATIN-1\n'\xe9'.", []Term{Atom("é")}},
	{"Coding is not coding", "%% Coding: latin-1\n'\xe9'.", nil},
	{"line 2, encoding =, suffix", "%% hello\n%% encoding = latin-1-unix\n'\xe9'.", []Term{Atom("é")}},
	{"line 3 is too late", "%\n%\n%% coding: latin-1\n'\xe9'.", nil},
	{"utf-8 declared", "%% coding: utf-8\n'\xc3\xa9'.", []Term{Atom("é")}},
	{"first declaration wins", "%% coding: utf-8 coding: latin-1\n'\xe9'.", nil},
	{"unknown name stops the search", "%% coding: ascii, coding: latin-1\n'\xe9'.", nil},
	{"not in a comment", "'coding: latin-1'.\n'\xe9'.", nil},
	{"non-ascii before the declaration", "'\xe9'. % coding: latin-1\n", []Term{Atom("é")}},
	{"latin-1 bytes 128-160 are white space", "%% coding: latin-1\n\x85'\xff'\xa0.", []Term{Atom("ÿ")}},
	{"utf-8 U+0085 and U+00A0 are white space", "\xc2\x85a\xc2\xa0.", []Term{Atom("a")}},
}

func TestParseAllEncoding(t *testing.T) {
	for _, c := range encodingCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseAll(c.text)
			if c.want == nil {
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("ParseAll = %v, %v; want a syntax error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("ParseAll gave %d terms, want %d", len(got), len(c.want))
			}
			for i := range got {
				if !Equal(got[i], c.want[i]) {
					t.Fatalf("term %d = %s, want %s", i, Format(got[i]), Format(c.want[i]))
				}
			}
		})
	}
	// In Latin-1 a non-ASCII byte is one character, so columns count bytes.
	_, err := ParseAll("%% coding: latin-1\n'\xe9' X.")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Col != 5 {
		t.Fatalf("Latin-1 error position: %v, want 2:5", err)
	}
}

// txtChunkReader returns at most n bytes per Read, to exercise buffering.
type txtChunkReader struct {
	s string
	n int
}

func (c *txtChunkReader) Read(p []byte) (int, error) {
	if len(c.s) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

type txtFailReader struct{ err error }

func (f txtFailReader) Read([]byte) (int, error) { return 0, f.err }

func TestReader(t *testing.T) {
	r := rand.New(rand.NewSource(txtSeed(t)))
	var sb strings.Builder
	var terms []Term
	lines := []int{}
	line := 1
	for i := 0; i < 300; i++ {
		tm := randomTerm(r, 3)
		s, err := FormatStrict(tm)
		if err != nil {
			t.Fatalf("FormatStrict(random term): %v", err)
		}
		terms = append(terms, tm)
		lines = append(lines, line)
		sb.WriteString(s)
		sb.WriteString(".\n")
		line += 1 + strings.Count(s, "\n")
	}
	rd := NewReader(&txtChunkReader{s: sb.String(), n: 7})
	for i, want := range terms {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("term %d: %v", i, err)
		}
		if !txtSame(got, want) {
			t.Fatalf("term %d = %s, want %s", i, Format(got), Format(want))
		}
		if rd.Line() != lines[i] {
			t.Fatalf("term %d: Line() = %d, want %d", i, rd.Line(), lines[i])
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("after the last term: %v, want io.EOF", err)
		}
	}

	// Errors are sticky and carry the line.
	rd = NewReader(strings.NewReader("ok.\n{bad\n.\nfine.\n"))
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	_, err1 := rd.Next()
	_, err2 := rd.Next()
	var se *SyntaxError
	if !errors.As(err1, &se) || se.Line != 3 || err2 != err1 {
		t.Fatalf("errors %v then %v; want the same syntax error at line 3 twice", err1, err2)
	}

	// Read errors come through unchanged.
	boom := errors.New("disk on fire")
	if _, err := NewReader(txtFailReader{boom}).Next(); !errors.Is(err, boom) {
		t.Fatalf("read error: %v, want %v", err, boom)
	}
	rd = NewReader(io.MultiReader(strings.NewReader("a.\n{b,"), txtFailReader{boom}))
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("read error mid-term: %v, want %v", err, boom)
	}
}

func TestReaderDoesNotReadAhead(t *testing.T) {
	// A term is returned as soon as its dot and the character after it
	// arrive, so an interactive stream works.
	pr, pw := io.Pipe()
	rd := NewReader(pr)
	done := make(chan error, 1)
	go func() {
		t, err := rd.Next()
		if err == nil && !Equal(t, Atom("first")) {
			err = fmt.Errorf("got %v", t)
		}
		done <- err
	}()
	if _, err := pw.Write([]byte("first.\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next blocked waiting for more input after a complete term")
	}
	pw.Close()
}

func TestFormatRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewSource(txtSeed(t)))
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
		if !txtSame(back, tm) {
			t.Fatalf("round trip changed the term:\n text %s\n back %s", s, Format(back))
		}
		if again := Format(back); again != s {
			t.Fatalf("Format is not stable: %s then %s", s, again)
		}
	}
}

var txtFloatRE = regexp.MustCompile(`^-?[0-9]+\.[0-9]+(e-?[1-9][0-9]*)?$`)

func TestFloatFormatRandom(t *testing.T) {
	r := rand.New(rand.NewSource(txtSeed(t)))
	check := func(f float64) {
		s := Format(Float(f))
		if !txtFloatRE.MatchString(s) {
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

func TestFloat16(t *testing.T) {
	// Every half-precision value converts back to its own bits, and values
	// between two halves round to the nearer (even on a tie).
	for h := 0; h < 1<<16; h++ {
		exp := h >> 10 & 0x1F
		if exp == 0x1F {
			continue // infinities and NaNs
		}
		f := txtHalf(uint16(h))
		if got := float16Bits(f); got != uint16(h) {
			t.Fatalf("float16Bits(%v) = %#04x, want %#04x", f, got, h)
		}
		if h&0x7FFF == 0x7BFF || h&0x8000 != 0 {
			continue
		}
		next := txtHalf(uint16(h + 1))
		mid := (f + next) / 2
		want := uint16(h)
		if h&1 == 1 {
			want++
		}
		if got := float16Bits(mid); got != want {
			t.Fatalf("float16Bits(%v) (a tie) = %#04x, want %#04x", mid, got, want)
		}
	}
}

// txtHalf decodes IEEE half-precision bits.
func txtHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h >> 10 & 0x1F)
	mant := float64(h & 0x3FF)
	if exp == 0 {
		return sign * math.Ldexp(mant, -24)
	}
	return sign * math.Ldexp(1+mant/1024, exp-15)
}

func TestHostileText(t *testing.T) {
	deep := strings.Repeat("[", 1_000_000)
	if _, err := Parse(deep); !errors.Is(err, ErrSyntax) {
		t.Fatalf("deep list: %v", err)
	}
	if _, err := Parse(strings.Repeat("(", 1_000_000) + "1"); !errors.Is(err, ErrSyntax) {
		t.Fatalf("deep parentheses: %v", err)
	}
	if _, err := Parse("-" + strings.Repeat("(", 1_000_000) + "1"); !errors.Is(err, ErrSyntax) {
		t.Fatalf("deep parentheses after minus: %v", err)
	}
	if _, err := Parse("<<" + strings.Repeat("(", 1_000_000) + "1>>"); !errors.Is(err, ErrSyntax) {
		t.Fatalf("deep parentheses in a binary: %v", err)
	}
	// The depth limit is exactly maxTextDepth.
	ok := strings.Repeat("{", maxTextDepth) + strings.Repeat("}", maxTextDepth)
	if _, err := Parse(ok); err != nil {
		t.Fatalf("%d nested tuples: %v", maxTextDepth, err)
	}
	over := "{" + ok + "}"
	var se *SyntaxError
	if _, err := Parse(over); !errors.As(err, &se) || !strings.Contains(se.Reason, "nesting") {
		t.Fatalf("%d nested tuples: %v", maxTextDepth+1, err)
	}

	// Sized segments cannot blow up memory.
	start := time.Now()
	for _, s := range []string{
		"<<0:4294967296>>",
		"<<0:200000000>>",
		"<<0:16777216/unit:256>>",
		"<<0:99999999999999999999999>>",
		`<<"` + strings.Repeat("a", 10000) + `":1000000>>`,
		"<<" + strings.Repeat("0:100000,", 2000) + "0>>",
	} {
		if _, err := Parse(s); !errors.As(err, &se) {
			t.Fatalf("Parse(%.40s...) = %v, want a syntax error", s, err)
		}
	}
	// A large but bounded one is fine.
	b, err := Parse("<<1:1000000>>")
	if err != nil {
		t.Fatal(err)
	}
	if bin, ok := b.(Binary); !ok || len(bin) != 125000 || bin[len(bin)-1] != 1 {
		t.Fatalf("<<1:1000000>> gave %T of the wrong shape", b)
	}

	// Long numbers parse in well under quadratic time.
	digits := strings.Repeat("1234567890", 100_000)
	v, err := Parse(digits)
	if err != nil {
		t.Fatal(err)
	}
	if bi, ok := v.(*BigInt); !ok || bi.Big().String() != digits {
		t.Fatalf("a million-digit integer did not round trip")
	}
	if _, err := Parse("36#" + strings.Repeat("Zz", 200_000)); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("1." + strings.Repeat("5", 1_000_000)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("hostile inputs took %v", d)
	}
}

func BenchmarkFormat(b *testing.B) {
	term := txtBenchTerm()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFormat(buf[:0], term)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkParse(b *testing.B) {
	text := Format(txtBenchTerm())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

// txtBenchTerm is a typical DETS object: {<<16-byte key>>, <<100-byte value>>}.
func txtBenchTerm() Term {
	r := rand.New(rand.NewSource(1))
	k, v := make(Binary, 16), make(Binary, 100)
	r.Read(k)
	r.Read(v)
	return Tuple{k, v}
}

func ExampleFormat() {
	t := Tuple{Atom("user"), Int(42), Str("Zoë"), Binary("raw"), Float(1e10), Map{{Atom("admin"), True}}}
	fmt.Println(Format(t))
	// Output: {user,42,"Zoë",<<"raw">>,1.0e10,#{admin => true}}
}

func ExampleParse() {
	t, err := Parse(`{'hello world', [1, 2 | tail], <<"abc", 5:3>>, 16#FF}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t)
	_, err = Parse("{ok, Value}")
	fmt.Println(err)
	// Output:
	// {'hello world',[1,2|tail],<<"abc",5:3>>,255}
	// etf: syntax error at line 1, column 6: variable Value is not a term (quote it to make an atom)
}

func ExampleReader() {
	r := NewReader(strings.NewReader("{a, 1}.\n%% a comment\n{b, 2}.\n"))
	for {
		t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Line(), t)
	}
	// Output:
	// 1 {a,1}
	// 3 {b,2}
}
