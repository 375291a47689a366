package testutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireCommand returns the path of the program name, which provider
// ships (for the message). A missing program skips the test, except under
// CI=true, where the test must run and so fails.
func RequireCommand(t testing.TB, name, provider string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s(1) from %s is required under CI", name, provider)
		}
		t.Skipf("%s(1) not installed", name)
	}
	return p
}

// TryFlock runs util-linux flock(1) at its path flock on path without
// waiting (flock -n path true) and returns its exit status: 0 when it got
// the lock, 1 when another open file description holds it.
func TryFlock(t testing.TB, flock, path string) int {
	t.Helper()
	err := exec.Command(flock, "-n", path, "true").Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("flock -n %s: %v", path, err)
	return -1
}

// BuildProgram builds the main package importPath into dir with the go
// command and returns the binary's path; an error carries go build's
// output. For tests that run a command of this module as a user would.
func BuildProgram(dir, importPath string) (string, error) {
	bin := filepath.Join(dir, path.Base(importPath))
	out, err := exec.Command("go", "build", "-o", bin, importPath).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", importPath, err, out)
	}
	return bin, nil
}

// HoldFlock makes util-linux flock(1) at its path flock hold the lock on
// path (as another program would) until release or the end of the test.
func HoldFlock(t testing.TB, flock, path string) (release func()) {
	t.Helper()
	c := startPiped(t, exec.Command(flock, "-n", path, "sh", "-c", "echo locked; cat >/dev/null"))
	var once sync.Once
	release = func() { once.Do(func() { c.Stdin.Close(); _ = c.Cmd.Wait() }) }
	t.Cleanup(release)
	if line, _ := c.Stdout.ReadString('\n'); strings.TrimSpace(line) != "locked" {
		t.Fatalf("flock(1) did not lock %s: %q", path, line)
	}
	return release
}

// WaitForFile waits up to timeout for path to exist, polling, and fails the
// test if it does not: the signal a child process gives that it is ready.
func WaitForFile(t testing.TB, path string, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got ready (no %s after %v)", what, path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CopyFile copies the file from to a new file to with mode perm.
func CopyFile(t testing.TB, from, to string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
