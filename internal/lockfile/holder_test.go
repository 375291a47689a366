//go:build linux || windows

package lockfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/godets/godets/internal/testutil"
)

// childPathEnv carries the lock path to a child of this test binary
// (testutil.StartChild); its role is "hold".
const childPathEnv = "GODETS_LOCKFILE_PATH"

func TestMain(m *testing.M) {
	testutil.RunChildRole(func(role string) int {
		switch role {
		case "hold":
			return runHolder(os.Getenv(childPathEnv))
		case "acquire":
			return runAcquire(os.Getenv(childPathEnv))
		}
		return 4
	})
	os.Exit(m.Run())
}

// runHolder locks path, prints "locked" and holds until stdin closes.
func runHolder(path string) int {
	l, err := Acquire(path, Options{Wait: 5 * time.Second})
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := l.Unlock(); err != nil {
		fmt.Println("error:", err)
		return 3
	}
	return 0
}

// runAcquire tries once to lock path and prints what it got: "locked",
// or the error with whether it is EACCES and whether it is ENOENT.
func runAcquire(path string) int {
	l, err := Acquire(path, Options{})
	if err != nil {
		fmt.Printf("error eacces=%v enoent=%v: %v\n", errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrNotExist), err)
		return 0
	}
	fmt.Println("locked")
	if err := l.Unlock(); err != nil {
		fmt.Println("error:", err)
		return 3
	}
	return 0
}

// startHolder runs a child process that holds the lock on path until its
// Release (or the test's end).
func startHolder(t *testing.T, path string) *testutil.Child {
	t.Helper()
	c := testutil.StartChild(t, "hold", childPathEnv+"="+path)
	c.ExpectLine(t, "locked")
	return c
}
