package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// TestInspectNativeRedact: a redacted copy of a native bag holds none of
// its key or value texts, passes check --redacted with the original's
// count, and fails the plain check (its keys hash elsewhere); a copy of
// the file with one object's bytes damaged gets the original's verdict,
// the damaged object named at the same offset.
func TestInspectNativeRedact(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "n.dets")
	var objs []etf.Term
	for i := range 200 {
		objs = append(objs, tup(fmt.Sprintf("secret-key-%03d", i/2), fmt.Sprintf("confidential value %d", i), i*1000003, etf.Float(float64(i)/7)))
	}
	makeTable(t, path, dets.Options{Format: dets.Native, Kind: dets.Bag}, objs...)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(orig, []byte("secret-key-")) || !bytes.Contains(orig, []byte("confidential value")) {
		t.Fatal("the original lacks its texts: the search proves nothing")
	}
	sound := filepath.Join(dir, "sound-redacted.dets")
	r := must(t, "inspect", "--redact", "--out", sound, path)
	if !strings.Contains(r.stdout, "200 objects in") {
		t.Errorf("inspect --redact --out: %q", r.stdout)
	}
	red, err := os.ReadFile(sound)
	if err != nil {
		t.Fatal(err)
	}
	// Placeholders are letters only, so a text with a '-' or a space
	// cannot appear in one by chance.
	for _, text := range []string{"secret-key-", "confidential value"} {
		if bytes.Contains(red, []byte(text)) {
			t.Errorf("the redacted copy contains %q", text)
		}
	}
	if r := must(t, "check", "--redacted", sound); !strings.Contains(r.stdout, "ok (200 objects)") {
		t.Errorf("check --redacted of the copy: %q", r.stdout)
	}
	if r := runDets(t, "check", sound); r.code != exitCorrupt {
		t.Errorf("plain check of a redacted copy: exit %d (its keys hash to other slots)", r.code)
	}
	if out := must(t, "inspect", "--redact", "--slot", "0", path).stdout; strings.Contains(out, "secret-key-") {
		t.Errorf("inspect --redact shows data:\n%s", out)
	}

	// One object's ETF damaged: its checksum fails in the original and
	// in the copy, at the same offset.
	at := bytes.Index(orig, []byte("confidential value 17"))
	damaged := bytes.Clone(orig)
	damaged[at+3] ^= 0x20
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	origVerdict := runDets(t, "check", "--redacted", path)
	if origVerdict.code != exitCorrupt || !strings.Contains(origVerdict.stderr, "checksum") {
		t.Fatalf("check of the damaged original: exit %d, %s", origVerdict.code, origVerdict.stderr)
	}
	copyDamaged := filepath.Join(dir, "damaged-redacted.dets")
	must(t, "inspect", "--redact", "--out", copyDamaged, path)
	if got, want := problems(runDets(t, "check", "--redacted", copyDamaged)), problems(origVerdict); got != want {
		t.Errorf("redacted copy: %s; original: %s", got, want)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, damaged) {
		t.Error("inspect --redact changed the original")
	}
}
