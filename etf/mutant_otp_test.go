package etf

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// What binary_to_term accepts, decided by a real OTP 25, against Decode.

// otpVerdictCode receives pairs of binaries, an encoding M and our
// re-encoding R of what Decode made of it (empty when Decode refused M),
// and answers for each pair:
//
//	<<0>>  binary_to_term(M) fails;
//	<<2>>  it succeeds but leaves bytes unused: after the term, or after
//	       the term inside compressed data (Decode refuses those bytes);
//	       using more bytes than there are is a failure, <<0>>;
//	<<1, Same, Hash:32, TermToBinary/binary>> otherwise, where Same is 1
//	       when binary_to_term(R) =:= the term (0 if not, 2 without R) and
//	       Hash is phash2(Term, 2^32).
const otpVerdictCode = `
Pairs = fun P([X, Y | Rest]) -> [{X, Y} | P(Rest)]; P([]) -> [] end,
Complete = fun(M) ->
    {T, Used} = binary_to_term(M, [used]),
    Used =< byte_size(M) orelse throw(overrun),
    Used =:= byte_size(M) orelse throw(unused),
    case M of
        <<131, 80, _:32, Z/binary>> ->
            Body = zlib:uncompress(Z),
            {_, InUsed} = binary_to_term(<<131, Body/binary>>, [used]),
            InUsed =< 1 + byte_size(Body) orelse throw(overrun),
            InUsed =:= 1 + byte_size(Body) orelse throw(unused);
        _ -> ok
    end,
    T
end,
[try Complete(M) of
     T ->
         Same = case R of
             <<>> -> 2;
             _ -> try binary_to_term(R) =:= T of true -> 1; false -> 0 catch _:_ -> 0 end
         end,
         <<1, Same, (erlang:phash2(T, 1 bsl 32)):32, (term_to_binary(T))/binary>>
 catch
     throw:unused -> <<2>>;
     _:_ -> <<0>>
 end || {M, R} <- Pairs(In)]
`

// otpVerdict is OTP's answer on one encoding.
type otpVerdict struct {
	complete bool   // one complete term
	unused   bool   // a term, with bytes left over
	same     byte   // see otpVerdictCode
	hash     uint32 // phash2(T, 2^32)
	enc      []byte // term_to_binary(T)
}

// askOTP runs otpVerdictCode over encs, in one erl unless OTP 25's VM
// dies on a signal, which it does now and then on a long batch (CI saw it
// on TestOTPLimits' batch of fixed cases): otptest.EvalSplit then reruns
// the batch in halves. answered[i] is false for an encoding that crashed
// erl on its own; crashed counts those.
func askOTP(t *testing.T, erl *otptest.Runner, encs [][]byte) (vs []otpVerdict, answered []bool, crashed int) {
	t.Helper()
	in := make([][]byte, 0, 2*len(encs))
	for _, b := range encs {
		var re []byte
		if term, err := Decode(b); err == nil {
			if re, err = Encode(term); err != nil {
				t.Fatalf("%s decodes but does not encode: %v", shortHex(b), err)
			}
		}
		in = append(in, b, re)
	}
	return otptest.EvalSplit(t, len(encs), func(lo, hi int) ([]otpVerdict, error) {
		out, err := erl.EvalErr(otpVerdictCode, in[2*lo:2*hi]...)
		if err != nil {
			return nil, err
		}
		vs := make([]otpVerdict, len(out))
		for i, o := range out {
			switch {
			case len(o) == 1 && o[0] == 0:
			case len(o) == 1 && o[0] == 2:
				vs[i].unused = true
			case len(o) > 6 && o[0] == 1:
				vs[i] = otpVerdict{complete: true, same: o[1], hash: binary.BigEndian.Uint32(o[2:]), enc: o[6:]}
			default:
				t.Fatalf("erl answer %x for %s", o, shortHex(encs[lo+i]))
			}
		}
		return vs, nil
	})
}

