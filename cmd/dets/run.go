package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

// env is everything a command may touch outside the file system, so the
// commands can run in-process (the demo does) as well as from main.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stderrTTY      bool // show progress bars on stderr
	stdoutTTY      bool // stats draws its histograms as bars
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for `dets help`
	usage   string // the synopsis line(s)
	help    string // description, flags are appended, then examples
	example string
	hidden  bool
	// setup declares the command's own flags; run executes it with the
	// positional arguments.
	setup func(fs *flag.FlagSet, c *cmdCtx) func(args []string) error
	// noCommon commands take no --wait/--repair.
	noCommon bool
	// readOnly commands never repair: their help shows only --wait, and
	// --repair is accepted for a clear refusal of anything but no.
	readOnly bool
}

// cmdCtx holds the parsed common flags and the I/O of one invocation.
type cmdCtx struct {
	env
	name   string
	wait   time.Duration
	repair dets.RepairMode
	// repairSet records whether --repair was given explicitly.
	repairSet bool
	// jsonErrors, set by commands that print JSON, reports whether this
	// invocation asked for it; then a failure is reported as JSON too.
	jsonErrors func() bool
}

// commands in the order `dets help` lists them. Set in init because the
// commands' own code looks them up.
var commands []*command

func init() {
	// One command a line, so that additions merge cleanly.
	commands = []*command{
		infoCmd,
		checkCmd,
		getCmd,
		keysCmd,
		statsCmd,
		repairCmd,
		convertCmd,
		dumpCmd,
		selectCmd,
		matchCmd,
		loadCmd,
		digestCmd,
		compactCmd,
		inspectCmd,
		lockCmd,
		completionCmd,
		versionCmd,
		demoCmd,
		demoWriterCmd,
	}
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run executes one command line (without the program name) and returns the
// process exit code. It never panics on user input.
func run(args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, topHelp())
		return exitError
	}
	out := &outputWriter{w: e.stdout}
	e.stdout = out
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			c := lookupCommand(args[1])
			if c == nil {
				return report(e, "help", usagef("unknown command %q (run 'dets help')", args[1]))
			}
			fmt.Fprint(e.stdout, commandHelp(c))
			return report(e, "help", out.failed())
		}
		fmt.Fprint(e.stdout, topHelp())
		return report(e, "help", out.failed())
	case "--version", "-version":
		name, args = "version", append([]string{"version"}, args[1:]...)
	}
	c := lookupCommand(name)
	if c == nil {
		return report(e, "", usagef("unknown command %q (run 'dets help')", name))
	}
	ctx := &cmdCtx{env: e, name: name}
	fs := flag.NewFlagSet("dets "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var repair string
	if !c.noCommon {
		fs.Var(waitFlag{&ctx.wait}, "wait", "how long to wait for the table's lock, e.g. 500ms or 5s; 0 tries once")
		fs.StringVar(&repair, "repair", "", "`mode` for a file that was not closed properly: no, auto or force")
	}
	body := c.setup(fs, ctx)
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, commandHelp(c))
		return report(e, name, out.failed())
	}
	if err != nil {
		// The flag package names flags with one dash; the help uses two.
		msg := strings.Replace(err.Error(), " -", " --", 1)
		uerr := usagef("%s (run 'dets %s --help')", msg, name)
		// Parsing stopped at the bad flag: a JSON request after it counts.
		return reportAs(e, name, uerr, ctx.jsonErrors != nil && (ctx.jsonErrors() || askedForJSON(args[1:])))
	}
	if ctx.wait < 0 {
		return ctx.report(usagef("--wait must not be negative"))
	}
	if repair != "" {
		ctx.repairSet = true
		if ctx.repair, err = parseRepair(repair); err != nil {
			return ctx.report(err)
		}
	}
	err = body(pos)
	if err == nil {
		err = out.failed()
	}
	return ctx.report(err)
}

// outputWriter is a command's stdout. It keeps the first write error, so
// that output lost to a full disk or a closed descriptor fails the command
// (exit 1, "writing output: ...") instead of exiting 0 with nothing
// written; commands that stream (dump, keys, select) say so themselves
// as soon as a write fails.
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// failed is the error to report for a lost write, or nil.
func (o *outputWriter) failed() error {
	if o.err == nil {
		return nil
	}
	return fmt.Errorf("writing output: %w", o.err)
}

// report is the package report for this invocation: JSON if the command
// was asked for JSON output.
func (c *cmdCtx) report(err error) int {
	return reportAs(c.env, c.name, err, c.jsonErrors != nil && c.jsonErrors())
}

// report prints err (if any) as one line and returns its exit code.
func report(e env, name string, err error) int { return reportAs(e, name, err, false) }

// reportAs prints err (if any) as one line on stderr, plain text or, with
// asJSON, a JSON object (see jsonErrorHelp), and returns its exit code.
func reportAs(e env, name string, err error, asJSON bool) int {
	code := exitCode(err)
	if err == nil {
		return code
	}
	msg := err.Error()
	if msg == "" {
		return code
	}
	text := oneLine(strings.TrimPrefix(msg, "dets: ") + hint(err))
	if asJSON {
		b, jerr := json.Marshal(jsonError{Error: jsonErrorBody{
			Command: name, Code: errorCode(err), ExitCode: code, Message: text,
		}})
		if jerr == nil {
			fmt.Fprintf(e.stderr, "%s\n", b)
			return code
		}
	}
	prefix := "dets: "
	if name != "" {
		prefix = "dets " + name + ": "
	}
	fmt.Fprintln(e.stderr, prefix+text)
	return code
}

