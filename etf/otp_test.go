package etf

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/rand"
	"testing"

	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// Differential tests against a real OTP 25 erl. Each test starts erl once
// and sends all its terms in one batch.

// otpPairCode receives encodings in pairs A, B and returns, per pair:
// term_to_binary of A and B as OTP writes them, A with compression, with
// minor_version 0 (FLOAT_EXT) and with minor_version 2 (UTF-8 atoms), and a
// record of hashes and comparisons.
const otpPairCode = `
Pairs = fun P([X, Y | Rest]) -> [{X, Y} | P(Rest)]; P([]) -> [] end,
Cmp = fun(X, Y) -> if X < Y -> -1; X > Y -> 1; true -> 0 end end,
B = fun(true) -> 1; (false) -> 0 end,
lists:flatmap(fun({BA, BB}) ->
    A = binary_to_term(BA), Bt = binary_to_term(BB),
    [term_to_binary(A), term_to_binary(Bt),
     term_to_binary(A, [{compressed, 9}]),
     term_to_binary(A, [{minor_version, 0}]),
     term_to_binary(A, [{minor_version, 2}]),
     <<(erlang:phash2(A, 1 bsl 32)):32, (erlang:phash2(Bt, 1 bsl 32)):32, (erlang:phash2(A)):32,
       (Cmp(A, Bt)):8/signed, (B(A =:= Bt)):8, (B(A == Bt)):8,
       (dets_utils:cmp(A, Bt)):8/signed, (dets_utils:cmp(Bt, A)):8/signed>>]
  end, Pairs(In))
`

const otpPairOut = 6 // binaries returned per pair

func TestOTPDifferential(t *testing.T) {
	erl := otptest.Erl(t)
	seed := testutil.Seed(t)
	r := rand.New(rand.NewSource(seed))
	n := 3000
	if testing.Short() {
		n = 500
	}
	type pair struct{ a, b Term }
	pairs := make([]pair, n)
	var in [][]byte
	for i := range pairs {
		a, b := randomPair(r, 4)
		pairs[i] = pair{a, b}
		for _, x := range []Term{a, b} {
			enc, err := Encode(x)
			if err != nil {
				t.Fatalf("Encode(%v): %v", x, err)
			}
			in = append(in, enc)
		}
	}
	out := erl.Eval(t, otpPairCode, in...)
	if len(out) != otpPairOut*n {
		t.Fatalf("erl returned %d binaries, want %d", len(out), otpPairOut*n)
	}
	failures := 0
	fail := func(i int, format string, args ...any) {
		t.Helper()
		failures++
		if failures <= 20 {
			t.Errorf("pair %d (A=%s B=%s): "+format,
				append([]any{i, shortEnc(pairs[i].a), shortEnc(pairs[i].b)}, args...)...)
		}
	}
	for i, p := range pairs {
		o := out[otpPairOut*i:]
		encA, encB := in[2*i], in[2*i+1]
		if !bytes.Equal(o[0], encA) {
			fail(i, "OTP encodes A as\n%x\nwe encode\n%x", o[0], encA)
		}
		if !bytes.Equal(o[1], encB) {
			fail(i, "OTP encodes B as\n%x\nwe encode\n%x", o[1], encB)
		}
		// Other OTP encodings of A decode to exactly A (same bytes again).
		for k, name := range []string{"compressed", "minor_version 0", "minor_version 2"} {
			got, err := Decode(o[2+k])
			if err != nil {
				fail(i, "Decode(%s %x): %v", name, o[2+k], err)
				continue
			}
			if re, err := Encode(got); err != nil || !bytes.Equal(re, encA) || !Equal(got, p.a) {
				fail(i, "%s encoding decodes to %s", name, shortEnc(got))
			}
		}
		rec := o[5]
		if len(rec) != 17 {
			t.Fatalf("pair %d: record of %d bytes", i, len(rec))
		}
		hA, hB, h27 := binary.BigEndian.Uint32(rec), binary.BigEndian.Uint32(rec[4:]), binary.BigEndian.Uint32(rec[8:])
		cmp, exact, eq := int(int8(rec[12])), rec[13] == 1, rec[14] == 1
		dAB, dBA := int(int8(rec[15])), int(int8(rec[16]))
		if got := Phash2Range(p.a, 1<<32); got != hA {
			fail(i, "phash2(A, 2^32) = %d, OTP %d", got, hA)
		}
		if got := Phash2Range(p.b, 1<<32); got != hB {
			fail(i, "phash2(B, 2^32) = %d, OTP %d", got, hB)
		}
		if got := Phash2(p.a); got != h27 {
			fail(i, "phash2(A) = %d, OTP %d", got, h27)
		}
		if got := Compare(p.a, p.b); got != cmp {
			fail(i, "Compare = %d, OTP %d", got, cmp)
		}
		if got := Compare(p.b, p.a); got != -cmp {
			fail(i, "Compare(B, A) = %d, OTP %d", got, -cmp)
		}
		if got := Equal(p.a, p.b); got != exact {
			fail(i, "Equal = %v, OTP =:= %v", got, exact)
		}
		if eq != (cmp == 0) {
			fail(i, "OTP == is %v but its order gives %d", eq, cmp)
		}
		// dets_utils:cmp/2 answers 1 both ways for maps that are == but not
		// =:=; there CompareExact only needs to be antisymmetric.
		got, rev := CompareExact(p.a, p.b), CompareExact(p.b, p.a)
		if got != -rev {
			fail(i, "CompareExact not antisymmetric: %d, %d", got, rev)
		}
		if dAB == -dBA && got != dAB {
			fail(i, "CompareExact = %d, dets_utils:cmp %d", got, dAB)
		}
		if exact != (got == 0) {
			fail(i, "CompareExact = %d but =:= is %v", got, exact)
		}
	}
	if failures > 0 {
		t.Errorf("%d failures in %d pairs", failures, n)
	}
}

