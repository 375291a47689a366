package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// fragmented makes a table that has lost most of its objects.
func fragmented(t *testing.T, path string) []etf.Term {
	t.Helper()
	return fragmentedIn(t, path, dets.OTP9)
}

func fragmentedIn(t *testing.T, path string, format dets.Format) []etf.Term {
	t.Helper()
	tab, err := dets.Open(path, dets.Options{Format: format})
	if err != nil {
		t.Fatal(err)
	}
	var kept []etf.Term
	for i := range 3000 {
		o := tup(i, []byte(strings.Repeat("v", i%97)))
		if err := tab.Insert(o); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			kept = append(kept, o)
		}
	}
	for i := range 3000 {
		if i%4 != 0 {
			if err := tab.Delete(etf.Int(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	return kept
}

var sizesRE = regexp.MustCompile(`(\d+) bytes (?:now|before), (?:about )?(\d+) bytes after`)

func sizesOf(t *testing.T, out string) (before, after int64) {
	t.Helper()
	m := sizesRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no sizes in %q", out)
	}
	b, _ := strconv.ParseInt(m[1], 10, 64)
	a, _ := strconv.ParseInt(m[2], 10, 64)
	return b, a
}

// TestCompact: the dry run writes nothing and estimates the size within
// 10%; compaction shrinks the file and keeps every object, in both
// formats (the native estimate used otp9's layout, 12 times too small).
func TestCompact(t *testing.T) {
	for _, format := range []dets.Format{dets.OTP9, dets.Native} {
		t.Run(format.String(), func(t *testing.T) { testCompact(t, format) })
	}
}

func testCompact(t *testing.T, format dets.Format) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frag.dets")
	kept := fragmentedIn(t, path, format)
	size0, _ := fileSize(path)
	hash0 := fileHash(t, path)

	r := must(t, "compact", "--dry-run", path)
	if fileHash(t, path) != hash0 {
		t.Fatal("compact --dry-run wrote to the file")
	}
	nowDry, estimate := sizesOf(t, r.stdout)
	if nowDry != size0 || !strings.Contains(r.stdout, "dry run") {
		t.Errorf("dry run: %q (file %d bytes)", r.stdout, size0)
	}

	r = must(t, "compact", path)
	before, after := sizesOf(t, r.stdout)
	size1, _ := fileSize(path)
	if before != size0 || after != size1 || after >= before {
		t.Errorf("compact: %q; sizes %d -> %d", r.stdout, size0, size1)
	}
	if d := float64(estimate-after) / float64(after); d < -0.1 || d > 0.1 {
		t.Errorf("dry-run estimate %d, compacted size %d (%.0f%% off)", estimate, after, 100*d)
	}
	sameMultiset(t, readAll(t, path), kept)
	must(t, "check", path)
}

// TestCompactRefusesUnsoundFiles: a damaged or not properly closed file is
// left byte-identical, with the exit code check gives, since the rebuild
// would drop objects.
func TestCompactRefusesUnsoundFiles(t *testing.T) {
	dir := t.TempDir()
	var objs []etf.Term
	for i := range 50 {
		objs = append(objs, tup(i, []byte("value")))
	}
	corrupt := filepath.Join(dir, "corrupt.dets")
	makeTable(t, corrupt, dets.Options{}, objs...)
	corruptBucket(t, corrupt)
	dirty := filepath.Join(dir, "dirty.dets")
	makeDirty(t, dirty, objs[:10], objs[10:20])
	for _, c := range []struct {
		path string
		code int
		msg  string
	}{{corrupt, exitCorrupt, "damage found, nothing written"}, {dirty, exitNeedsRepair, "not closed properly"}} {
		before := fileHash(t, c.path)
		// The dry run says what compact would: it takes no --repair, so
		// its message must not offer one (it offered --repair auto).
		for _, args := range [][]string{{"compact", c.path}, {"compact", "--dry-run", c.path}} {
			r := runDets(t, args...)
			r.want(t, c.code, args...)
			if !strings.Contains(r.stderr, c.msg) || !strings.Contains(r.stderr, "dets repair") || strings.Contains(r.stderr, "--repair") {
				t.Errorf("%v: %q", args, r.stderr)
			}
		}
		if fileHash(t, c.path) != before {
			t.Errorf("compact changed %s", c.path)
		}
	}
	release := holdLock(t, corrupt)
	r := runDets(t, "compact", corrupt)
	r.want(t, exitBusy, "compact busy")
	release()
	r = runDets(t, "compact", "--repair", "force", corrupt)
	r.want(t, exitError, "compact --repair force")
}

// TestOTPCompact: OTP writes and deletes, dets compact shrinks the file,
// and OTP opens the result with {repair, false} and finds its objects.
func TestOTPCompact(t *testing.T) {
	erl := otptest.Erl(t)
	tab := filepath.Join(t.TempDir(), "otp.dets")
	erl.Eval(t, `
{ok, T} = dets:open_file(otp_compact, [{file, binary_to_list(hd(In))}, {type, bag}]),
ok = dets:insert(T, [{I rem 700, I, list_to_binary(lists:duplicate(I rem 50, $x))} || I <- lists:seq(1, 4000)]),
[ok = dets:delete(T, K) || K <- lists:seq(0, 699), K rem 3 =/= 0],
ok = dets:close(T),
[]`, []byte(tab))
	before, _ := fileSize(tab)
	r := must(t, "compact", tab)
	after, _ := fileSize(tab)
	if after >= before {
		t.Errorf("compact: %d -> %d bytes: %s", before, after, r.stdout)
	}
	res := erl.Eval(t, `
{ok, T} = dets:open_file(otp_compacted, [{file, binary_to_list(hd(In))}, {repair, false}, {type, bag}]),
B = dets:match_object(T, '_'),
ok = dets:close(T),
A = [{I rem 700, I, list_to_binary(lists:duplicate(I rem 50, $x))} || I <- lists:seq(1, 4000), (I rem 700) rem 3 =:= 0],
`+sameOnBothSides, []byte(tab))
	if string(res[0]) != "same" {
		t.Fatalf("OTP reads other objects after compact: %s", res[0])
	}
}

func TestLockCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{}, tup("a", 1))
	link := filepath.Join(dir, "link.dets")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}

	// CMD's status comes back; inside CMD the table is locked.
	r := runDets(t, "lock", path, "--", "sh", "-c", "exit 7")
	if r.code != 7 || r.stderr != "" {
		t.Errorf("lock -- exit 7: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDets(t, "lock", path, "--", detsBin, "info", path)
	r.want(t, exitBusy, "lock -- dets info")
	if !strings.Contains(r.stderr, "busy") {
		t.Errorf("dets info under dets lock: %q", r.stderr)
	}
	// The resolved data file, for a link.
	r = must(t, "lock", link, "--", "sh", "-c", `printf %s "$DETS_LOCKED_FILE"`)
	if want, _ := filepath.EvalSymlinks(path); r.stdout != want {
		t.Errorf("DETS_LOCKED_FILE %q, want %q", r.stdout, want)
	}
	// A busy lock: CMD does not run.
	marker := filepath.Join(dir, "ran")
	release := holdLock(t, path)
	r = runDets(t, "lock", path, "--", "touch", marker)
	r.want(t, exitBusy, "lock busy")
	if _, err := os.Stat(marker); err == nil {
		t.Error("CMD ran without the lock")
	}
	release()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"lock", path}, "missing FILE or CMD"},
		{[]string{"lock", filepath.Join(dir, "none.dets"), "--", "true"}, "no such file"},
		{[]string{"lock", path, "--", filepath.Join(dir, "no-such-program")}, "cannot run"},
	} {
		r := runDets(t, c.args...)
		r.want(t, exitError, c.args...)
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("dets %v: %q", c.args, r.stderr)
		}
	}
	// A signal ends CMD: 128+N.
	r = runDets(t, "lock", path, "--", "sh", "-c", "kill -KILL $$")
	if r.code != 128+9 {
		t.Errorf("CMD killed: exit %d", r.code)
	}
	must(t, "info", path) // the lock was released
}

