package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// bagObjects are objects of a bag keyed on position 2, several per key.
func bagObjects(n int) []etf.Term {
	var objs []etf.Term
	for i := range n {
		objs = append(objs, tup(i, fmt.Sprintf("key%d", i%7), []byte("payload")))
	}
	return objs
}

// zeroHeader overwrites the first n bytes of path with zeros.
func zeroHeader(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[:n])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file whose whole header (312 bytes) is zeroed is refused with exit 4 and
// left alone; with --kind and --keypos it is rebuilt and every object
// survives.
func TestRepairDestroyedHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	objs := bagObjects(60)
	makeTable(t, path, dets.Options{Kind: dets.Bag, KeyPos: 2}, objs...)
	zeroHeader(t, path, 312)
	before := fileHash(t, path)

	for _, args := range [][]string{
		{"repair", path},
		{"repair", "--repair", "auto", path},
		{"repair", "--kind", "bag", path}, // --keypos missing
		{"check", path},
	} {
		r := runDets(t, args...)
		r.want(t, exitNotDETS, args...)
		if args[0] == "repair" && !strings.Contains(r.stderr, "--kind and --keypos") {
			t.Errorf("dets %v: no hint about --kind/--keypos: %q", args, r.stderr)
		}
		if fileHash(t, path) != before {
			t.Fatalf("dets %v changed the file", args)
		}
	}
	if _, err := os.Stat(path + ".TMP"); err == nil {
		t.Error("a refused repair left a temporary file")
	}

	// Busy: refused before the backup is made or the file touched.
	backup := filepath.Join(dir, "t.bak")
	release := holdLock(t, path)
	r := runDets(t, "repair", "--kind", "bag", "--keypos", "2", "--backup", backup, path)
	r.want(t, exitBusy, "repair while locked")
	release()
	if _, err := os.Lstat(backup); err == nil {
		t.Error("a busy repair made a backup")
	}
	if fileHash(t, path) != before {
		t.Fatal("a busy repair changed the file")
	}

	r = must(t, "repair", "--kind", "bag", "--keypos", "2", "--backup", backup, path)
	if !strings.Contains(r.stdout, "repaired (force): 60 objects, 7 keys") {
		t.Errorf("repair output: %q", r.stdout)
	}
	if fileHash(t, backup) != before {
		t.Error("the backup is not the file before the repair")
	}
	sameMultiset(t, readAll(t, path), objs)
	r = must(t, "info", path)
	if !strings.Contains(r.stdout, "kind:            bag") || !strings.Contains(r.stdout, "keypos:          2") {
		t.Errorf("info after repair:\n%s", r.stdout)
	}
	must(t, "check", path)

	// --repair auto with --kind/--keypos also rebuilds a destroyed header.
	zeroHeader(t, path, 312)
	must(t, "repair", "--repair", "auto", "--kind", "bag", "--keypos", "2", path)
	sameMultiset(t, readAll(t, path), objs)

	// On a sound header, --kind and --keypos must match it.
	sound := fileHash(t, path)
	for _, args := range [][]string{
		{"repair", "--kind", "set", "--keypos", "2", path},
		{"repair", "--kind", "bag", "--keypos", "1", path},
	} {
		r := runDets(t, args...)
		r.want(t, exitError, args...)
		if !strings.Contains(r.stderr, "mismatch") {
			t.Errorf("dets %v: %q", args, r.stderr)
		}
		if fileHash(t, path) != sound {
			t.Fatalf("dets %v changed the file", args)
		}
	}

	// Bytes that hold no object are not turned into an empty table.
	junk := filepath.Join(dir, "junk.dets")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("not a table "), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	junkHash := fileHash(t, junk)
	r = runDets(t, "repair", "--kind", "set", "--keypos", "1", junk)
	r.want(t, exitNotDETS, "repair junk")
	if fileHash(t, junk) != junkHash {
		t.Fatal("repair changed a file that is not a table")
	}

	for _, args := range [][]string{
		{"repair", "--kind", "hash", path},
		{"repair", "--keypos", "0", path},
	} {
		runDets(t, args...).want(t, exitError, args...)
	}
}

