package etf

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// The text interop tests run erl three times in all: once to read what
// Format writes, once to check the hand-written parse tables, and once to
// write terms for ParseAll to read.

// erlParseFun is Erlang code defining ParseText: Text (a UTF-8 binary, no
// final dot) read as erl_scan:string/1 plus erl_parse:parse_term/1 read it,
// giving {ok, Term} or {error, Message}.
const erlParseFun = `
ParseText = fun(Text) ->
    Err = fun(E) -> {error, unicode:characters_to_binary(io_lib:format("~tp", [E]))} end,
    case erl_scan:string(unicode:characters_to_list(Text) ++ "\n.") of
        {ok, Toks, _} ->
            case erl_parse:parse_term(Toks) of
                {ok, T} -> {ok, T};
                {error, E} -> Err(E)
            end;
        {error, E, _} -> Err(E)
    end
end,
`

// decodeErlAnswer decodes an erl result, failing the test on bad bytes.
func decodeErlAnswer(t *testing.T, b []byte) Term {
	t.Helper()
	v, err := Decode(b)
	if err != nil {
		t.Fatalf("decoding erl's answer: %v", err)
	}
	return v
}

// splitErlResult splits {ok, T} or {Tag, Detail}.
func splitErlResult(t *testing.T, b []byte) (ok bool, v Term) {
	t.Helper()
	r, isTuple := decodeErlAnswer(t, b).(Tuple)
	if !isTuple || len(r) != 2 {
		t.Fatalf("unexpected answer from erl: %s", Format(r))
	}
	return Equal(r[0], Atom("ok")), r[1]
}

// TestTextOTPFormat gives erl the text of random terms: erl must read each,
// with erl_parse:parse_term/1 and with file:consult/1, as exactly the term
// (=:= to binary_to_term of its Encode bytes, and the same floats' signs).
func TestTextOTPFormat(t *testing.T) {
	erl := otptest.Erl(t)
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var terms []Term
	for _, c := range formatCases {
		terms = append(terms, c.term)
	}
	for len(terms) < 600 {
		terms = append(terms, randomTerm(r, 1+r.Intn(4)))
	}

	path := filepath.Join(t.TempDir(), "terms.txt")
	var file strings.Builder
	in := [][]byte{[]byte(path), nil}
	for _, tm := range terms {
		text, err := FormatStrict(tm)
		if err != nil {
			t.Fatalf("FormatStrict(%s): %v", Format(tm), err)
		}
		bin, err := Encode(tm)
		if err != nil {
			t.Fatalf("Encode(%s): %v", Format(tm), err)
		}
		in = append(in, []byte(text), bin)
		file.WriteString(text)
		file.WriteString(".\n")
	}
	all, err := Encode(List(terms))
	if err != nil {
		t.Fatal(err)
	}
	in[1] = all
	if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	out := erl.Eval(t, erlParseFun+`
[Path, All | Pairs] = In,
Consulted = case file:consult(binary_to_list(Path)) of
    {ok, Ts} -> {ok, Ts};
    {error, E} -> {error, unicode:characters_to_binary(io_lib:format("~tp", [E]))}
end,
Check = fun(Text, Bin) ->
    Want = binary_to_term(Bin),
    case ParseText(Text) of
        {ok, T} when T =:= Want -> term_to_binary({ok, T});
        {ok, T} -> term_to_binary({differs, T});
        Error -> term_to_binary(Error)
    end
end,
Each = fun Loop([Text, Bin | Rest]) -> [Check(Text, Bin) | Loop(Rest)]; Loop([]) -> [] end,
Same = case Consulted of {ok, L} -> L =:= binary_to_term(All); _ -> false end,
[term_to_binary({Same, Consulted}) | Each(Pairs)]`, in...)

	if len(out) != 1+len(terms) {
		t.Fatalf("erl gave %d answers for %d terms", len(out), len(terms))
	}
	for i, tm := range terms {
		ok, v := splitErlResult(t, out[1+i])
		text := string(in[2+2*i])
		switch {
		case !ok:
			t.Errorf("erl did not read %s back: %s", text, Format(v))
		case !equalWithZeroSigns(v, tm):
			t.Errorf("erl read %s as %s", text, Format(v))
		}
	}
	res := decodeErlAnswer(t, out[0]).(Tuple)
	if !Equal(res[0], True) {
		t.Errorf("file:consult did not read the file as the terms: %s", Format(res[1]))
	} else if got := res[1].(Tuple)[1].(List); len(got) == len(terms) {
		for i := range terms {
			if !equalWithZeroSigns(got[i], terms[i]) {
				t.Errorf("file:consult read %s as %s", Format(terms[i]), Format(got[i]))
			}
		}
	}
}

