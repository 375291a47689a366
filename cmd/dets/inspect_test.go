package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/otptest"
)

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{}, tup("alpha", []byte("first value")), tup("beta", 2))
	before := fileHash(t, path)
	r := must(t, "inspect", path)
	for _, want := range []string{"cookie", "ok", "objects", "parts (1)", "segments (1)", "free lists", "trailer", "+ free-list base = file size"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, r.stdout)
		}
	}
	// The slot of alpha, found through the library.
	slot := largestObjectSlot(t, path)
	r = must(t, "inspect", "--slot", slot, path)
	for _, want := range []string{"slot " + slot + ": entry at", "ACTIVE", "object size", "version 131", `binary bytes "first value"`, `atom text "alpha"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect --slot lacks %q:\n%s", want, r.stdout)
		}
	}
	red := must(t, "inspect", "--slot", slot, "--redact", path).stdout
	if strings.Contains(red, "first value") || strings.Contains(red, "alpha") || !strings.Contains(red, "binary bytes") {
		t.Errorf("inspect --redact shows data:\n%s", red)
	}
	if r := must(t, "inspect", "--offset", "20", path); !strings.Contains(r.stdout, "in header") {
		t.Errorf("inspect --offset 20:\n%s", r.stdout)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"inspect", "--slot", "1", "--offset", "2", path}, "exclude each other"},
		{[]string{"inspect", "--out", filepath.Join(dir, "x"), path}, "give --redact too"},
		{[]string{"inspect", "--redact", "--out", path, path}, "already exists"},
		{[]string{"inspect", "--offset", "99999999", path}, "beyond the end"},
		{[]string{"inspect", "--slot", "99999999", path}, "no such slot"},
	} {
		r := runDets(t, c.args...)
		r.want(t, exitError, c.args...)
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dets %v: %q", c.args, r.stderr)
		}
	}
	short := filepath.Join(dir, "short.dets")
	if err := os.WriteFile(short, []byte("not a table"), 0o644); err != nil {
		t.Fatal(err)
	}
	runDets(t, "inspect", short).want(t, exitNotDETS, "inspect short")
	release := holdLock(t, path)
	runDets(t, "inspect", path).want(t, exitBusy, "inspect busy")
	release()
	if fileHash(t, path) != before {
		t.Error("inspect changed the file")
	}
}

// largestObjectSlot is the slot of the table's largest object, found
// through the library.
func largestObjectSlot(t *testing.T, path string) string {
	t.Helper()
	tab, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := tab.Stats()
	tab.Close()
	if err != nil {
		t.Fatal(err)
	}
	return itoa(int(st.LargestObjectSlot))
}

var problemRE = regexp.MustCompile(`corrupt (\w+) at offset (\d+)`)

// problems returns the sections and offsets a check run reported.
func problems(r result) string {
	var out []string
	for _, m := range problemRE.FindAllStringSubmatch(r.stderr, -1) {
		out = append(out, m[1]+"@"+m[2])
	}
	slices.Sort(out)
	return itoa(r.code) + " " + strings.Join(out, " ")
}

// TestOTPRedactedCopy: a redacted copy of a damaged file OTP wrote gives
// the original's check --redacted verdict, is still refused by check, and
// holds none of the original's key or value texts.
func TestOTPRedactedCopy(t *testing.T) {
	erl := otptest.Erl(t)
	dir := t.TempDir()
	tab := filepath.Join(dir, "otp.dets")
	out := erl.Eval(t, `
Secret = fun(I) -> iolist_to_binary(io_lib:format("confidential-~6..0b", [I])) end,
{ok, T} = dets:open_file(otp_redact, [{file, binary_to_list(hd(In))}, {type, bag}]),
ok = dets:insert(T, [{Secret(I), binary_to_list(Secret(I + 1000000)), list_to_atom(binary_to_list(Secret(I + 2000000))),
                      #{Secret(I + 3000000) => I / 3}, I * 1000000000000} || I <- lists:seq(1, 500)]),
[ok = dets:delete(T, Secret(I)) || I <- lists:seq(1, 500, 5)],
ok = dets:close(T),
[Secret(I + J) || I <- lists:seq(2, 500, 5), J <- [0, 1000000, 2000000, 3000000]]`, []byte(tab))

	copySound := filepath.Join(dir, "sound-redacted.dets")
	must(t, "inspect", "--redact", "--out", copySound, tab)
	must(t, "check", "--redacted", copySound)
	if r := runDets(t, "check", copySound); r.code != exitCorrupt {
		t.Errorf("plain check of a redacted copy: exit %d (its keys hash to other slots)", r.code)
	}

	corruptBucket(t, tab)
	orig := runDets(t, "check", "--redacted", tab)
	if orig.code != exitCorrupt {
		t.Fatalf("check of the damaged original: exit %d, %s", orig.code, orig.stderr)
	}
	before := fileHash(t, tab)
	copyDamaged := filepath.Join(dir, "damaged-redacted.dets")
	r := must(t, "inspect", "--redact", "--out", copyDamaged, tab)
	if !strings.Contains(r.stdout, "redacted copy written to") {
		t.Errorf("inspect --redact --out: %q", r.stdout)
	}
	if fileHash(t, tab) != before {
		t.Fatal("inspect --redact changed the original")
	}
	red := runDets(t, "check", "--redacted", copyDamaged)
	t.Logf("verdict %s", problems(orig))
	if got, want := problems(red), problems(orig); got != want {
		t.Errorf("redacted copy: %s; original: %s", got, want)
	}
	if r := runDets(t, "check", copyDamaged); r.code != exitCorrupt {
		t.Errorf("plain check of the damaged copy: exit %d", r.code)
	}
	origBytes, err := os.ReadFile(tab)
	if err != nil {
		t.Fatal(err)
	}
	redBytes, err := os.ReadFile(copyDamaged)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("%d secrets", len(out))
	}
	for _, s := range out {
		if !bytes.Contains(origBytes, s) {
			t.Fatalf("the original lacks %q: the search proves nothing", s)
		}
		if bytes.Contains(redBytes, s) {
			t.Fatalf("the redacted copy contains %q", s)
		}
	}
	// Nor any text in it: the prefix of every secret is gone.
	if bytes.Contains(redBytes, []byte("confidential")) {
		t.Error("the redacted copy contains \"confidential\"")
	}
}

// TestInspectNative: inspect reads a native file as native (it used to
// print the bytes as an otp9 header), a node at a time, with --slot and
// --offset, and leaves the file as it was (TestInspectNativeRedact covers
// --redact).
func TestInspectNative(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "n.dets")
	makeTable(t, path, dets.Options{Format: dets.Native}, tup("alpha", []byte("first value")), tup("beta", 2))
	before := fileHash(t, path)
	r := must(t, "inspect", path)
	for _, want := range []string{"native format", `"NAT1"`, "superblock: sound", "valid, current", "parts (1)", "segments (1)",
		"free record:", "closed properly"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "cookie") {
		t.Errorf("inspect shows a native file as otp9:\n%s", r.stdout)
	}
	slot := largestObjectSlot(t, path)
	r = must(t, "inspect", "--slot", slot, path)
	for _, want := range []string{"slot " + slot + ": entry at", "hxh: checksum ok", "oxh: checksum ok", "version 131",
		`binary bytes "first value"`, `atom text "alpha"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect --slot lacks %q:\n%s", want, r.stdout)
		}
	}
	part := regexp.MustCompile(`parts \(1\):\n\s+0 at \d+\s+-> (\d+)`).FindStringSubmatch(must(t, "inspect", path).stdout)
	if part == nil {
		t.Fatal("inspect names no part")
	}
	for off, want := range map[string]string{"20": "in superblock", "4100": "in meta A", part[1]: "in part 0"} {
		if r := must(t, "inspect", "--offset", off, path); !strings.Contains(r.stdout, want) {
			t.Errorf("inspect --offset %s lacks %q:\n%s", off, want, r.stdout)
		}
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"inspect", "--offset", "99999999", path}, "beyond the end"},
		{[]string{"inspect", "--slot", "99999999", path}, "no such slot"},
	} {
		r := runDets(t, c.args...)
		r.want(t, exitError, c.args...)
		if !strings.Contains(r.stderr, c.msg) || strings.Count(r.stderr, path) != 1 {
			t.Errorf("dets %v: %q", c.args, r.stderr)
		}
	}
	if fileHash(t, path) != before {
		t.Error("inspect changed the file")
	}
}
