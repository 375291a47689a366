package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
)

// A command whose output cannot be written fails: exit 1 and "writing
// output" on stderr. digest, info, stats, check, version and help printed
// their one result unchecked, so `dets digest a.dets > a.digest` on a
// full disk exited 0 and left the file empty.
func TestOutputWriteFailureFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here:", err)
	}
	defer full.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{}, tup(1, []byte("one")), tup(2, []byte("two")))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	load := filepath.Join(dir, "load.txt")
	if err := os.WriteFile(load, []byte("{3, <<\"three\">>}.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"digest", path}, {"info", path}, {"info", "--json", path}, {"stats", path},
		{"check", path}, {"version"}, {"help"}, {"help", "digest"}, {"digest", "--help"},
		{"dump", path}, {"keys", path}, {"get", path, "1"},
		{"compact", "--dry-run", path}, {"load", filepath.Join(dir, "new.dets"), load},
	} {
		cmd := exec.Command(detsBin, args...)
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &errb
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitError || !strings.Contains(errb.String(), "writing output") {
			t.Errorf("dets %v > /dev/full: %v, stderr %q; want exit 1 and 'writing output'", args, err, errb.String())
		}
		if strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("dets %v: the message is not one line: %q", args, errb.String())
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the table changed (%v)", err)
	}
}

// TestPathWithNewlineStaysOneLine: a path holding a newline (or another
// control character) is printed quoted on stdout, so each report is the
// line scripts read (each starting with the path); the commands still
// find the file. It was printed as it is and split the line.
func TestPathWithNewlineStaysOneLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a\nb.dets")
	makeTable(t, path, dets.Options{}, tup("a", 1))
	quoted := strconv.Quote(path)
	for _, args := range [][]string{{"check", path}, {"compact", "--dry-run", path}, {"repair", path}} {
		out := must(t, args...).stdout
		for _, line := range strings.SplitAfter(strings.TrimSuffix(out, "\n"), "\n") {
			if !strings.HasPrefix(line, quoted+": ") {
				t.Errorf("%s: line %q of %q, want each line to start with %s", args[0], line, out, quoted)
			}
		}
	}
	if out := must(t, "info", path).stdout; !strings.Contains(out, quoted+"\n") {
		t.Errorf("info: %q, want the file row %s", out, quoted)
	}
	if got := shown("plain/path.dets"); got != "plain/path.dets" {
		t.Errorf("shown changed a plain path: %q", got)
	}
}