// TestTextOTPParseTables checks the hand-written tables against erl: every
// parseCases text reads as its term, every parseErrorCases text is refused,
// and file:consult/1 agrees with each encodingCases row.
func TestTextOTPParseTables(t *testing.T) {
	erl := otptest.Erl(t)
	dir := t.TempDir()
	var in [][]byte
	for _, c := range parseCases {
		in = append(in, []byte("p"), []byte(c.text))
	}
	for _, c := range parseErrorCases {
		in = append(in, []byte("p"), []byte(c.text))
	}
	for i, c := range encodingCases {
		path := filepath.Join(dir, "enc"+string(rune('a'+i))+".txt")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		in = append(in, []byte("c"), []byte(path))
	}
	out := erl.Eval(t, erlParseFun+`
Run = fun(<<"p">>, Text) -> ParseText(Text);
         (<<"c">>, Path) ->
             case file:consult(binary_to_list(Path)) of
                 {ok, Ts} -> {ok, Ts};
                 {error, E} -> {error, unicode:characters_to_binary(io_lib:format("~tp", [E]))}
             end
      end,
Each = fun Loop([Kind, Arg | Rest]) -> [term_to_binary(Run(Kind, Arg)) | Loop(Rest)]; Loop([]) -> [] end,
Each(In)`, in...)
	if len(out) != len(parseCases)+len(parseErrorCases)+len(encodingCases) {
		t.Fatalf("erl gave %d answers", len(out))
	}
	for i, c := range parseCases {
		ok, v := splitErlResult(t, out[i])
		if !ok {
			t.Errorf("erl refused %q: %s", c.text, Format(v))
		} else if !equalWithZeroSigns(v, c.want) {
			t.Errorf("erl read %q as %s, the table says %s", c.text, Format(v), Format(c.want))
		}
	}
	out = out[len(parseCases):]
	for i, c := range parseErrorCases {
		if ok, v := splitErlResult(t, out[i]); ok {
			t.Errorf("erl read %q as %s; the table says it is an error", c.text, Format(v))
		}
	}
	out = out[len(parseErrorCases):]
	for i, c := range encodingCases {
		ok, v := splitErlResult(t, out[i])
		switch {
		case ok != (c.want != nil):
			t.Errorf("%s: file:consult gave %s", c.name, Format(v))
		case ok && !Equal(v, List(c.want)):
			t.Errorf("%s: file:consult read %s, the table says %s", c.name, Format(v), Format(List(c.want)))
		}
	}
}

// TestTextOTPPrinted has erl print terms with io_lib:format (~tp, ~tw, and
// ~p in a Latin-1 file with a coding comment), in file:consult/1 syntax,
// and checks that ParseAll reads exactly those terms. Besides random terms,
// erl adds some of its own: floats from arithmetic, an external fun, and
// text it prints in its own styles.
func TestTextOTPPrinted(t *testing.T) {
	erl := otptest.Erl(t)
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var terms List
	for len(terms) < 400 {
		terms = append(terms, randomTerm(r, 1+r.Intn(4)))
	}
	bin, err := Encode(terms)
	if err != nil {
		t.Fatal(err)
	}
	out := erl.Eval(t, `
Extra = [0.1 + 0.2, 1/3, -1.0e-300, 2.0e22, math:pi(), fun lists:map/2, fun erlang:'+'/2,
         'hé', '日本', "日本", <<"é"/utf8>>, "\x{1}\e\d", [1000, 0], 'a\x{85}b', $\n, [16#10FFFF],
         #{[] => <<>>, {} => #{}}, <<1:1>>, <<255, 7:3>>, -0.0, [a | -0.0], 'maybe', 'else', 'end'],
Terms = binary_to_term(hd(In)) ++ Extra,
Print = fun(Fmt) -> [io_lib:format(Fmt, [T]) || T <- Terms] end,
[term_to_binary(Terms),
 unicode:characters_to_binary(Print("~tp.~n")),
 unicode:characters_to_binary(Print("~tw.~n")),
 unicode:characters_to_binary(["%% -*- coding: latin-1 -*-\n" | Print("~p.~n")], unicode, latin1)]`, bin)
	want, ok := decodeErlAnswer(t, out[0]).(List)
	if !ok || len(want) <= len(terms) {
		t.Fatalf("erl's term list has the wrong shape")
	}
	for i, style := range []string{"~tp", "~tw", "~p latin-1"} {
		got, err := ParseAll(string(out[1+i]))
		if err != nil {
			t.Errorf("%s: ParseAll: %v", style, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%s: ParseAll read %d terms, erl wrote %d", style, len(got), len(want))
			continue
		}
		for j := range want {
			if !equalWithZeroSigns(got[j], want[j]) {
				t.Errorf("%s: term %d read as %s, erl wrote %s", style, j, Format(got[j]), Format(want[j]))
			}
		}
	}
}

// TestTextOTPFormatExports: Format writes every encoding of fun M:F/A as
// io_lib:format("~w") writes the term binary_to_term reads from it.
func TestTextOTPFormatExports(t *testing.T) {
	erl := otptest.Erl(t)
	var in [][]byte
	for _, arity := range [][]byte{
		{tagSmallInteger, 3}, {tagInteger, 0, 0, 0, 3}, {tagInteger, 0, 0, 1, 44},
		{tagInteger, 0x7f, 0xff, 0xff, 0xff}, {tagSmallBig, 1, 0, 3},
		{tagSmallBig, 5, 0, 2, 0, 0, 0, 1}, {tagLargeBig, 0, 0, 0, 1, 0, 200},
	} {
		in = append(in, append([]byte{131}, exportWithArityBytes(arity...).Raw...))
	}
	out := erl.Eval(t, `[iolist_to_binary(io_lib:format("~w", [binary_to_term(B)])) || B <- In]`, in...)
	if len(out) != len(in) {
		t.Fatalf("erl gave %d answers for %d terms", len(out), len(in))
	}
	for i, b := range in {
		if got := Format(&Opaque{Raw: b[1:]}); got != string(out[i]) {
			t.Errorf("Format(% x) = %s, erl writes %s", b[1:], got, out[i])
		}
	}
}
