package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

var lockCmd = &command{
	name:    "lock",
	summary: "run a command while holding the table's session lock",
	usage:   "dets lock [--wait D] FILE -- CMD [ARGS...]",
	help: `Takes the table's session lock (the FILE.slate.lock sidecar) exactly as a
session does: the same path resolution, identity checks and refusals (an
unsafe alias, a quarantined file, a busy lock). Then it runs CMD with ARGS,
holding the lock until CMD exits, and exits with CMD's exit status (128+N
when a signal N ended it). CMD inherits stdin, stdout and stderr, and finds
the resolved data file (all symbolic links followed) in DETS_LOCKED_FILE.

This is how a program that knows nothing of godets' locks takes part in its
exclusion: an Erlang or Elixir job (OTP's dets takes no lock between
processes), a backup script, a copy. While CMD runs, every dets command and
every session on FILE waits for it or fails with "busy"; CMD must not hold
the file open past its own exit.

FILE must exist (create a table with 'dets load FILE /dev/null'). SIGINT,
SIGTERM and SIGHUP sent to dets lock are passed to CMD, and the lock is
released only once CMD has exited. A CMD that cannot be started exits 1;
a busy lock exits 5 and CMD is not run.`,
	example: `  dets lock data/cache.dets -- erl -noshell -s job run -s init stop
  dets lock --wait 30s cache.dets -- cp cache.dets /backup/cache.dets
  dets lock cache.dets -- sh -c 'cp "$DETS_LOCKED_FILE" /backup/'`,
	readOnly: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		return func(args []string) error {
			if len(args) < 2 {
				return usagef("missing FILE or CMD (usage: %s)", lookupCommand("lock").usage)
			}
			if c.repair != dets.NoRepair {
				return usagef("lock never opens the table, so --repair must be no")
			}
			return c.lock(args[0], args[1:])
		}
	},
}

func (c *cmdCtx) lock(path string, argv []string) error {
	if err := existing(path); err != nil {
		return err
	}
	status := 0
	err := exclusive.Locked(path, exclusive.Options{Wait: c.waitOption()}, func(resolved string) error {
		var err error
		status, err = c.runLocked(resolved, argv)
		return err
	})
	if err != nil {
		return sessionError(path, c.wait, err)
	}
	if status != 0 {
		return &codedError{code: status}
	}
	return nil
}

// runLocked runs argv with the lock held and returns its exit status.
func (c *cmdCtx) runLocked(resolved string, argv []string) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.Env = append(os.Environ(), "DETS_LOCKED_FILE="+resolved)
	// Signals are passed on, not acted on: the lock must outlive CMD.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot run %s: %v", argv[0], unwrapPathError(err))
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, fmt.Errorf("running %s: %v", argv[0], err)
}
