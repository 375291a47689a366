package testutil

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

var _ = SeedAlias("old.seed", "OLD_TESTUTIL_SEED")

func TestMain(m *testing.M) {
	RunChildRole(func(role string) int {
		switch role {
		case "echo": // print the parameter, hold until stdin closes
			fmt.Println(os.Getenv("TESTUTIL_PARAM"))
			_, _ = io.Copy(io.Discard, os.Stdin)
			return 0
		case "fail":
			return 3
		}
		return 4
	})
	os.Exit(m.Run())
}

// setFlag sets a seed flag for one test.
func setFlag(t *testing.T, v *seedValue, text string) {
	t.Helper()
	old := v.v
	if err := v.Set(text); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.v = old })
}

func TestSeedPrecedence(t *testing.T) {
	old := aliases[0].flag
	cases := []struct {
		name                   string
		flag, alias, env, aenv string
		want                   int64
	}{
		{name: "none", want: 0},
		{name: "alias env", aenv: "5", want: 5},
		{name: "env over alias env", env: "4", aenv: "5", want: 4},
		{name: "alias flag over env", alias: "3", env: "4", want: 3},
		{name: "flag over all", flag: "2", alias: "3", env: "4", aenv: "5", want: 2},
		{name: "unsigned past MaxInt64", env: "18446744073709551615", want: -1},
		{name: "zero env is unset", env: "0", aenv: "7", want: 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(SeedEnv, c.env)
			t.Setenv("OLD_TESTUTIL_SEED", c.aenv)
			if c.flag != "" {
				setFlag(t, seedFlag, c.flag)
			}
			if c.alias != "" {
				setFlag(t, old, c.alias)
			}
			got, err := chosenSeed()
			if err != nil || got != c.want {
				t.Fatalf("chosenSeed = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestSeedRejectsBadEnv(t *testing.T) {
	t.Setenv(SeedEnv, "12x")
	if _, err := chosenSeed(); err == nil || !strings.Contains(err.Error(), SeedEnv) {
		t.Fatalf("bad %s: %v", SeedEnv, err)
	}
	if err := new(seedValue).Set("-"); err == nil {
		t.Fatal("flag took a non-number")
	}
}

func TestSeedIsLoggedAndTaken(t *testing.T) {
	t.Setenv(SeedEnv, "")
	t.Setenv("OLD_TESTUTIL_SEED", "")
	setFlag(t, seedFlag, "99")
	if got := Seed(t); got != 99 {
		t.Fatalf("Seed = %d, want 99", got)
	}
	setFlag(t, seedFlag, "0")
	if a, b := Seed(t), Seed(t); a == 0 || b == 0 {
		t.Fatalf("a random seed is 0: %d %d", a, b)
	}
}

func TestChildRoundTrip(t *testing.T) {
	c := StartChild(t, "echo", "TESTUTIL_PARAM=hello")
	c.ExpectLine(t, "hello")
	c.Release(t)

	if err := Command("fail").Run(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("failing role: %v", err)
	}
	out, err := Command("echo", "TESTUTIL_PARAM=x").Output()
	if err != nil || string(out) != "x\n" {
		t.Fatalf("echo: %q %v", out, err)
	}
}

func TestRequireCommandAndTryFlock(t *testing.T) {
	t.Setenv("CI", "")
	var skipped bool
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		RequireCommand(t, "godets-no-such-program", "nowhere")
	})
	if !skipped {
		t.Fatal("a missing program did not skip")
	}
	flock := RequireCommand(t, "flock", "util-linux")
	path := t.TempDir() + "/lock"
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := TryFlock(t, flock, path); got != 0 {
		t.Fatalf("free lock: flock exited %d", got)
	}
	release := HoldFlock(t, flock, path)
	if got := TryFlock(t, flock, path); got != 1 {
		t.Fatalf("held lock: flock exited %d, want 1", got)
	}
	release()
	if got := TryFlock(t, flock, path); got != 0 {
		t.Fatalf("released lock: flock exited %d", got)
	}
}

func TestWaitForFile(t *testing.T) {
	path := t.TempDir() + "/ready"
	time.AfterFunc(30*time.Millisecond, func() { _ = os.WriteFile(path, nil, 0o644) })
	WaitForFile(t, path, 5*time.Second, "the writer")
	var failed bool
	t.Run("never", func(t *testing.T) {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); WaitForFile(rec, path+".no", 20*time.Millisecond, "nobody") }()
		<-done
		failed = rec.fatal != ""
	})
	if !failed {
		t.Fatal("a file that never came did not fail")
	}
}

// fatalRecorder notes a Fatalf and ends the goroutine, as testing does.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(f string, a ...any) {
	r.fatal = fmt.Sprintf(f, a...)
	runtime.Goexit()
}

func TestBuildProgramReportsGoBuild(t *testing.T) {
	RequireCommand(t, "go", "the Go toolchain")
	_, err := BuildProgram(t.TempDir(), "github.com/godets/godets/no/such/cmd")
	if err == nil || !strings.Contains(err.Error(), "go build github.com/godets/godets/no/such/cmd") || !strings.Contains(err.Error(), "no/such/cmd") {
		t.Fatalf("a failed build: %v", err)
	}
}
