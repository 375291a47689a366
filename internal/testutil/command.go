package testutil

import (
	"errors"
	"os"
	"os/exec"
	"testing"
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
