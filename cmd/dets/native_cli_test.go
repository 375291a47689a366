package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// makeNativeTable writes a closed native table of n keys, key i holding
// {i, <<"value-i">>}.
func makeNativeTable(t *testing.T, path string, kind dets.Kind, n int) {
	t.Helper()
	objs := make([]etf.Term, n)
	for i := range objs {
		objs[i] = etf.Tuple{etf.Int(i), etf.Binary("value-" + strings.Repeat("v", i%7) + "-" + fmt.Sprintf("%03d", i))}
	}
	makeTable(t, path, dets.Options{Format: dets.Native, Kind: kind}, objs...)
}

// TestInfoNative: info shows the format for both formats and, for a
// native file, its revision, checksums, metas, log and verified gen, in
// text and JSON; a native file not closed properly still shows its log.
func TestInfoNative(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "n.dets")
	makeNativeTable(t, path, dets.Set, 40)
	before := fileHash(t, path)
	r := must(t, "info", path)
	for _, re := range []string{
		`format:\s+native \(revision 2\), checksums xxhash64, key hash farm64`,
		`meta:\s+B gen 2 \(current\), A gen 1 \(valid\)`,
		`log:\s+empty: closed properly`,
		`verified:\s+never by a repair`,
		`objects:\s+40`,
		`closed properly: yes`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("info output lacks %q:\n%s", re, r.stdout)
		}
	}
	r = must(t, "info", "--json", path)
	var got struct {
		Format  string         `json:"format"`
		Version *int           `json:"version"` // stable: present for native too
		Native  map[string]any `json:"native"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("info --json: %v\n%s", err, r.stdout)
	}
	want := map[string]any{"revision": 2.0, "checksum": "xxhash64", "metaGen": 2.0, "fallbackGen": 1.0,
		"fallbackValid": true, "logRecords": 0.0, "verifiedGen": 0.0}
	if got.Format != "native" || got.Version == nil || *got.Version != 1 {
		t.Errorf("info --json: format %q, version %v\n%s", got.Format, got.Version, r.stdout)
	}
	for k, v := range want {
		if got.Native[k] != v {
			t.Errorf("info --json: native.%s = %v, want %v\n%s", k, got.Native[k], v, r.stdout)
		}
	}
	if fileHash(t, path) != before {
		t.Error("info modified the file")
	}

	// otp9: the format row, and no native object.
	old := filepath.Join(dir, "o.dets")
	makeTable(t, old, dets.Options{}, tup("a", 1))
	r = must(t, "info", "--json", old)
	if strings.Contains(r.stdout, `"native"`) || !strings.Contains(r.stdout, `"format": "otp9"`) {
		t.Errorf("info --json of otp9:\n%s", r.stdout)
	}

	// Not closed properly: a copy taken while the writer had its log open.
	dirty := filepath.Join(dir, "dirty.dets")
	tab, err := dets.Open(path, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := tab.Insert(etf.Tuple{etf.Int(100 + i), etf.Binary("late")}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dirty, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runDets(t, "info", dirty)
	r.want(t, exitNeedsRepair, "info", dirty)
	if !regexp.MustCompile(`log:\s+3 records pending: not closed properly`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "closed properly: no") {
		t.Errorf("info of a native file not closed properly:\n%s", r.stdout)
	}
	r = runDets(t, "info", "--json", dirty)
	r.want(t, exitNeedsRepair, "info --json", dirty)
	if !strings.Contains(r.stdout, `"logRecords": 3`) || !strings.Contains(r.stdout, `"format": "native"`) {
		t.Errorf("info --json of a native file not closed properly:\n%s", r.stdout)
	}
	if !bytes.Equal(mustRead(t, dirty), b) {
		t.Error("info modified a file not closed properly")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckNativeNamesObjects: check of a native file with one damaged
// object names it (offset, slot, key unverified), prints the summary and
// exits 3, leaving the file byte-identical; a sound native file is ok.
func TestCheckNativeNamesObjects(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "n.dets")
	makeNativeTable(t, path, dets.Bag, 50)
	r := must(t, "check", path)
	if !strings.Contains(r.stdout, "ok (50 objects)") {
		t.Errorf("check of a sound native file: %q", r.stdout)
	}
	b := mustRead(t, path)
	at := bytes.Index(b, []byte("value-vvvvvv-041"))
	if at < 0 || bytes.Index(b[at+1:], []byte("value-vvvvvv-041")) >= 0 {
		t.Fatalf("the value of key 41 is not in the file exactly once")
	}
	b[at+3] ^= 0x01
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runDets(t, "check", path)
	r.want(t, exitCorrupt, "check", path)
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(path) + `: object at 0x[0-9a-f]{16} \(slot \d+\): checksum mismatch; key 41 \(unverified\)$`)
	summary := path + ": 1 damaged object in 1 bucket; 49 objects sound"
	if !line.MatchString(r.stdout) || !strings.Contains(r.stdout, summary) {
		t.Errorf("check output:\n%s\nwant the object of key 41 named and %q", r.stdout, summary)
	}
	if !bytes.Equal(mustRead(t, path), b) {
		t.Error("check modified a damaged file")
	}
}