var summaryRE = regexp.MustCompile(`repaired \(force\): (\d+) objects, (\d+) keys\n.*scan found (\d+) whole objects, dropped (\d+) damaged objects, kept part of (\d+) buckets\n`)

// The summary prints the engine's repair statistics.
func TestRepairSummary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	objs := append(bagObjects(5), tup(9, "other", []byte("x")))
	makeTable(t, path, dets.Options{Kind: dets.Bag, KeyPos: 2}, objs...)
	// Damage one object's encoding inside a bucket.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const base = 1336
	i := bytes.Index(b[base:], []byte{131, 104, 3})
	if i < 0 {
		t.Fatal("no object found")
	}
	b[base+i+5] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// What the engine reports for the same bytes.
	cp := filepath.Join(dir, "copy.dets")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := dets.Repair(cp, dets.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.ObjectsDropped == 0 {
		t.Fatalf("the damage dropped nothing: %+v", want)
	}

	r := must(t, "repair", path)
	m := summaryRE.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no summary in %q", r.stdout)
	}
	got := make([]int64, 5)
	for i := range got {
		got[i], _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	if exp := []int64{want.Objects, want.Keys, want.ObjectsFound, want.ObjectsDropped, want.BucketsPartial}; fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Errorf("summary %v, engine says %v", got, exp)
	}
	if n := int64(len(readAll(t, path))); n != got[0] {
		t.Errorf("summary says %d objects, the file holds %d", got[0], n)
	}
}

// --backup through a symlink copies the data file, not the link, and the
// repair replaces the data file while the link stays a link.
func TestRepairBackupOfSymlink(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(data, "real.dets")
	makeDirty(t, real, []etf.Term{tup("a", 1)}, []etf.Term{tup("b", 2)})
	dirty, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.dets")
	if err := os.Symlink(filepath.Join("data", "real.dets"), link); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.dets")
	r := must(t, "repair", "--backup", backup, link)
	if !strings.Contains(r.stdout, "repaired") {
		t.Errorf("repair output: %q", r.stdout)
	}
	st, err := os.Lstat(backup)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("backup is not a regular file: %v %v", st.Mode(), err)
	}
	got, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, dirty) {
		t.Error("the backup is not a copy of the data file before the repair")
	}
	if tgt, err := os.Readlink(link); err != nil || tgt != filepath.Join("data", "real.dets") {
		t.Errorf("the link was replaced: %q %v", tgt, err)
	}
	sameMultiset(t, readAll(t, real), []etf.Term{tup("a", 1), tup("b", 2)})
	must(t, "check", link)

	// A backup path that is the data file under another name is refused.
	r = runDets(t, "repair", "--backup", real, link)
	r.want(t, exitError, "repair --backup real link")
}

// On a terminal, repair draws its progress on stderr and clears it.
func TestRepairProgressBar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	makeTable(t, path, dets.Options{}, bagObjects(500)...)
	var out, errb bytes.Buffer
	code := run([]string{"repair", path}, env{stdout: &out, stderr: &errb, stderrTTY: true})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := errb.String()
	for _, want := range []string{"\rrepair: scanning bytes ", "\rrepair: writing objects ", "100%", "500/500"} {
		if !strings.Contains(s, want) {
			t.Errorf("progress output lacks %q: %q", want, s)
		}
	}
	if !strings.HasSuffix(s, "\x1b[2K\r") {
		t.Errorf("the bar is not cleared at the end: %q", s)
	}
	if !strings.Contains(out.String(), "repaired (force): 500 objects") {
		t.Errorf("stdout: %q", out.String())
	}
}

// dets help lists every exit code, and repair's help its new flags.
func TestHelpExitCodesAndRepairFlags(t *testing.T) {
	r := must(t, "help")
	for _, line := range []string{"0  ok", "1  usage", "2  needs repair", "3  corrupt", "4  not a DETS file", "5  lock busy"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("dets help lacks exit code line %q", line)
		}
	}
	r = must(t, "repair", "--help")
	for _, s := range []string{"--kind", "--keypos", "--backup", "symbolic link", "exit 4"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("repair --help does not mention %q", s)
		}
	}
}