// TestLockForwardsSignals: SIGTERM to dets lock reaches CMD, and the lock
// is held until CMD has exited.
func TestLockForwardsSignals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	makeTable(t, path, dets.Options{}, tup("a", 1))
	ready, after := filepath.Join(dir, "ready"), filepath.Join(dir, "after")
	script := fmt.Sprintf(`trap '%s info %s > %s 2>&1; exit 3' TERM; touch %s; while :; do sleep 0.05; done`, detsBin, path, after, ready)
	cmd := exec.Command(detsBin, "lock", path, "--", "sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testutil.WaitForFile(t, ready, 20*time.Second, "CMD")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("dets lock after SIGTERM: %v", err)
	}
	// CMD's trap ran while dets lock still held the lock.
	if b, _ := os.ReadFile(after); !strings.Contains(string(b), "busy") {
		t.Errorf("dets info in CMD's trap: %q", b)
	}
}

// TestCompactUnchangedSize: a compaction that leaves the size as it was
// says so, not "-0.0% smaller".
func TestCompactUnchangedSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.dets")
	makeTable(t, path, dets.Options{Format: dets.Native})
	out := must(t, "compact", path).stdout
	if before, after := sizesOf(t, out); before != after || !strings.Contains(out, "(unchanged)") {
		t.Errorf("compact of an empty table: %q", out)
	}
}

// TestCompactKeepsOnlyNamedBuckets: compact of a sound file keeps only the
// buckets its slot table names, as OTP's compaction does. A bucket image
// in a freed block (a deleted binary that held one) came back as an
// object, and compact failed on the count it checks.
func TestCompactKeepsOnlyNamedBuckets(t *testing.T) {
	dir := t.TempDir()
	imgPath := filepath.Join(dir, "img.dets")
	makeTable(t, imgPath, dets.Options{}, tup("never_inserted", 1))
	b, err := os.ReadFile(imgPath)
	if err != nil {
		t.Fatal(err)
	}
	var img []byte
	for p := 1336; p+8 <= len(b) && img == nil; p += 16 {
		if binary.BigEndian.Uint32(b[p+4:]) == 0x12345678 { // ACTIVE
			img = b[p : p+int(binary.BigEndian.Uint32(b[p:]))]
		}
	}
	var payload []byte // the image at every alignment mod 16
	for i := range 16 {
		payload = append(payload, make([]byte, 16+i)...)
		payload = append(payload, img...)
	}
	path := filepath.Join(dir, "t.dets")
	var objs []etf.Term
	for i := range 500 {
		objs = append(objs, tup(i, i))
	}
	makeTable(t, path, dets.Options{}, append(objs, tup("doc", payload))...)
	tab, err := dets.Open(path, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Delete(etf.Atom("doc")); err != nil {
		t.Fatal(err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	must(t, "compact", path)
	sameMultiset(t, readAll(t, path), objs)
}
