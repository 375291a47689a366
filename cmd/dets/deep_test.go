package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/internal/otptest"
)

// TestDeepTermsCLI: a table OTP wrote with objects nested deeper than
// etf.MaxDepth is sound to `dets check`, which says how many such objects
// it holds; `dets repair` keeps them; `dets get` of one fails with a clear
// line; and a repair that meets a key that deep refuses and leaves the
// file as it was (it cannot place the object, and dropping it would lose
// it).
func TestDeepTermsCLI(t *testing.T) {
	erl := otptest.Erl(t)
	dir := t.TempDir()
	deep, deepKey := filepath.Join(dir, "deep.dets"), filepath.Join(dir, "deepkey.dets")
	erl.Eval(t, `
Deep = fun Deep(0, A) -> A; Deep(N, A) -> Deep(N - 1, [A]) end,
[F, FK] = In,
Write = fun(Path, Objs) ->
    {ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(Path)}]),
    ok = dets:insert(T, Objs),
    ok = dets:close(T)
end,
Objs = [{<<"deep">>, Deep(20000, x)} | [{I, I} || I <- lists:seq(1, 50)]],
Write(F, Objs),
Write(FK, [{Deep(15000, k), 1} | Objs]),
[]`, []byte(deep), []byte(deepKey))

	r := runDets(t, "check", deep)
	r.want(t, exitOK, "check")
	if !strings.Contains(r.stdout, "ok (51 objects)") || !strings.Contains(r.stdout, "1 object nested deeper than 10000 levels") {
		t.Fatalf("check printed %q", r.stdout)
	}
	r = runDets(t, "repair", deep)
	r.want(t, exitOK, "repair")
	if !strings.Contains(r.stdout, "scan found 51 whole objects, dropped 0") {
		t.Fatalf("repair printed %q", r.stdout)
	}
	runDets(t, "check", deep).want(t, exitOK, "check after repair")
	r = runDets(t, "get", deep, `<<"deep">>`)
	r.want(t, exitError, "get of the deep object")
	if !strings.Contains(r.stderr, "nested deeper than 10000 levels") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("get printed %q", r.stderr)
	}

	before, err := os.ReadFile(deepKey)
	if err != nil {
		t.Fatal(err)
	}
	r = runDets(t, "check", deepKey)
	r.want(t, exitOK, "check of the deep key")
	r = runDets(t, "repair", deepKey)
	r.want(t, exitError, "repair of the deep key")
	if !strings.Contains(r.stderr, "cannot be read or hashed") {
		t.Fatalf("repair printed %q", r.stderr)
	}
	if after, err := os.ReadFile(deepKey); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the refused repair changed the file (%v)", err)
	}
}
