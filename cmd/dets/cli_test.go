package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var allCommands = []string{"info", "check", "get", "keys", "stats", "repair", "dump", "select", "match", "load", "digest", "compact", "lock", "completion", "demo", "convert"}

func TestHelp(t *testing.T) {
	r := must(t, "help")
	for _, c := range append(allCommands, "Exit codes", "--wait", "--repair") {
		if !strings.Contains(r.stdout, c) {
			t.Errorf("dets help does not mention %q", c)
		}
	}
	if strings.Contains(r.stdout, "__demo-writer") {
		t.Error("dets help lists the hidden demo writer")
	}
	for _, c := range allCommands {
		for _, form := range [][]string{{c, "--help"}, {c, "-h"}, {"help", c}} {
			r := must(t, form...)
			if !strings.HasPrefix(r.stdout, "usage: dets "+c) {
				t.Errorf("dets %v: help does not start with the usage line: %q", form, firstLine(r.stdout))
			}
			if !strings.Contains(r.stdout, "Examples:\n  dets "+c) && !strings.Contains(r.stdout, "Examples:\n") {
				t.Errorf("dets %v: no examples", form)
			}
		}
	}
	// dump documents its JSON mapping.
	r = must(t, "dump", "--help")
	for _, s := range []string{`{"atom":`, `{"tuple":`, `{"float":`, `{"binary":`, `{"map":`, `{"etf":`} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("dump --help does not document %s", s)
		}
	}
	// No arguments at all: the overview on stderr, exit 1.
	r = runDets(t)
	if r.code != 1 || !strings.Contains(r.stderr, "Commands:") {
		t.Errorf("dets with no arguments: exit %d, stderr %q", r.code, firstLine(r.stderr))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tab := filepath.Join(dir, "t.dets")
	makeTable(t, tab, dets.Options{}, tup("a", 1))
	cases := []struct {
		args []string
		msg  string // part of the error line
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command`},
		{[]string{"info", "--bogus", tab}, "flag provided but not defined: --bogus"},
		{[]string{"info"}, "missing FILE"},
		{[]string{"info", tab, tab}, "unexpected argument"},
		{[]string{"check", "--repair", "auto", tab}, "--repair must be no"},
		{[]string{"info", "--repair", "sometimes", tab}, "--repair must be no, auto or force"},
		{[]string{"info", "--wait", "-1s", tab}, "--wait must not be negative"},
		{[]string{"info", "--wait", "soon", tab}, "invalid value"},
		{[]string{"repair", "--repair", "no", tab}, "would do nothing"},
		{[]string{"dump", "--format", "xml", tab}, "--format must be erlang or json"},
		{[]string{"load", "--kind", "tree", tab}, "--kind must be"},
		{[]string{"load", "--keypos", "0", tab}, "--keypos must be 1 or more"},
		{[]string{"load", "--format", "v8", tab}, "--format must be otp9 or native"},
		{[]string{"demo", "extra"}, "unexpected argument"},
		{[]string{"convert", "--to", "v8", tab, tab + ".n"}, "--to must be otp9 or native"},
		{[]string{"convert", "--to", "native", tab}, "missing SRC DST"},
		{[]string{"convert", "--to", "native", tab, tab}, "already exists"},
	}
	for _, c := range cases {
		r := runDets(t, c.args...)
		r.want(t, exitError, c.args...)
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dets %v: stderr %q does not contain %q", c.args, r.stderr, c.msg)
		}
	}
	if _, err := os.Stat(tab + ".n"); err == nil {
		t.Error("convert created its destination")
	}
}

// TestBadFiles runs every file-reading command on files that are not
// usable tables.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dets")
	var objs []etf.Term
	for i := range 200 {
		objs = append(objs, tup(i, []byte("some value to take up space")))
	}
	makeTable(t, good, dets.Options{}, objs...)
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	subdir := filepath.Join(dir, "subdir")
	if err := os.Mkdir(subdir, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		code int
		msg  string
	}{
		{"missing", filepath.Join(dir, "missing.dets"), exitError, "no such file"},
		{"directory", subdir, exitError, "is a directory"},
		{"garbage", write("garbage.dets", garbage), exitNotDETS, "not a dets file"},
		{"empty", write("empty.dets", nil), exitNotDETS, "not a dets file"},
		// OTP: a file shorter than its header is not a DETS file.
		{"truncated header", write("short.dets", goodBytes[:100]), exitNotDETS, "not a dets file"},
		// OTP: a good header whose free lists and trailer are gone reads as
		// not closed properly (needs repair).
		{"truncated tail", write("cut.dets", goodBytes[:len(goodBytes)*2/3]), exitNeedsRepair, "not closed properly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before [32]byte
			regular := false
			if st, err := os.Stat(c.path); err == nil && st.Mode().IsRegular() {
				regular = true
				before = fileHash(t, c.path)
			}
			for _, cmd := range []string{"info", "check", "dump", "digest", "repair", "get", "keys", "stats", "compact"} {
				if cmd == "repair" && c.code == exitNeedsRepair {
					continue // repairing it is the right thing; tested elsewhere
				}
				args := []string{cmd, c.path}
				if cmd == "get" {
					args = append(args, "1")
				}
				r := runDets(t, args...)
				r.want(t, c.code, cmd, c.path)
				if !strings.Contains(strings.ToLower(r.stderr), c.msg) {
					t.Errorf("dets %s: stderr %q does not contain %q", cmd, r.stderr, c.msg)
				}
			}
			if regular && fileHash(t, c.path) != before {
				t.Error("a failing command modified the file")
			}
			if _, err := os.Stat(filepath.Join(dir, "missing.dets")); err == nil {
				t.Error("a command created the missing file")
			}
		})
	}
}
