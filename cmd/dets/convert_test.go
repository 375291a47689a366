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

// byKey orders dump lines {K,...}. by K, keeping each key's lines in
// their order.
func byKey(dump string) string {
	lines := strings.Split(strings.TrimSpace(dump), "\n")
	key := func(l string) string { k, _, _ := strings.Cut(l, ","); return k }
	slices.SortStableFunc(lines, func(x, y string) int { return strings.Compare(key(x), key(y)) })
	return strings.Join(lines, "\n")
}

// TestConvertCommand: dets convert otp9 -> native -> otp9 keeps the
// content (dets digest equal in both formats, dump equal), refuses an
// existing DST without --force, replaces it with --force, and waits for
// (here: is refused by) a lock held on either file.
func TestConvertCommand(t *testing.T) {
	dir := t.TempDir()
	a, n, b := filepath.Join(dir, "a.dets"), filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
	var objs []etf.Term
	for i := range 120 {
		objs = append(objs, tup(i%40, "v", i), tup(i%40, "w", i))
	}
	makeTable(t, a, dets.Options{Kind: dets.DuplicateBag, MinSlots: 1024}, objs...)
	digest := strings.TrimSpace(must(t, "digest", a).stdout)
	dump := must(t, "dump", a).stdout

	r := must(t, "convert", "--to", "native", a, n)
	if !strings.Contains(r.stdout, "converted otp9 to native in "+n+": 240 objects, 40 keys") {
		t.Errorf("convert: %q", r.stdout)
	}
	if got := strings.TrimSpace(must(t, "digest", n).stdout); got != digest {
		t.Errorf("digest of the native copy %s, of the source %s", got, digest)
	}
	must(t, "check", n)
	if info := must(t, "info", "--json", n).stdout; !strings.Contains(info, `"format": "native"`) || !strings.Contains(info, `"min": 1024`) {
		t.Errorf("info of the native copy:\n%s", info)
	}

	r = must(t, "convert", "--to", "otp9", n, b)
	if !strings.Contains(r.stdout, "converted native to otp9 in "+b+": 240 objects, 40 keys") {
		t.Errorf("convert back: %q", r.stdout)
	}
	if got := strings.TrimSpace(must(t, "digest", b).stdout); got != digest {
		t.Errorf("digest after the round trip %s, want %s", got, digest)
	}
	// Dump order follows the layout; each key's objects keep theirs.
	if got := byKey(must(t, "dump", b).stdout); got != byKey(dump) {
		t.Errorf("dump after the round trip, by key:\n%s\nwant:\n%s", got, byKey(dump))
	}

	// An existing DST: refused, untouched; --force replaces it.
	before := fileHash(t, b)
	r = runDets(t, "convert", "--to", "otp9", n, b)
	r.want(t, exitError, "convert", "existing DST")
	if !strings.Contains(r.stderr, "already exists (give --force") || fileHash(t, b) != before {
		t.Errorf("convert over an existing file: %q", r.stderr)
	}
	must(t, "convert", "--to", "otp9", "--force", n, b)
	if got := strings.TrimSpace(must(t, "digest", b).stdout); got != digest {
		t.Errorf("digest after --force %s, want %s", got, digest)
	}
	if _, err := os.Stat(b + ".TMP"); err == nil {
		t.Error("convert left DST.TMP behind")
	}

	// A lock held on DST: busy, and nothing written.
	c := filepath.Join(dir, "c.dets")
	makeTable(t, c, dets.Options{}, tup("x", 1))
	release := holdLock(t, c)
	cb := fileHash(t, c)
	r = runDets(t, "convert", "--to", "native", "--force", a, c)
	r.want(t, exitBusy, "convert", "busy DST")
	if fileHash(t, c) != cb {
		t.Error("convert wrote a DST whose lock was held")
	}
	// The message names the busy file, DST, not SRC (it named SRC).
	if !strings.Contains(r.stderr, c+": busy") || strings.Contains(r.stderr, a+": busy") {
		t.Errorf("busy DST: %q does not name DST as the busy file", r.stderr)
	}
	release()
	// A lock held on SRC names SRC, whichever is locked first.
	release = holdLock(t, a)
	r = runDets(t, "convert", "--to", "native", "--force", a, c)
	r.want(t, exitBusy, "convert", "busy SRC")
	if !strings.Contains(r.stderr, a+": busy") {
		t.Errorf("busy SRC: %q does not name SRC as the busy file", r.stderr)
	}
	release()
	// A SRC that needs repair: the engine's words, without the session's.
	d := filepath.Join(dir, "d.dets")
	if err := os.WriteFile(d, dirtyCopy(t, a), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runDets(t, "convert", "--to", "native", d, filepath.Join(dir, "e.dets"))
	if r.code == 0 || strings.Contains(r.stderr, "callback") || !strings.Contains(r.stderr, d) {
		t.Errorf("convert of a SRC not closed properly: exit %d, %q", r.code, r.stderr)
	}
}

// dirtyCopy is the bytes of the closed table at path with its closed
// flag cleared (otp9 header offset 8: the file was not closed properly).
func dirtyCopy(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[8], b[9], b[10], b[11] = 0, 0, 0, 0
	return b
}