// otpOpaqueCode builds pids, ports, references and funs in erl (local and
// from other nodes, in every encoding OTP 25 still reads) and returns, per
// term: its encoding, phash2 and its order against every other term.
const otpOpaqueCode = `
Ext = fun(Tag, Body) -> binary_to_term(<<131, Tag, Body/binary>>) end,
N = fun(S) -> <<100, (byte_size(S)):16, S/binary>> end,
U = fun(S) -> <<119, (byte_size(S)), S/binary>> end,
X = 7, Y = {a, "xy"},
Pids = [Ext(88, <<(N(Node))/binary, Id:32, Ser:32, Cr:32>>) || Node <- [<<"a@h">>, <<"b@h">>], Id <- [1, 300, 1 bsl 28], Ser <- [0, 2], Cr <- [0, 7]]
    ++ [Ext(103, <<(N(<<"a@h">>))/binary, 300:32, 2:32, 3>>), Ext(88, <<(N(<<"a@h">>))/binary, 300:32, 2:32, 3:32>>), Ext(88, <<(U(<<"a@h">>))/binary, 1:32, 0:32, 0:32>>),
        self(), list_to_pid("<0.5.0>"), list_to_pid("<0.1.3>")],
Ports = [Ext(120, <<(N(Node))/binary, Id:64, Cr:32>>) || Node <- [<<"a@h">>, <<"c@h">>], Id <- [1, 300, 1 bsl 40], Cr <- [0, 7]]
    ++ [Ext(89, <<(N(<<"a@h">>))/binary, 300:32, 7:32>>), Ext(102, <<(N(<<"c@h">>))/binary, 1:32, 3>>) | erlang:ports()],
Refs = [Ext(90, <<(length(Ids)):16, (N(Node))/binary, Cr:32, (<< <<I:32>> || I <- Ids>>)/binary>>)
        || Node <- [<<"a@h">>, <<"b@h">>], Cr <- [0, 1], Ids <- [[1], [2], [1,2], [2,1], [3,0,0], [0,0,0,5], [1,0,0,0,1]]]
    ++ [Ext(114, <<1:16, (N(<<"a@h">>))/binary, 1, 2:32>>), Ext(101, <<(N(<<"a@h">>))/binary, 1:32, 0>>),
        make_ref(), make_ref()],
Funs = [fun lists:map/2, fun erlang:phash2/1, fun 'Ωmod':'é'/0, fun() -> ok end, fun(A) -> A + X end, fun(A) -> {A, X, Y} end],
Terms = Pids ++ Ports ++ Refs ++ Funs ++ [{self(), make_ref()}, [fun lists:map/2 | self()], #{self() => make_ref(), a => fun() -> Y end}],
Cmp = fun(A, B) -> if A < B -> 255; A > B -> 1; true -> 0 end end,
[<<(erlang:phash2(T, 1 bsl 32)):32, (<< <<(Cmp(T, T2))>> || T2 <- Terms >>)/binary, (term_to_binary(T))/binary>> || T <- Terms]
`

