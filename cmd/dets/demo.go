package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
)

var demoCmd = &command{
	name:    "demo",
	summary: "a guided tour on a throw-away table: crash, check, repair",
	usage:   "dets demo",
	help: `Runs the tool on a table in a temporary directory and explains each step:
two sessions write and read the table (info, dump, get); a writer process
takes the lock, writes, and is killed with SIGKILL so the file is left not
closed properly; check reports it (exit 2), repair rebuilds it, and the
surviving objects and the rebuilt file's stats are shown. It needs no input and no terminal, and removes the directory at the
end.`,
	example: `  dets demo
  go run ./cmd/dets demo`,
	noCommon: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		keep := fs.Bool("keep", false, "keep the temporary directory and print its path")
		return func(args []string) error {
			if err := exactArgs("demo", args, 0, 0, ""); err != nil {
				return err
			}
			return c.demo(*keep)
		}
	},
}

// demoWriterCmd is the child the demo kills. It is hidden from help.
var demoWriterCmd = &command{
	name:     "__demo-writer",
	usage:    "dets __demo-writer FILE",
	help:     "Internal: the writer process of 'dets demo'.",
	hidden:   true,
	noCommon: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		return func(args []string) error {
			if err := exactArgs("__demo-writer", args, 1, 1, "FILE"); err != nil {
				return err
			}
			return c.demoWriter(args[0])
		}
	},
}

// demoFruit is the demo's data: {Name, Colour, Count}.
var demoFruit = []etf.Term{
	etf.Tuple{etf.Atom("apple"), etf.Binary("red"), etf.Int(3)},
	etf.Tuple{etf.Atom("banana"), etf.Binary("yellow"), etf.Int(12)},
	etf.Tuple{etf.Atom("cherry"), etf.Binary("dark red"), etf.Int(40)},
	etf.Tuple{etf.Atom("damson"), etf.Binary("purple"), etf.Int(7)},
}

// demoWrites are what the killed writer inserts.
var demoWrites = []etf.Term{
	etf.Tuple{etf.Atom("elderberry"), etf.Binary("black"), etf.Int(100)},
	etf.Tuple{etf.Atom("fig"), etf.Binary("green"), etf.Int(5)},
	etf.Tuple{etf.Atom("apple"), etf.Binary("green"), etf.Int(4)}, // replaces the red apple
}

