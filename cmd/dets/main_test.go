package main

// The tests run the built dets binary as a user would. TestMain builds it
// once into a temporary directory.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/lockfile"
	"github.com/godets/godets/internal/testutil"
)

var detsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dets-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	detsBin, err = testutil.BuildProgram(dir, "github.com/godets/godets/cmd/dets")
	if err != nil {
		fmt.Fprintln(os.Stderr, "building dets:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// dets runs the binary with args and no stdin.
func runDets(t testing.TB, args ...string) result {
	t.Helper()
	return runDetsIn(t, nil, args...)
}

// runDetsIn runs the binary with args and the given stdin (nil: none).
func runDetsIn(t testing.TB, stdin []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(detsBin, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return runCommand(t, cmd)
}

// runCommand runs cmd (the binary, or a shell that runs it) and collects
// its output and exit code.
func runCommand(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", cmd.Args, err)
	}
	return r
}

// want checks the exit code and, for failures, that stderr is one line
// with no Go stack trace.
func (r result) want(t testing.TB, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("dets %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	if code != 0 {
		checkErrorLine(t, r.stderr)
	}
}

func checkErrorLine(t testing.TB, stderr string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr is not exactly one line: %q", stderr)
	}
	for _, bad := range []string{"goroutine ", "panic:", ".go:"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr looks like a stack trace (%q): %q", bad, stderr)
		}
	}
}

// must runs the binary and requires exit 0.
func must(t testing.TB, args ...string) result {
	t.Helper()
	r := runDets(t, args...)
	r.want(t, 0, args...)
	return r
}

// tup builds a tuple from Go values: string → atom, int → integer,
// []byte → binary, etf.Term as is.
func tup(elems ...any) etf.Tuple {
	out := make(etf.Tuple, len(elems))
	for i, e := range elems {
		switch v := e.(type) {
		case string:
			out[i] = etf.Atom(v)
		case int:
			out[i] = etf.Int(v)
		case []byte:
			out[i] = etf.Binary(v)
		case etf.Term:
			out[i] = v
		default:
			panic(fmt.Sprintf("tup: %T", e))
		}
	}
	return out
}

// makeTable creates a closed table at path with the objects.
func makeTable(t testing.TB, path string, opts dets.Options, objs ...etf.Term) {
	t.Helper()
	tab, err := dets.Open(path, opts)
	if err != nil {
		t.Fatalf("dets.Open: %v", err)
	}
	if len(objs) > 0 {
		if err := tab.Insert(objs...); err != nil {
			t.Fatalf("Insert: %v", err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// makeDirty leaves at path an image of a table that was written and never
// closed: the bytes of the file while the writer still had it open, as a
// crash would leave them.
func makeDirty(t testing.TB, path string, clean, dirty []etf.Term) {
	t.Helper()
	work := path + ".work"
	tab, err := dets.Open(work, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	if err := tab.Insert(clean...); err != nil {
		t.Fatal(err)
	}
	if err := tab.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(dirty...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(work)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAll returns the objects of a closed table, opened read-only.
func readAll(t testing.TB, path string) []etf.Term {
	t.Helper()
	tab, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("dets.Open(%s): %v", path, err)
	}
	defer tab.Close()
	var out []etf.Term
	for o, err := range tab.All() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func fileHash(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// holdLock takes the table's sidecar lock from the test process, as another
// owner would (each lockfile.Lock is an owner of its own), until the returned
// function is called. It goes through package lockfile so that it takes the
// lock the sessions use on every platform.
func holdLock(t testing.TB, path string) (release func()) {
	t.Helper()
	l, err := lockfile.Acquire(path, lockfile.Options{})
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	// Once: TestLockBusy releases from a goroutine, then Cleanup runs.
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := l.Unlock(); err != nil {
				t.Errorf("unlock: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// sameMultiset compares object lists ignoring order, counting duplicates.
func sameMultiset(t testing.TB, got, want []etf.Term) {
	t.Helper()
	count := map[string]int{}
	for _, o := range want {
		count[keyOf(t, o)]++
	}
	for _, o := range got {
		count[keyOf(t, o)]--
	}
	for k, n := range count {
		if n != 0 {
			t.Errorf("object %s: %+d copies more wanted than found", k, n)
		}
	}
	if t.Failed() {
		t.Logf("got %d objects, want %d", len(got), len(want))
	}
}

func keyOf(t testing.TB, o etf.Term) string {
	b, err := etf.Encode(o)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return fmt.Sprintf("%x", b)
}
