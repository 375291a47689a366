package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{Kind: dets.Bag, KeyPos: 2},
		tup("x", "a", 1), tup("y", "a", 2), tup("z", "b", 3))
	r := must(t, "info", path)
	for _, want := range []string{"kind:            bag", "keypos:          2", "objects:         3",
		"keys:            2", "format:          otp9", "closed properly: yes"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info output lacks %q:\n%s", want, r.stdout)
		}
	}

	// Flags may follow the file name.
	r = must(t, "info", path, "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("info --json is not JSON: %v\n%s", err, r.stdout)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"file": path, "format": "otp9", "version": 9.0, "kind": "bag", "keypos": 2.0,
		"objects": 3.0, "keys": 2.0, "file_size": float64(st.Size()), "closed_properly": true,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("info --json: %s = %v, want %v", k, got[k], v)
		}
	}
	slots, _ := got["slots"].(map[string]any)
	if slots == nil || slots["min"] != 256.0 || slots["current"] == nil || slots["max"] == nil {
		t.Errorf("info --json: slots = %v", got["slots"])
	}

	// A dirty file: still a summary, with the verdict, and exit 2.
	dirty := filepath.Join(dir, "dirty.dets")
	makeDirty(t, dirty, []etf.Term{tup("a", 1)}, []etf.Term{tup("b", 2)})
	before := fileHash(t, dirty)
	r = runDets(t, "info", dirty)
	r.want(t, exitNeedsRepair, "info", dirty)
	if !strings.Contains(r.stdout, "closed properly: no") {
		t.Errorf("info of a dirty file:\n%s", r.stdout)
	}
	r = runDets(t, "info", "--json", dirty)
	r.want(t, exitNeedsRepair, "info --json", dirty)
	got = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got["closed_properly"] != false {
		t.Errorf("info --json of a dirty file: %v %s", err, r.stdout)
	}
	if fileHash(t, dirty) != before {
		t.Error("info modified a dirty file")
	}
	// --repair auto repairs it first.
	r = must(t, "info", "--repair", "auto", dirty)
	if !strings.Contains(r.stdout, "objects:         2") || !strings.Contains(r.stdout, "closed properly: yes") {
		t.Errorf("info --repair auto:\n%s", r.stdout)
	}
}

// corruptBucket damages the status word of the first active bucket after
// the header and segment area, which check must notice.
func corruptBucket(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	magic := binary.BigEndian.AppendUint32(nil, 0x12345678)
	const base = 1336
	i := bytes.Index(b[base:], magic)
	if i < 0 {
		t.Fatal("no active bucket found")
	}
	copy(b[base+i:], []byte{0xde, 0xad, 0xbe, 0xef})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	var objs []etf.Term
	for i := range 50 {
		objs = append(objs, tup(i, []byte("value")))
	}
	makeTable(t, path, dets.Options{}, objs...)
	r := must(t, "check", path)
	if !strings.Contains(r.stdout, "ok (50 objects)") {
		t.Errorf("check: %q", r.stdout)
	}

	dirty := filepath.Join(dir, "dirty.dets")
	makeDirty(t, dirty, objs[:10], objs[10:20])
	before := fileHash(t, dirty)
	r = runDets(t, "check", dirty)
	r.want(t, exitNeedsRepair, "check", dirty)
	if !strings.Contains(r.stderr, "not closed properly (run 'dets repair ") {
		t.Errorf("check of a dirty file: %q", r.stderr)
	}
	if fileHash(t, dirty) != before {
		t.Fatal("check modified a dirty file")
	}

	corrupt := filepath.Join(dir, "corrupt.dets")
	makeTable(t, corrupt, dets.Options{}, objs...)
	corruptBucket(t, corrupt)
	before = fileHash(t, corrupt)
	r = runDets(t, "check", corrupt)
	r.want(t, exitCorrupt, "check", corrupt)
	if !strings.Contains(r.stderr, "damage") {
		t.Errorf("check of a corrupt file: %q", r.stderr)
	}
	if fileHash(t, corrupt) != before {
		t.Fatal("check modified a corrupt file")
	}
	// repair rebuilds it from what it can read; check is then happy.
	must(t, "repair", corrupt)
	must(t, "check", corrupt)
}

