package main

// The part-two commands against tables written by real Erlang/OTP.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// otpTable has OTP write otpObjects, each twice for the integer keys, into
// a duplicate_bag at dir/name and returns its path.
func otpTable(t *testing.T, erl *otptest.Runner, dir, name string) string {
	t.Helper()
	tab := filepath.Join(dir, name)
	erl.Eval(t, otpObjects+`
{ok, T} = dets:open_file(otp_ops, [{file, binary_to_list(hd(In))}, {type, duplicate_bag}]),
ok = dets:insert(T, Objs ++ [O || O <- Objs, is_integer(element(1, O))]),
ok = dets:close(T),
[]`, []byte(tab))
	return tab
}

// TestOTPGet: dets get prints what dets:lookup/2 returns, for every key of
// a table OTP wrote, and exits 1 for a key it does not hold.
func TestOTPGet(t *testing.T) {
	erl := otptest.Erl(t)
	tab := otpTable(t, erl, t.TempDir(), "get.dets")
	out := erl.Eval(t, `
{ok, T} = dets:open_file(otp_get, [{file, binary_to_list(hd(In))}, {access, read}, {type, duplicate_bag}]),
Keys = lists:usort(dets:traverse(T, fun(O) -> {continue, element(1, O)} end)),
R = [term_to_binary({K, dets:lookup(T, K)}) || K <- Keys],
ok = dets:close(T),
R`, []byte(tab))
	if len(out) < 300 {
		t.Fatalf("OTP reports %d keys", len(out))
	}
	for i, b := range out {
		if i%7 != 0 && i > 300 { // every seventh integer key, and all others
			continue
		}
		pair, err := etf.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		key, want := pair.(etf.Tuple)[0], []etf.Term(pair.(etf.Tuple)[1].(etf.List))
		text, err := etf.FormatStrict(key)
		if err != nil {
			t.Fatal(err)
		}
		r := must(t, "get", tab, text)
		got, err := etf.ParseAll(r.stdout)
		if err != nil {
			t.Fatalf("get %s printed %q: %v", text, r.stdout, err)
		}
		sameMultiset(t, got, want)
		if t.Failed() {
			t.Fatalf("get %s differs from dets:lookup", text)
		}
	}
	r := runDets(t, "get", tab, "{no, such, key}")
	r.want(t, exitError, "get missing key")
	if r.stdout != "" || !strings.Contains(r.stderr, "not found") {
		t.Errorf("missing key: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestOTPKeys: dets keys prints OTP's key set, each key once, and --count
// equals dets:info(T, no_keys).
func TestOTPKeys(t *testing.T) {
	erl := otptest.Erl(t)
	tab := otpTable(t, erl, t.TempDir(), "keys.dets")
	out := erl.Eval(t, `
{ok, T} = dets:open_file(otp_keys, [{file, binary_to_list(hd(In))}, {access, read}, {type, duplicate_bag}]),
Keys = lists:usort(dets:traverse(T, fun(O) -> {continue, element(1, O)} end)),
N = dets:info(T, no_keys),
ok = dets:close(T),
[term_to_binary(Keys), integer_to_binary(N)]`, []byte(tab))
	want, err := etf.Decode(out[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := etf.ParseAll(must(t, "keys", tab).stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want.(etf.List)) {
		t.Errorf("dets keys printed %d keys, OTP has %d", len(got), len(want.(etf.List)))
	}
	sameMultiset(t, got, want.(etf.List))
	if n := strings.TrimSpace(must(t, "keys", "--count", tab).stdout); n != string(out[1]) {
		t.Errorf("keys --count %s, dets:info no_keys %s", n, out[1])
	}
}

// TestOTPStats: the counts of dets stats --json equal dets:info's.
func TestOTPStats(t *testing.T) {
	erl := otptest.Erl(t)
	tab := otpTable(t, erl, t.TempDir(), "stats.dets")
	out := erl.Eval(t, `
{ok, T} = dets:open_file(otp_stats, [{file, binary_to_list(hd(In))}, {access, read}, {type, duplicate_bag}]),
{Min, Cur, Max} = dets:info(T, no_slots),
R = [integer_to_binary(X) || X <- [dets:info(T, size), dets:info(T, no_keys), Min, Cur, Max, dets:info(T, file_size)]],
ok = dets:close(T),
R`, []byte(tab))
	var st statsJSON
	if err := json.Unmarshal([]byte(must(t, "stats", "--json", tab).stdout), &st); err != nil {
		t.Fatal(err)
	}
	got := []int64{st.Objects, st.Keys, st.Slots.Min, st.Slots.Current, st.Slots.Max, st.FileSize}
	for i, name := range []string{"size", "no_keys", "min slots", "slots", "max slots", "file_size"} {
		if itoa(int(got[i])) != string(out[i]) {
			t.Errorf("%s: stats %d, dets:info %s", name, got[i], out[i])
		}
	}
	var inBins int64
	for _, b := range st.BucketObjects {
		inBins += b.Count
	}
	if inBins != st.Slots.Current || st.KeyBytes <= 0 || st.ValueBytes <= 0 || st.Largest.Bytes <= 0 {
		t.Errorf("stats: %+v", st)
	}
	text := must(t, "stats", tab).stdout
	for _, want := range []string{"objects:", "load factor:", "objects per bucket", "free blocks by block size"} {
		if !strings.Contains(text, want) {
			t.Errorf("stats text lacks %q:\n%s", want, text)
		}
	}
}