// checkAgainstOTP compares Decode with OTP's verdict v on b, and returns
// the problems. differs are documented reasons to refuse what OTP reads:
// a refusal that gives one is no problem.
func checkAgainstOTP(b []byte, v otpVerdict, differs ...string) []string {
	var problems []string
	bad := func(s string) { problems = append(problems, s) }
	term, err := Decode(b)
	switch {
	case v.unused:
		// Usually trailing bytes; or a FLOAT_EXT without its NUL, where
		// OTP reads on into the bytes after the field.
		if err == nil {
			bad("OTP reads a term and leaves bytes over; Decode accepts it")
		}
	case !v.complete:
		if err == nil {
			bad("OTP refuses it; Decode accepts " + shortEnc(term))
		}
	case err != nil:
		if !slices.ContainsFunc(differs, func(why string) bool { return why != "" && strings.Contains(err.Error(), why) }) {
			bad("OTP accepts it; Decode says " + err.Error())
		}
	default:
		if v.same != 1 {
			bad("OTP finds our re-encoding " + shortEnc(term) + " a different term")
		}
		if h := Phash2Range(term, 1<<32); h != v.hash {
			bad("phash2 differs from OTP's")
		}
		if back, err := Decode(v.enc); err != nil || !Equal(back, term) {
			bad("OTP's own encoding " + shortHex(v.enc) + " of it decodes to another term: " + errText(err))
		}
	}
	return problems
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// TestOTPLimits confirms every case of limitCases against erl.
func TestOTPLimits(t *testing.T) {
	erl := otptest.Erl(t)
	var cs, crashing []limitCase
	var encs, crashEncs [][]byte
	for _, c := range limitCases() {
		if c.crashes {
			crashing, crashEncs = append(crashing, c), append(crashEncs, c.enc)
		} else {
			cs, encs = append(cs, c), append(encs, c.enc)
		}
	}
	vs, answered, crashed := askOTP(t, erl, encs)
	if crashed > 0 {
		t.Errorf("%d fixed cases crashed erl on their own, each rerun alone", crashed)
	}
	for i, v := range vs {
		if !answered[i] {
			continue
		}
		c := cs[i]
		// A case we refuse on purpose is moot unless OTP reads it.
		if want := c.ok || c.differs != ""; v.complete != want {
			t.Errorf("%s (%s): OTP reads it: %v; the table says %v", c.name, shortHex(c.enc), v.complete, want)
		}
		for _, p := range checkAgainstOTP(c.enc, v, c.differs) {
			t.Errorf("%s (%s): %s", c.name, shortHex(c.enc), p)
		}
	}
	// binary_to_term alone reads these; anything more crashes erl.
	out, answered, crashed := otptest.EvalSplit(t, len(crashEncs), func(lo, hi int) ([][]byte, error) {
		return erl.EvalErr(`[try binary_to_term(M) of _ -> <<1>> catch _:_ -> <<0>> end || M <- In]`, crashEncs[lo:hi]...)
	})
	for i, c := range crashing {
		if !answered[i] || len(out[i]) != 1 || out[i][0] != 1 {
			t.Errorf("%s (%s): OTP's binary_to_term refuses it (or crashes erl: %d did)", c.name, shortHex(c.enc), crashed)
		}
	}
}

// TestOTPMutants is the differential of random damage: Decode (and so
// every walker, which TestMutantsWalkersAgree ties to it) accepts a mutant
// exactly when OTP's binary_to_term reads it as one complete term, and
// then to the same term, hash included.
func TestOTPMutants(t *testing.T) {
	erl := otptest.Erl(t)
	seed := testutil.Seed(t)
	r := rand.New(rand.NewSource(seed))
	n := 50000
	if testing.Short() {
		n = 5000
	}
	var bd RawBatch
	var encs [][]byte
	skipped := 0
	for len(encs) < n {
		m := mutateEncoding(r, randomEncoding(r))
		if _, problems := walkerVerdict(&bd, m); len(problems) > 0 {
			t.Fatalf("mutant %s: %s (seed %d)", shortHex(m), problems[0], seed)
		}
		// erl would read such a fun and then crash on it; and a
		// reference without ID words inside a term makes erl misread
		// the rest, and can crash it.
		if _, err := Decode(m); err != nil && (strings.Contains(err.Error(), funCreatorReason) ||
			strings.Contains(err.Error(), refNoWordsReason)) {
			skipped++
			continue
		}
		// OTP allocates a compressed term's declared size before it
		// inflates; a damaged size could ask for gigabytes.
		if len(m) >= 6 && m[1] == tagCompressed && binary.BigEndian.Uint32(m[2:]) > 1<<20 {
			skipped++
			continue
		}
		encs = append(encs, m)
	}
	accepted, refused, failures := 0, 0, 0
	vs, answered, crashed := askOTP(t, erl, encs)
	if crashed > len(encs)/100 {
		t.Errorf("%d of %d mutants crashed erl on their own (seed %d)", crashed, len(encs), seed)
	}
	for i, v := range vs {
		if !answered[i] {
			continue
		}
		if v.complete {
			accepted++
		}
		// A FLOAT_EXT without a NUL or a reference without ID words
		// makes OTP read past the term, into the bytes after it: a
		// trailing part of the mutant, or what follows it in erl's input.
		problems := checkAgainstOTP(encs[i], v, internalRefReason, floatNoNULReason, refNoWordsReason, funKeyOrderReason)
		if v.complete && len(problems) == 0 {
			if _, err := Decode(encs[i]); err != nil {
				refused++ // for a documented reason
			}
		}
		for _, p := range problems {
			failures++
			if failures <= 20 {
				t.Errorf("mutant %s: %s", shortHex(encs[i]), p)
			}
		}
	}
	t.Logf("%d mutants (and %d not sent to erl), %d read by OTP, %d of those refused on purpose", n, skipped, accepted, refused)
	if failures > 0 {
		t.Errorf("%d disagreements with OTP (seed %d)", failures, seed)
	}
}
