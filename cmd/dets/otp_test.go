package main

// Round trips with real Erlang/OTP, the oracle for the otp9 format.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	farm "github.com/dgryski/go-farm"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// otpObjects is Erlang code that binds Objs to a varied list of distinct
// objects, built by OTP itself rather than by our encoder.
const otpObjects = `
Objs = [{I, integer_to_binary(I), I / 3, [I, {x, I}], #{k => I, "s" => [I]},
         <<I:13>>, -I * 100000000000000000000, list_to_atom("a b" ++ integer_to_list(I))}
        || I <- lists:seq(1, 300)]
    ++ [{unicode, 'λ', "λ→ \"q\"\n", <<"λ"/utf8>>, <<255, 0>>},
        {empty, [], {}, <<>>, #{}, ""},
        {floats, 0.1, -2.5e-300, 1.0e300, 3.0, -0.0, math:pi()},
        {improper, [a, b | c], [1 | 2]},
        {big, 1 bsl 100, -(1 bsl 64), 1 bsl 63, -(1 bsl 63)}],
`

// sameOnBothSides is Erlang code comparing the lists A and B as multisets
// of exact terms (=:=, so 1 and 1.0 differ).
const sameOnBothSides = `
Canon = fun(L) -> lists:sort([term_to_binary(X, [deterministic]) || X <- L]) end,
case Canon(A) =:= Canon(B) of
    true -> [<<"same">>];
    false -> [iolist_to_binary(io_lib:format("differ: ~b vs ~b objects; only left ~tp; only right ~tp",
        [length(A), length(B), [binary_to_term(X) || X <- Canon(A) -- Canon(B)],
         [binary_to_term(X) || X <- Canon(B) -- Canon(A)]]))]
end
`

func TestOTPDumpConsult(t *testing.T) {
	erl := otptest.Erl(t)
	dir := t.TempDir()
	tab := filepath.Join(dir, "otp.dets")
	out := erl.Eval(t, otpObjects+`
F = binary_to_list(hd(In)),
{ok, T} = dets:open_file(otp_dump, [{file, F}, {type, duplicate_bag}]),
ok = dets:insert(T, Objs ++ [hd(Objs)]),
ok = dets:close(T),
[term_to_binary(Objs ++ [hd(Objs)])]`, []byte(tab))
	sent, err := etf.Decode(out[0])
	if err != nil {
		t.Fatal(err)
	}
	objs := sent.(etf.List)

	dump := filepath.Join(dir, "dump.terms")
	r := must(t, "dump", tab)
	if err := os.WriteFile(dump, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(r.stdout, "\n"); n != len(objs) {
		t.Errorf("dump has %d lines, OTP wrote %d objects", n, len(objs))
	}
	res := erl.Eval(t, `
{ok, A} = file:consult(binary_to_list(hd(In))),
{ok, T} = dets:open_file(otp_check, [{file, binary_to_list(lists:nth(2, In))}, {access, read}, {type, duplicate_bag}]),
B = dets:match_object(T, '_'),
ok = dets:close(T),`+sameOnBothSides, []byte(dump), []byte(tab))
	if string(res[0]) != "same" {
		t.Fatalf("file:consult of the dump is not the table: %s", res[0])
	}

	// The JSON dump has one valid line per object.
	js := must(t, "dump", "--format", "json", tab)
	lines := strings.Split(strings.TrimSuffix(js.stdout, "\n"), "\n")
	if len(lines) != len(objs) {
		t.Errorf("json dump has %d lines, want %d", len(lines), len(objs))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("invalid JSON line: %s", l)
		}
	}

	// A table written by this package with the same objects, in another
	// order and layout, has the same digest.
	mine := filepath.Join(dir, "mine.dets")
	rev := make([]etf.Term, len(objs))
	for i, o := range objs {
		rev[len(objs)-1-i] = o
	}
	makeTable(t, mine, dets.Options{Kind: dets.DuplicateBag, MinSlots: 2048}, rev...)
	if a, b := must(t, "digest", tab).stdout, must(t, "digest", mine).stdout; a != b {
		t.Errorf("digest of the OTP table %s, of ours %s", a, b)
	}
}