func TestRepair(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	clean := []etf.Term{tup("a", 1), tup("b", 2), tup("c", 3)}
	later := []etf.Term{tup("d", 4), tup("a", 10)}
	makeDirty(t, path, clean, later)
	dirtyBytes, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "t.bak")
	r := must(t, "repair", "--backup", backup, path)
	if !strings.Contains(r.stdout, "repaired") {
		t.Errorf("repair output: %q", r.stdout)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, dirtyBytes) {
		t.Error("the backup is not a copy of the file before the repair")
	}
	must(t, "check", path)
	// Every write reached the file before the "crash" (the engine writes
	// through), so everything survives; a set keeps the newest {a, _}.
	sameMultiset(t, readAll(t, path), []etf.Term{tup("a", 10), tup("b", 2), tup("c", 3), tup("d", 4)})

	// An existing backup is never overwritten, and nothing is repaired.
	makeDirty(t, path, clean, later)
	before, beforeBackup := fileHash(t, path), fileHash(t, backup)
	r = runDets(t, "repair", "--backup", backup, path)
	r.want(t, exitError, "repair --backup existing")
	if !strings.Contains(r.stderr, "already exists") {
		t.Errorf("repair over an existing backup: %q", r.stderr)
	}
	if fileHash(t, path) != before || fileHash(t, backup) != beforeBackup {
		t.Error("repair with an existing backup changed a file")
	}

	// --repair auto leaves a sound file alone.
	must(t, "repair", path) // force
	sound := fileHash(t, path)
	r = must(t, "repair", "--repair", "auto", path)
	if fileHash(t, path) != sound {
		t.Error("repair --repair auto changed a sound file")
	}
	if !strings.Contains(r.stdout, "nothing to repair") {
		t.Errorf("repair --repair auto of a sound file: %q", r.stdout)
	}
}

// sampleObjects covers every term type that Erlang text can express.
func sampleObjects() []etf.Term {
	big1, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	big2 := new(big.Int).Neg(big1)
	return []etf.Term{
		tup("atom", "ok"),
		tup("quoted", etf.Atom("hello world"), etf.Atom("Caps"), etf.Atom(""), etf.Atom("it's")),
		tup("unicode_atom", etf.Atom("λx")),
		tup("ints", 0, -1, 255, 256, -2147483648, 2147483647, etf.Int(-1<<63), etf.Int(1<<63-1)),
		tup("bigs", etf.NewBigInt(big1), etf.NewBigInt(big2)),
		tup("floats", etf.Float(0.1), etf.Float(-2.5e-300), etf.Float(1e300), etf.Float(3.0), etf.Float(0)),
		tup("binaries", []byte{}, []byte("text"), []byte{0, 1, 255, '"', '\\'}),
		tup("bits", etf.Bitstring{Bytes: []byte{0xA0}, Bits: 3}),
		tup("strings", etf.Str("hello\n\"world\""), etf.Str("λ→"), etf.List{}),
		tup("lists", etf.List{etf.Int(1), etf.Atom("two"), etf.List{etf.Int(3)}}),
		tup("improper", etf.NewImproperList(etf.Atom("tail"), etf.Int(1), etf.Int(2))),
		tup("tuples", etf.Tuple{}, etf.Tuple{etf.Tuple{etf.Int(1)}}),
		tup("maps", etf.Map{}, etf.Map{{Key: etf.Atom("k"), Value: etf.Int(1)}, {Key: etf.Str("s"), Value: etf.Map{}}}),
		tup(1, 2),
		tup([]byte("binary key"), "v"),
	}
}

func TestDumpLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.dets")
	objs := sampleObjects()
	makeTable(t, src, dets.Options{Kind: dets.DuplicateBag}, append(objs, objs[0], objs[3])...)
	want := readAll(t, src)
	if len(want) != len(objs)+2 {
		t.Fatalf("source table has %d objects", len(want))
	}

	dump := must(t, "dump", src)
	if n := strings.Count(dump.stdout, ".\n"); n < len(want) {
		t.Errorf("dump has %d lines, want %d", n, len(want))
	}
	dst := filepath.Join(dir, "dst.dets")
	r := runDetsIn(t, []byte(dump.stdout), "load", "--kind", "duplicate_bag", dst)
	r.want(t, 0, "load")
	if !strings.Contains(r.stdout, "loaded 17 objects") {
		t.Errorf("load output: %q", r.stdout)
	}
	sameMultiset(t, readAll(t, dst), want)
	if a, b := must(t, "digest", src).stdout, must(t, "digest", dst).stdout; a != b {
		t.Errorf("digest differs after dump and load: %s vs %s", a, b)
	}

	js := must(t, "dump", "--format", "json", src)
	lines := strings.Split(strings.TrimSuffix(js.stdout, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("json dump has %d lines, want %d", len(lines), len(want))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) || !strings.HasPrefix(l, `{"tuple":[`) {
			t.Errorf("json dump line is not a JSON tuple: %s", l)
		}
	}
	if !strings.Contains(js.stdout, `{"tuple":[{"atom":"atom"},{"atom":"ok"}]}`+"\n") {
		t.Errorf("json dump lacks {atom, ok} in the documented form:\n%s", js.stdout)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.terms")
	text := "% a comment\n{k1, a, 1}.\n{k2, a, 2}.\n\n{k3, b,\n  3}.\n"
	if err := os.WriteFile(input, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.dets")
	must(t, "load", "--kind", "bag", "--keypos", "2", path, input)
	r := must(t, "info", "--json", path)
	var info map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info["kind"] != "bag" || info["keypos"] != 2.0 || info["objects"] != 3.0 || info["keys"] != 2.0 {
		t.Errorf("after load: %s", r.stdout)
	}

	// Extending keeps the file's kind and keypos when no flags are given.
	r = runDetsIn(t, []byte("{k4, a, 4}.\n{k1, a, 1}.\n"), "load", path)
	r.want(t, 0, "load extend")
	if !strings.Contains(r.stdout, "now holds 4 objects") {
		t.Errorf("extend: %q", r.stdout)
	}

	before := fileHash(t, path)
	bad := []struct {
		name, text string
		args       []string
		msg        string
	}{
		{"syntax", "{a, 1}.\n{b, 2}.\n{c, [}.\n{d, 4}.\n", nil, "line 3"},
		{"no final dot", "{a, 1}.\n{b, 2}\n", nil, "line"},
		{"not a tuple", "{a, 1}.\n[b, 2].\n", nil, "stdin:2"},
		{"too short for keypos", "{a, x, 1}.\n{b}.\n", nil, "stdin:2"},
		{"kind mismatch", "{a, x, 1}.\n", []string{"--kind", "set"}, "mismatch"},
		{"keypos mismatch", "{a, x, 1}.\n", []string{"--keypos", "1"}, "mismatch"},
	}
	for _, c := range bad {
		args := append(append([]string{"load"}, c.args...), path)
		r := runDetsIn(t, []byte(c.text), args...)
		r.want(t, exitError, c.name)
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%s: stderr %q does not contain %q", c.name, r.stderr, c.msg)
		}
		if fileHash(t, path) != before {
			t.Fatalf("%s: a failed load changed the table", c.name)
		}
	}
	// A bad input for a new table creates nothing.
	fresh := filepath.Join(dir, "fresh.dets")
	r = runDetsIn(t, []byte("{a, 1}.\n{b, \n"), "load", fresh)
	r.want(t, exitError, "load bad into new")
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a failed load created the table")
	}
	// A missing input file.
	r = runDets(t, "load", fresh, filepath.Join(dir, "nope.terms"))
	r.want(t, exitError, "load missing input")
	// An empty input creates an empty table.
	r = runDetsIn(t, []byte(""), "load", fresh)
	r.want(t, 0, "load empty")
	if got := readAll(t, fresh); len(got) != 0 {
		t.Errorf("empty load: %d objects", len(got))
	}
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{32}\n$`)

func TestDigest(t *testing.T) {
	dir := t.TempDir()
	objs := sampleObjects()
	reversed := make([]etf.Term, len(objs))
	for i, o := range objs {
		reversed[len(objs)-1-i] = o
	}
	a, b, c := filepath.Join(dir, "a.dets"), filepath.Join(dir, "b.dets"), filepath.Join(dir, "c.dets")
	makeTable(t, a, dets.Options{}, objs...)
	makeTable(t, b, dets.Options{Kind: dets.Bag, MinSlots: 4096}, reversed...)
	// c has a history: extra objects inserted and deleted again.
	tab, err := dets.Open(c, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := tab.Insert(tup("tmp", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Insert(objs...); err != nil {
		t.Fatal(err)
	}
	if err := tab.Delete(etf.Atom("tmp")); err != nil {
		t.Fatal(err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}

	da := must(t, "digest", a).stdout
	if !hexDigest.MatchString(da) {
		t.Fatalf("digest output %q is not 32 hex digits", da)
	}
	if db, dc := must(t, "digest", b).stdout, must(t, "digest", c).stdout; db != da || dc != da {
		t.Errorf("equal content, different digests: %s %s %s", da, db, dc)
	}

	// Any change of content changes the digest, including duplicates.
	d := filepath.Join(dir, "d.dets")
	makeTable(t, d, dets.Options{}, objs[1:]...)
	e := filepath.Join(dir, "e.dets")
	makeTable(t, e, dets.Options{Kind: dets.DuplicateBag}, append(objs, objs[0])...)
	f := filepath.Join(dir, "f.dets")
	makeTable(t, f, dets.Options{Kind: dets.DuplicateBag}, append(objs, objs[0], objs[0])...)
	seen := map[string]string{da: "a"}
	for name, p := range map[string]string{"d": d, "e": e, "f": f} {
		dg := must(t, "digest", p).stdout
		if prev, ok := seen[dg]; ok {
			t.Errorf("tables %s and %s have different content but the same digest %s", prev, name, dg)
		}
		seen[dg] = name
	}
	// An empty table has a digest too.
	empty := filepath.Join(dir, "empty.dets")
	makeTable(t, empty, dets.Options{})
	if de := must(t, "digest", empty).stdout; !hexDigest.MatchString(de) || de == da {
		t.Errorf("digest of an empty table: %q", de)
	}
}

func TestLockBusy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{}, tup("a", 1))
	input := filepath.Join(dir, "in.terms")
	if err := os.WriteFile(input, []byte("{b, 2}.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, path)
	before := fileHash(t, path)
	cmds := [][]string{{"info"}, {"check"}, {"dump"}, {"digest"}, {"repair"}, {"load", path, input}}
	for _, c := range cmds {
		args := c
		if len(c) == 1 {
			args = []string{c[0], path}
		}
		r := runDets(t, args...)
		r.want(t, exitBusy, args...)
		if !strings.Contains(r.stderr, "busy") {
			t.Errorf("dets %v: %q", args, r.stderr)
		}
	}
	const wait = 300 * time.Millisecond
	r := runDets(t, "info", "--wait", wait.String(), path)
	r.want(t, exitBusy, "info --wait")
	if !strings.Contains(r.stderr, "timed out") || r.took < wait {
		t.Errorf("info --wait %v: took %v, stderr %q", wait, r.took, r.stderr)
	}
	if fileHash(t, path) != before {
		t.Error("a refused command changed the table")
	}
	// The lock is released while a command waits: it then succeeds.
	go func() {
		time.Sleep(200 * time.Millisecond)
		release()
	}()
	r = runDets(t, "load", "--wait", "20s", path, input)
	r.want(t, 0, "load --wait")
	if r.took < 150*time.Millisecond {
		t.Errorf("load did not wait for the lock (took %v)", r.took)
	}
}

func TestDemo(t *testing.T) {
	r := runDets(t, "demo") // no stdin, no terminal
	r.want(t, 0, "demo")
	for _, want := range []string{"$ dets check", "(exit status 2)", "$ dets repair --backup", "(exit status 5)", "survived", "$ dets get", "{cherry,<<\"dark red\">>,40}.", "$ dets stats", "load factor:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.stderr != "" {
		t.Errorf("demo wrote to stderr: %q", r.stderr)
	}
}

// TestQuietWithoutTerminal: with stderr a pipe, a successful load, dump
// and repair print no progress bar.
func TestQuietWithoutTerminal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	var in strings.Builder
	for i := range 3000 {
		in.WriteString("{" + itoa(i) + ", <<\"value\">>}.\n")
	}
	for _, args := range [][]string{{"load", path}, {"dump", path}, {"repair", path}} {
		r := runDetsIn(t, []byte(in.String()), args...)
		r.want(t, 0, args...)
		if r.stderr != "" {
			t.Errorf("dets %v wrote to stderr: %q", args, r.stderr)
		}
	}
}

func itoa(i int) string { return etf.Int(i).String() }

// TestInfoNeedsRepairReadsUnderLock: when the file needs repair, what info
// still reads (the size; a native file's header pages) is read under the
// table's lock, as the session's reads are; another process holding the
// lock by then makes info say busy. It read without the lock.
func TestInfoNeedsRepairReadsUnderLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dirty.dets")
	makeDirty(t, path, []etf.Term{tup("a", 1)}, []etf.Term{tup("b", 2)})
	var release func()
	infoAfterSession = func() { release = holdLock(t, path) }
	defer func() {
		infoAfterSession = nil
		if release != nil {
			release()
		}
	}()
	var out, errb bytes.Buffer
	if code := run([]string{"info", path}, env{stdout: &out, stderr: &errb}); code != exitBusy || release == nil {
		t.Fatalf("info with the lock taken after its session: exit %d, %q %q; want %d (busy)", code, out.String(), errb.String(), exitBusy)
	}
	infoAfterSession = nil
	release()
	release = nil
	r := runDets(t, "info", path)
	r.want(t, exitNeedsRepair, "info", path)
	if !strings.Contains(r.stdout, "closed properly: no") {
		t.Errorf("info of a file that needs repair: %q", r.stdout)
	}
}
