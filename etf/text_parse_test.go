package etf

// Tests of the lexer and parser through Parse: accepted text, errors and
// hostile input.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

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
	{"9223372036854775808", parseBigTerm("9223372036854775808")},
	{"-9223372036854775808", Int(math.MinInt64)},
	{"-9223372036854775809", parseBigTerm("-9223372036854775809")},
	{"16#10000000000000000", parseBigTerm("18446744073709551616")},
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
	{"-0.0", negativeZero},
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
	{"fun lists:map/2", exportFun("lists", "map", 2)},
	{"fun 'hé':'x\\x{400}'/2", &Opaque{Raw: []byte{113, 100, 0, 2, 'h', 233, 119, 3, 'x', 208, 128, 97, 2}}},
	{"fun m:f/0", exportFun("m", "f", 0)},
	{"fun m:f/255", exportFun("m", "f", 255)},
	{"[fun m:f/1]", List{exportFun("m", "f", 1)}},
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
		if !equalWithZeroSigns(got, c.want) {
			t.Errorf("Parse(%q) = %s, want %s", c.text, Format(got), Format(c.want))
		}
		// A final dot is accepted.
		if dotted, err := Parse(c.text + "\n."); err != nil || !equalWithZeroSigns(dotted, got) {
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

func BenchmarkParse(b *testing.B) {
	text := Format(typicalDETSObject())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
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
