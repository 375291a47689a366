package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

func TestGetKeysStats(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{Kind: dets.Bag}, tup("a", 1), tup("a", 2), tup(etf.Tuple{etf.Atom("k"), etf.Int(1)}, []byte("v")))
	r := must(t, "get", path, "a.")
	if got, err := etf.ParseAll(r.stdout); err != nil || len(got) != 2 {
		t.Errorf("get a: %q (%v)", r.stdout, err)
	}
	r = must(t, "get", "--format", "json", path, "{k, 1}")
	var v any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !strings.Contains(r.stdout, `{"binary":"v"}`) {
		t.Errorf("get --format json: %q (%v)", r.stdout, err)
	}
	if r := must(t, "keys", path); strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("keys: %q", r.stdout)
	}
	if r := must(t, "keys", "--count", path); r.stdout != "2\n" {
		t.Errorf("keys --count: %q", r.stdout)
	}
	if r := must(t, "keys", "--format", "json", path); !strings.Contains(r.stdout, `{"atom":"a"}`) {
		t.Errorf("keys --format json: %q", r.stdout)
	}
	var st statsJSON
	if err := json.Unmarshal([]byte(must(t, "stats", "--json", path).stdout), &st); err != nil || st.Objects != 3 || st.Keys != 2 {
		t.Errorf("stats --json: %+v (%v)", st, err)
	}
	// A terminal gets bars, a pipe none.
	if r := must(t, "stats", path); strings.Contains(r.stdout, "█") {
		t.Errorf("stats drew bars into a pipe")
	}
	var out, errb strings.Builder
	if code := run([]string{"stats", path}, env{stdout: &out, stderr: &errb, stdoutTTY: true}); code != 0 || !strings.Contains(out.String(), "█") {
		t.Errorf("stats on a terminal: exit %d, %q", code, out.String())
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"get", path}, "missing FILE and KEY"},
		{[]string{"get", path, "{unclosed"}, "KEY is not an Erlang term"},
		{[]string{"get", "--format", "xml", path, "a"}, "--format must be erlang or json"},
		{[]string{"get", path, "b"}, "not found"},
		{[]string{"keys", "--format", "xml", path}, "--format must be erlang or json"},
		{[]string{"stats", path, path}, "unexpected argument"},
		{[]string{"compact", "--repair", "auto", path}, "--repair must be no"},
	} {
		r := runDets(t, c.args...)
		r.want(t, exitError, c.args...)
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dets %v: %q", c.args, r.stderr)
		}
	}
	before := fileHash(t, path)
	release := holdLock(t, path)
	for _, args := range [][]string{{"get", path, "a"}, {"keys", path}, {"stats", path}, {"compact", path}, {"compact", "--dry-run", path}, {"inspect", path}, {"lock", path, "--", "true"}} {
		r := runDets(t, args...)
		r.want(t, exitBusy, args...)
		if !strings.Contains(r.stderr, "busy") {
			t.Errorf("dets %v: %q", args, r.stderr)
		}
	}
	release()
	if fileHash(t, path) != before {
		t.Error("a refused command changed the table")
	}
}