func TestOTPOpaque(t *testing.T) {
	erl := otptest.Erl(t)
	out := erl.Eval(t, otpOpaqueCode)
	n := len(out)
	if n < 50 {
		t.Fatalf("erl returned only %d terms", n)
	}
	terms := make([]Term, n)
	for i, o := range out {
		if len(o) < 4+n {
			t.Fatalf("term %d: short record", i)
		}
		enc := o[4+n:]
		term, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(%x): %v", enc, err)
		}
		terms[i] = term
		if got, want := Phash2Range(term, 1<<32), binary.BigEndian.Uint32(o); got != want {
			t.Errorf("phash2(%x) = %d, OTP %d", enc, got, want)
		}
		// Opaque terms survive a round trip byte for byte.
		if re, err := Encode(term); err != nil || !bytes.Equal(re, enc) {
			t.Errorf("re-encoding %x gave %x, %v", enc, re, err)
		}
	}
	for i := range terms {
		for j := range terms {
			want := int(int8(out[i][4+j]))
			if got := Compare(terms[i], terms[j]); got != want {
				t.Errorf("Compare(%x, %x) = %d, OTP %d", out[i][4+n:], out[j][4+n:], got, want)
			}
		}
	}
}

// TestOTPEdgeEncodings checks hand-picked encodings whose OTP bytes are
// easy to get wrong: boundaries of each integer, atom and list form, and
// maps just at and above OTP's 32-key flatmap limit.
func TestOTPEdgeEncodings(t *testing.T) {
	erl := otptest.Erl(t)
	code := `
Atom = fun(C, Len) -> list_to_atom(lists:duplicate(Len, C)) end,
Terms = [0, 255, 256, -1, 2147483647, 2147483648, -2147483648, -2147483649,
  1 bsl 63, -(1 bsl 63), (1 bsl 64) - 1, 1 bsl 64, 1 bsl 2040, 1 bsl 2047, -(1 bsl 2048), 1 bsl 4000,
  0.0, -0.0, 1.0e300, 5.0e-324,
  '', a, 'é', 'Ω', Atom($x, 255), Atom(16#e9, 255), Atom(16#3a9, 127), list_to_atom(lists:duplicate(127, 16#3a9) ++ "a"), Atom(16#3a9, 128), Atom(16#3a9, 255), Atom(16#1F600, 255),
  [], "a", lists:duplicate(65535, 255), lists:duplicate(65536, 1), [1, 2 | 3], [256], "ab" ++ [-1],
  <<>>, <<1:1>>, <<255, 7:3>>, {}, list_to_tuple(lists:seq(1, 256)),
  maps:from_list([{I, I} || I <- lists:seq(1, 32)]), #{1 => a, 1.0 => b, -1 => c, a => d, <<>> => e, [] => f, {} => g}],
[term_to_binary(T) || T <- Terms]
`
	out := erl.Eval(t, code)
	if len(out) < 40 {
		t.Fatalf("erl returned %d terms", len(out))
	}
	for _, enc := range out {
		term, err := Decode(enc)
		if err != nil {
			t.Errorf("Decode(%s): %v", shortHex(enc), err)
			continue
		}
		re, err := Encode(term)
		if err != nil || !bytes.Equal(re, enc) {
			t.Errorf("Encode(Decode(%s)) = %s, %v", shortHex(enc), shortHex(re), err)
		}
		if size, err := EncodedSize(term); err != nil || size != len(enc) {
			t.Errorf("EncodedSize = %d, %v; want %d", size, err, len(enc))
		}
	}
}

// TestOTPLargeMap documents that maps above 32 keys, which OTP stores as
// hash tries, are written in key order by Encode and in hash order by OTP,
// while both decode to the same map.
func TestOTPLargeMap(t *testing.T) {
	erl := otptest.Erl(t)
	m := make(Map, 40)
	for i := range m {
		m[i] = Pair{Key: Int(i), Value: Atom("v")}
	}
	enc, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	out := erl.Eval(t, `[T] = [binary_to_term(B) || B <- In], [term_to_binary(T), term_to_binary(maps:size(T))]`, enc)
	back, err := Decode(out[0])
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(back, m) {
		t.Errorf("OTP's encoding of our 40-key map decodes to %s", shortEnc(back))
	}
	if size, _ := Decode(out[1]); size != Int(40) {
		t.Errorf("OTP sees %v keys", size)
	}
	if bytes.Equal(out[0], enc) {
		t.Log("OTP wrote the 40-key map in key order (expected hash order)")
	}
}

func shortEnc(t Term) string {
	enc, err := Encode(t)
	if err != nil {
		return "<unencodable: " + err.Error() + ">"
	}
	return shortHex(enc)
}

func shortHex(b []byte) string {
	if len(b) > 200 {
		return hex.EncodeToString(b[:200]) + "..."
	}
	return hex.EncodeToString(b)
}
