package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// queryTable makes a set of users {Name, Age, Role} for the query tests.
func queryTableCLI(t *testing.T, opts dets.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.dets")
	makeTable(t, path, opts,
		tup("ann", 34, "admin"), tup("bob", 25, "user"), tup("cy", 41, "user"), tup("dee", 29, "admin"))
	return path
}

// sortedLines returns the lines of out, sorted (queries go in traversal
// order, which is not sorted).
func sortedLines(out string) []string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

func wantLines(t *testing.T, r result, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := sortedLines(r.stdout); !slices.Equal(got, want) {
		t.Fatalf("stdout lines %q, want %q", got, want)
	}
}

func TestSelectCommand(t *testing.T) {
	path := queryTableCLI(t, dets.Options{})
	wantLines(t, must(t, "select", path, "[{{'$1', '$2', '_'}, [], [{{'$1'}}]}]"), "{ann}.", "{bob}.", "{cy}.", "{dee}.")
	wantLines(t, must(t, "select", path, "[{{'$1', '_', admin}, [], ['$1']}]"), "ann.", "dee.")
	wantLines(t, must(t, "select", "--count", path, "[{{'_', '_', user}, [], [true]}]"), "2")
	wantLines(t, must(t, "select", path, "[{{bob, '_', '_'}, [], ['$_']}]"), "{bob,25,user}.")
	wantLines(t, must(t, "select", "--format", "json", path, "[{{'$1', '_', admin}, [], ['$1']}]"),
		`{"atom":"ann"}`, `{"atom":"dee"}`)
	wantLines(t, must(t, "select", path, "[{{nobody, '_', '_'}, [], ['$_']}]"))
	// The output reads back with file:consult/1 syntax.
	r := must(t, "select", path, "[{{'_', '_', '_'}, [], ['$_']}]")
	objs, err := etf.ParseAll(r.stdout)
	if err != nil || len(objs) != 4 {
		t.Fatalf("select output does not read back as 4 terms: %v, %v", objs, err)
	}
}

func TestSelectDeleteCommand(t *testing.T) {
	path := queryTableCLI(t, dets.Options{})
	r := must(t, "select", "--delete", path, "[{{'_', '_', user}, [], [true]}]")
	if r.stdout != "" || r.stderr != "deleted 2 objects\n" {
		t.Fatalf("select --delete: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	wantLines(t, must(t, "match", "--object", path, "'_'"), "{ann,34,admin}.", "{dee,29,admin}.")
	r = must(t, "select", "--delete", "--count", path, "[{{ann, '_', '_'}, [], [true]}]")
	if r.stdout != "1\n" || r.stderr != "" {
		t.Fatalf("select --delete --count: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	wantLines(t, must(t, "dump", path), "{dee,29,admin}.")
	r = must(t, "select", "--delete", "--format", "json", path, "[{{'_', '_', admin}, [], [true]}]")
	if r.stdout != "" || r.stderr != "{\"deleted\":1}\n" {
		t.Fatalf("select --delete --format json: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	wantLines(t, must(t, "dump", path))
	must(t, "check", path)
}

func TestMatchCommand(t *testing.T) {
	path := queryTableCLI(t, dets.Options{Kind: dets.Bag})
	wantLines(t, must(t, "match", path, "{'$1', '$2', admin}"), "[ann,34].", "[dee,29].")
	wantLines(t, must(t, "match", path, "{'$2', '_', '$1'}"), "[admin,ann].", "[user,bob].", "[user,cy].", "[admin,dee].")
	wantLines(t, must(t, "match", "--object", path, "{'_', 25, '_'}"), "{bob,25,user}.")
	wantLines(t, must(t, "match", "--count", path, "{'_', '_', admin}"), "2")
	wantLines(t, must(t, "match", "--format", "json", path, "{cy, '$1', '$2'}"), `[41,{"atom":"user"}]`)
	wantLines(t, must(t, "match", "--object", "--format", "json", path, "{cy, '_', '_'}"),
		`{"tuple":[{"atom":"cy"},41,{"atom":"user"}]}`)
}

// TestQueryCommandErrors: a query that does not parse or compile exits 1
// with one line naming the argument and where it went wrong, and opens no
// table; a refused write leaves the file as it was.
func TestQueryCommandErrors(t *testing.T) {
	path := queryTableCLI(t, dets.Options{})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"select", path, "[{{'$1'}, [], ['$1']}"}, "MATCHSPEC: syntax error at line 1, column"},
		{[]string{"select", path, "not_a_spec"}, "MATCHSPEC: "},
		{[]string{"select", "--delete", path, "[{'_', [], []}]"}, "MATCHSPEC: "},
		{[]string{"match", path, "{a, "}, "PATTERN: syntax error at line 1, column"},
		{[]string{"select", path}, "missing FILE and MATCHSPEC"},
		{[]string{"match", path, "'_'", "extra"}, "unexpected argument"},
		{[]string{"select", "--format", "xml", path, "[]"}, "--format must be erlang or json"},
		{[]string{"match", filepath.Join(t.TempDir(), "none.dets"), "'_'"}, "no such file"},
	} {
		r := runDets(t, c.args...)
		r.want(t, exitError, c.args...)
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dets %v: stderr %q does not contain %q", c.args, r.stderr, c.msg)
		}
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Fatal("a failed query changed the file")
	}
	// With --format json the failure is a JSON line too.
	r := runDets(t, "select", "--format", "json", path, "[{")
	r.want(t, exitError)
	if !strings.HasPrefix(r.stderr, `{"error":{"command":"select","code":"usage"`) {
		t.Fatalf("JSON error report: %q", r.stderr)
	}
}

func TestQueryCommandHelp(t *testing.T) {
	top := must(t, "help").stdout
	for _, name := range []string{"select", "match"} {
		if !strings.Contains(top, "  "+name+" ") {
			t.Errorf("dets help does not list %s", name)
		}
		r := must(t, name, "--help")
		if !strings.HasPrefix(r.stdout, "usage: dets "+name) || !strings.Contains(r.stdout, "Examples:\n  dets "+name) {
			t.Errorf("dets %s --help lacks the usage line or examples:\n%s", name, r.stdout)
		}
		for _, flag := range []string{"--count", "--format"} {
			if !strings.Contains(r.stdout, flag) {
				t.Errorf("dets %s --help does not document %s", name, flag)
			}
		}
	}
}

// TestQueryCommandBusy: a query runs inside the table's exclusive
// session: it exits 5 while another process holds the lock, and runs once
// it is released.
func TestQueryCommandBusy(t *testing.T) {
	path := queryTableCLI(t, dets.Options{})
	release := holdLock(t, path)
	for _, args := range [][]string{
		{"select", path, "[{'_', [], [true]}]"},
		{"select", "--delete", "--wait", "50ms", path, "[{'_', [], [true]}]"},
		{"match", "--object", path, "'_'"},
	} {
		runDets(t, args...).want(t, exitBusy, args...)
	}
	release()
	wantLines(t, must(t, "match", "--count", "--wait", "1s", path, "'_'"), "4")
}