// askedForJSON reports whether a command line that failed to parse asks
// for JSON output (--json, or --format json).
func askedForJSON(args []string) bool {
	for i, a := range args {
		switch strings.TrimPrefix(a, "-") {
		case "-":
			return false
		case "json", "-json", "json=true", "-json=true", "format=json", "-format=json":
			return true
		case "format", "-format":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		}
	}
	return false
}

// waitFlag parses --wait, saying what is wrong with a bad duration: the
// flag package's own message for "5" is only "parse error".
type waitFlag struct{ d *time.Duration }

func (w waitFlag) String() string {
	if w.d == nil || *w.d == 0 {
		return "0"
	}
	return w.d.String()
}

func (w waitFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil {
		*w.d = d
		return nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return fmt.Errorf("the duration has no unit: write %ss for seconds or %sms for milliseconds", s, s)
	}
	return errors.New("not a duration: write a number and a unit, e.g. 500ms, 5s or 2m")
}

func isHelpFlag(s string) bool {
	switch s {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// parseInterleaved parses flags that may come before or after positional
// arguments (dets info FILE --json). "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		used := len(args) - len(rest)
		if used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func parseRepair(s string) (dets.RepairMode, error) {
	switch s {
	case "no", "false", "none":
		return dets.NoRepair, nil
	case "auto", "true", "yes":
		return dets.AutoRepair, nil
	case "force":
		return dets.ForceRepair, nil
	}
	return dets.NoRepair, usagef("--repair must be no, auto or force, not %q", s)
}

func repairName(m dets.RepairMode) string {
	switch m {
	case dets.AutoRepair:
		return "auto"
	case dets.ForceRepair:
		return "force"
	}
	return "no"
}

// exactArgs checks the number of positional arguments.
func exactArgs(name string, args []string, min, max int, what string) error {
	if len(args) < min {
		return usagef("missing %s (usage: %s)", what, lookupCommand(name).usage)
	}
	if len(args) > max {
		return usagef("unexpected argument %q (usage: %s)", args[max], lookupCommand(name).usage)
	}
	return nil
}

// waitOption turns --wait into the session's wait policy.
func (c *cmdCtx) waitOption() exclusive.Wait {
	if c.wait == 0 {
		return exclusive.Immediate
	}
	return exclusive.WaitUpTo(c.wait)
}

// existing checks that path names a regular file before a session is tried,
// so that a typo gives a clear message and leaves no lock sidecar behind.
func existing(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case err != nil:
		return fmt.Errorf("%s: %v", path, unwrapPathError(err))
	case st.IsDir():
		return fmt.Errorf("%s: is a directory, not a DETS file", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: not a regular file", path)
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// session runs fn on the table at path inside an exclusive session. A read
// session (write false) opens the file read-only unless --repair asks for a
// repair, which needs write access.
func (c *cmdCtx) session(path string, write bool, topts dets.Options, fn func(*dets.Table) error) error {
	topts.Repair = c.repair
	readOnly := !write && c.repair == dets.NoRepair
	topts.ReadOnly = readOnly
	err := exclusive.With(path, exclusive.Options{
		Repair:   c.repair,
		ReadOnly: readOnly,
		Wait:     c.waitOption(),
		Table:    topts,
	}, fn)
	return sessionError(path, c.wait, err)
}

// msgError replaces an error's text and keeps its chain for errors.Is.
type msgError struct {
	msg string
	err error
}

func (e *msgError) Error() string { return e.msg }
func (e *msgError) Unwrap() error { return e.err }

// sessionError words a session's error for an operator: the path first,
// then what happened, without the layers' package prefixes.
func sessionError(path string, wait time.Duration, err error) error {
	if err == nil {
		return nil
	}
	var se *exclusive.SessionError
	var ae *exclusive.AcquisitionError
	var ce *exclusive.CleanupError
	var msg string
	switch {
	case errors.As(err, &ce):
		// What the session failed with, if anything, then the cleanup.
		cleanup := trimPkg(errors.Join(ce.Failures...).Error())
		if ce.Primary == nil {
			msg = cleanup
			break
		}
		first := sessionError(path, wait, ce.Primary)
		return &msgError{msg: first.Error() + "; then " + cleanup, err: err}
	case errors.Is(err, exclusive.ErrBusy):
		msg = "busy: another process holds the table's lock"
	case errors.Is(err, exclusive.ErrTimedOut):
		msg = fmt.Sprintf("timed out after %v waiting for the table's lock", wait)
	case errors.As(err, &se) && se.Stage == exclusive.CallbackFailure:
		// The command's own error; it names the path if it needs to.
		msg = trimPkg(se.Err.Error())
		var coded *codedError
		if errors.As(se.Err, &coded) {
			return coded
		}
	case errors.As(err, &se) && errors.Is(se.Err, dets.ErrNeedsRepair):
		// The engine's text says it twice and names the path again.
		msg = fmt.Sprintf("not closed properly (run 'dets repair %s', or pass --repair auto)", path)
	case errors.As(err, &se):
		msg = trimPkg(se.Err.Error())
		// The engine names the resolved path; the operator typed path.
		if i := strings.LastIndex(msg, ": /"); i >= 0 && filepath.Base(msg[i+2:]) == filepath.Base(path) {
			msg = msg[:i]
		}
	case errors.As(err, &ae):
		msg = "cannot lock the table: " + trimPkg(ae.Error())
	default:
		msg = trimPkg(err.Error())
	}
	return &msgError{msg: path + ": " + msg, err: err}
}

// trimPkg removes leading package prefixes ("exclusive: ", "dets: ").
func trimPkg(s string) string {
	for {
		t := s
		for _, p := range []string{"exclusive: ", "dets: ", "lockfile: ", "etf: "} {
			t = strings.TrimPrefix(t, p)
		}
		if t == s {
			return s
		}
		s = t
	}
}