func (c *cmdCtx) demo(keep bool) error {
	dir, err := os.MkdirTemp("", "dets-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintf(c.stdout, "\nThe files are kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	path := filepath.Join(dir, "fruit.dets")
	out := c.stdout
	step := func(n int, format string, args ...any) {
		fmt.Fprintf(out, "\n== %d. %s\n", n, fmt.Sprintf(format, args...))
	}
	// sh runs one dets command in this process, as a user would type it,
	// and shows its output and exit status.
	sh := func(args ...string) int {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = strings.ReplaceAll(a, dir, "$DIR")
		}
		fmt.Fprintf(out, "$ dets %s\n", strings.Join(shown, " "))
		var buf bytes.Buffer
		code := run(args, env{stdin: strings.NewReader(""), stdout: &buf, stderr: &buf})
		text := strings.ReplaceAll(buf.String(), dir, "$DIR")
		for _, line := range strings.SplitAfter(text, "\n") {
			if line != "" {
				fmt.Fprint(out, "  "+line)
			}
		}
		if !strings.HasSuffix(text, "\n") && text != "" {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "  (exit status %d)\n", code)
		return code
	}
	expect := func(what string, got, want int) error {
		if got != want {
			return fmt.Errorf("demo: %s exited %d, expected %d", what, got, want)
		}
		return nil
	}

	fmt.Fprintf(out, "dets demo: a table in a temporary directory ($DIR = %s)\n", dir)

	step(1, "Session one creates a set table and inserts %d objects {Fruit, Colour, Count}.", len(demoFruit))
	err = exclusive.With(path, exclusive.Options{Wait: exclusive.Immediate, Table: dets.Options{Kind: dets.Set, KeyPos: 1}},
		func(t *dets.Table) error { return t.Insert(demoFruit...) })
	if err != nil {
		return fmt.Errorf("demo: session one: %w", err)
	}
	fmt.Fprintln(out, "  The session took the lock, opened the table, inserted, closed it, released the lock.")

	step(2, "Session two reads the table back.")
	if err := expect("info", sh("info", path), exitOK); err != nil {
		return err
	}
	if err := expect("dump", sh("dump", path), exitOK); err != nil {
		return err
	}
	if err := expect("get", sh("get", path, "cherry"), exitOK); err != nil {
		return err
	}

	step(3, "A writer process opens the table, writes %d objects, and is killed with SIGKILL.", len(demoWrites))
	child, err := startDemoWriter(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  The writer (pid %d) holds the lock and has written. Meanwhile another session is refused:\n", child.Process.Pid)
	busy := sh("info", path)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("demo: killing the writer: %w", err)
	}
	_ = child.Wait()
	fmt.Fprintf(out, "  kill -9 %d: the writer died without closing the table. The OS released its lock.\n", child.Process.Pid)
	if err := expect("info while the writer ran", busy, exitBusy); err != nil {
		return err
	}

	step(4, "check finds the file was not closed properly (exit 2), without changing it.")
	if err := expect("check of the dirty file", sh("check", path), exitNeedsRepair); err != nil {
		return err
	}

	step(5, "repair keeps a backup copy, then rebuilds the file from its objects.")
	if err := expect("repair", sh("repair", "--backup", path+".bak", path), exitOK); err != nil {
		return err
	}
	if err := expect("check after repair", sh("check", path), exitOK); err != nil {
		return err
	}

	step(6, "What survived:")
	if err := expect("dump", sh("dump", path), exitOK); err != nil {
		return err
	}
	sh("digest", path)
	fmt.Fprintln(out, "  And the shape of the rebuilt file: counts, load, buckets and free space.")
	if err := expect("stats", sh("stats", path), exitOK); err != nil {
		return err
	}
	survived, err := demoSurvivors(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThe writer had written %d objects before it was killed; %d of them survived the repair.\n",
		len(demoWrites), survived)
	fmt.Fprintln(out, "godets writes through to the file, so a killed writer loses no write it had finished; repair keeps every whole object it finds.")
	return nil
}

// startDemoWriter re-executes this binary as the writer and waits until it
// has written.
func startDemoWriter(path string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo: cannot find the dets executable: %w", err)
	}
	cmd := exec.Command(exe, "__demo-writer", path)
	cmd.Stdin = nil
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: starting the writer: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("unexpected output %q", line)
		}
		ready <- err
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = errors.New("timed out")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("demo: the writer did not get ready: %v", err)
	}
	return cmd, nil
}

// demoWriter is the child: it writes inside a session, says "ready", and
// waits to be killed while still holding the table open and locked.
func (c *cmdCtx) demoWriter(path string) error {
	return exclusive.With(path, exclusive.Options{Wait: exclusive.WaitUpTo(10 * time.Second)},
		func(t *dets.Table) error {
			for _, obj := range demoWrites {
				if err := t.Insert(obj); err != nil {
					return err
				}
			}
			fmt.Fprintln(c.stdout, "ready")
			if f, ok := c.stdout.(*os.File); ok {
				_ = f.Sync()
			}
			// Wait for SIGKILL; give up after a while so a lost parent
			// cannot leave it running forever.
			time.Sleep(2 * time.Minute)
			return errors.New("demo writer: not killed in time")
		})
}

// demoSurvivors counts the writer's objects found after the repair.
func demoSurvivors(path string) (int, error) {
	n := 0
	err := exclusive.With(path, exclusive.Options{ReadOnly: true, Table: dets.Options{ReadOnly: true}}, func(t *dets.Table) error {
		for _, w := range demoWrites {
			objs, err := t.Lookup(w.(etf.Tuple)[0])
			if err != nil {
				return err
			}
			for _, o := range objs {
				if etf.Equal(o, w) {
					n++
				}
			}
		}
		return nil
	})
	return n, err
}