func TestOTPConsultLoad(t *testing.T) {
	erl := otptest.Erl(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "in.terms")
	tab := filepath.Join(dir, "loaded.dets")
	// erl writes the consult file with its own printer.
	erl.Eval(t, otpObjects+`
Text = [io_lib:format("~tp.~n", [O]) || O <- Objs],
ok = file:write_file(binary_to_list(hd(In)), unicode:characters_to_binary(["%% written by erl\n" | Text])),
[]`, []byte(input))

	must(t, "load", "--kind", "bag", "--keypos", "1", tab, input)
	res := erl.Eval(t, `
{ok, A} = file:consult(binary_to_list(hd(In))),
{ok, T} = dets:open_file(otp_load, [{file, binary_to_list(lists:nth(2, In))}, {repair, false}, {type, bag}, {keypos, 1}]),
B = dets:match_object(T, '_'),
bag = dets:info(T, type),
ok = dets:close(T),`+sameOnBothSides, []byte(input), []byte(tab))
	if string(res[0]) != "same" {
		t.Fatalf("OTP reads back other objects than the consult file held: %s", res[0])
	}
}

// TestOTPKilledWriter: erl writes, is killed with SIGKILL, and leaves the
// file not closed properly; check says so, repair fixes it, check agrees,
// and OTP opens the result without repairing.
func TestOTPKilledWriter(t *testing.T) {
	erl := otptest.Erl(t)
	dir := t.TempDir()
	tab := filepath.Join(dir, "crash.dets")
	marker := filepath.Join(dir, "ready")
	work := t.TempDir()
	cmd, err := erl.Start(work, `
F = binary_to_list(hd(In)),
Marker = binary_to_list(lists:nth(2, In)),
{ok, T} = dets:open_file(crash, [{file, F}, {type, set}]),
ok = dets:insert(T, [{I, synced, I * I} || I <- lists:seq(1, 500)]),
ok = dets:sync(T),
ok = dets:insert(T, [{I, later, <<I:32>>} || I <- lists:seq(400, 700)]),
[_] = dets:lookup(T, 1),
ok = file:write_file(Marker, <<"ready">>),
timer:sleep(600000),
[]`, []byte(tab), []byte(marker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testutil.WaitForFile(t, marker, 2*time.Minute, "erl")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	before := fileHash(t, tab)
	r := runDets(t, "check", tab)
	r.want(t, exitNeedsRepair, "check", tab)
	if fileHash(t, tab) != before {
		t.Fatal("check modified the file")
	}
	must(t, "repair", "--backup", tab+".bak", tab)
	must(t, "check", tab)

	res := erl.Eval(t, `
{ok, T} = dets:open_file(crash_check, [{file, binary_to_list(hd(In))}, {repair, false}, {type, set}]),
B = dets:match_object(T, '_'),
ok = dets:close(T),
A = [{I, synced, I * I} || I <- lists:seq(1, 399)] ++ [{I, later, <<I:32>>} || I <- lists:seq(400, 700)],
`+sameOnBothSides, []byte(tab))
	if string(res[0]) != "same" {
		t.Fatalf("after repair OTP sees other objects: %s", res[0])
	}
}

// TestOTPDigestRecipe: the digest's recipe in docs/cli.md §6 and the
// command's help reproduces `dets digest` from OTP's own bytes: for each
// object the Fingerprint64 of term_to_binary(O, [{minor_version, 1}]),
// then their sum, xor and count fed to Fingerprint64. The option is what
// the recipe names so that OTP 26 and later, whose default writes atoms
// as UTF-8, give the same bytes as OTP 25 here.
func TestOTPDigestRecipe(t *testing.T) {
	erl := otptest.Erl(t)
	tab := filepath.Join(t.TempDir(), "otp.dets")
	encs := erl.Eval(t, otpObjects+`
{ok, T} = dets:open_file(otp_digest, [{file, binary_to_list(hd(In))}, {type, duplicate_bag}]),
ok = dets:insert(T, Objs ++ [hd(Objs)]),
ok = dets:close(T),
[term_to_binary(O, [{minor_version, 1}]) || O <- Objs ++ [hd(Objs)]]`, []byte(tab))
	var sum, xor uint64
	for _, b := range encs {
		f := farm.Fingerprint64(b)
		sum += f
		xor ^= f
	}
	var words [24]byte
	binary.LittleEndian.PutUint64(words[0:], sum)
	binary.LittleEndian.PutUint64(words[8:], xor)
	binary.LittleEndian.PutUint64(words[16:], uint64(len(encs)))
	want := fmt.Sprintf("%016x%016x", farm.Fingerprint64(words[:]), len(encs))
	if got := strings.TrimSpace(must(t, "digest", tab).stdout); got != want {
		t.Fatalf("dets digest %s, the recipe over OTP's bytes gives %s (%d objects)", got, want, len(encs))
	}
}
