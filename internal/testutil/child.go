package testutil

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ChildRoleEnv names the child's role in its environment. A test binary
// started with it set runs that role in TestMain and exits, running no test.
const ChildRoleEnv = "GODETS_TEST_CHILD"

// EmulatorEnv names a user-mode emulator (qemu-user) that children must run
// through: test.sh sets it for foreign-architecture runs, where without
// binfmt_misc the kernel cannot exec the test binary itself.
const EmulatorEnv = "GODETS_QEMU"

// RunChildRole is the child side, called first in TestMain: in a child it
// runs run(role) and exits with its status; in the parent it returns.
func RunChildRole(run func(role string) int) {
	if role := os.Getenv(ChildRoleEnv); role != "" {
		os.Exit(run(role))
	}
}

// Command returns a command that runs this test binary again as a child of
// role, with env added to this process's environment. It runs no test
// (-test.run=^$); its stderr is the parent's.
func Command(role string, env ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if emu := os.Getenv(EmulatorEnv); emu != "" {
		cmd = exec.Command(emu, os.Args[0], "-test.run=^$")
	} else {
		cmd = exec.Command(os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(append(os.Environ(), ChildRoleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// Child is a running child with a pipe to its stdin and its stdout read by
// lines: the usual handshake is that the child prints a line when it holds
// something and lets go when its stdin closes.
type Child struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout *bufio.Reader
}

// StartChild starts Command(role, env...). t.Cleanup closes its stdin,
// kills it and reaps it, so a failing test leaves no process behind.
func StartChild(t testing.TB, role string, env ...string) *Child {
	t.Helper()
	c := startPiped(t, Command(role, env...))
	t.Cleanup(func() { c.Stdin.Close(); _ = c.Cmd.Process.Kill(); _ = c.Cmd.Wait() })
	return c
}

// startPiped starts cmd with a pipe to its stdin and one from its stdout.
func startPiped(t testing.TB, cmd *exec.Cmd) *Child {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &Child{Cmd: cmd, Stdin: stdin, Stdout: bufio.NewReader(out)}
}

// ExpectLine reads the child's next line and fails the test unless it is
// want (surrounding space ignored).
func (c *Child) ExpectLine(t testing.TB, want string) {
	t.Helper()
	line, err := c.Stdout.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != want {
		t.Fatalf("child %s: want line %q, got %q (%v)", c.role(), want, line, err)
	}
}

// Release closes the child's stdin and waits for it; a child that fails
// fails the test.
func (c *Child) Release(t testing.TB) {
	t.Helper()
	c.Stdin.Close()
	if err := c.Cmd.Wait(); err != nil {
		t.Fatalf("child %s: %v", c.role(), err)
	}
}

func (c *Child) role() string {
	for _, kv := range c.Cmd.Env {
		if v, ok := strings.CutPrefix(kv, ChildRoleEnv+"="); ok {
			return v
		}
	}
	return "?"
}
