package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

// Exit codes: part of the command's contract (the package doc and
// "dets help" list them), so scripts may rely on them.
const (
	exitOK          = 0 // success
	exitError       = 1 // usage or any other error
	exitNeedsRepair = 2 // the file was not closed properly
	exitCorrupt     = 3 // check (or a read) found damage
	exitNotDETS     = 4 // not a DETS file, or an unsupported version
	exitBusy        = 5 // the lock is held, or --wait expired
)

// usageError is a bad command line. It always exits 1.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError carries an explicit exit code and an optional message; an empty
// message means the command already reported on stdout or stderr.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *codedError) Unwrap() error { return e.err }

// exitCode maps an error to the contract's exit code. Busy and timeout come
// first: they say nothing about the file, only about its owner.
func exitCode(err error) int {
	var ce *codedError
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue):
		return exitError
	case errors.Is(err, exclusive.ErrBusy), errors.Is(err, exclusive.ErrTimedOut):
		return exitBusy
	case errors.Is(err, dets.ErrNotDETS), errors.Is(err, dets.ErrUnsupportedVersion),
		// A header this version cannot read (an unknown type code or hash
		// method, or the legacy phash) is an unsupported file too.
		errors.Is(err, dets.ErrBadTypeCode), errors.Is(err, dets.ErrBadHashMethod),
		errors.Is(err, dets.ErrUnsupportedHash), errors.Is(err, dets.ErrImageTooShort):
		return exitNotDETS
	case errors.Is(err, exclusive.ErrNeedsRepair), errors.Is(err, dets.ErrNeedsRepair),
		errors.Is(err, dets.ErrNotClosed):
		return exitNeedsRepair
	case errors.Is(err, dets.ErrCorrupt):
		return exitCorrupt
	}
	return exitError
}

// hint adds what an operator should do next for a busy table. A table
// that needs repair gets its hint where the message is worded
// (sessionError, check), since that is where the path is known.
func hint(err error) string {
	if exitCode(err) == exitBusy && !errors.Is(err, exclusive.ErrTimedOut) {
		return " (try --wait 5s)"
	}
	return ""
}

// errorCode is the stable code of a JSON error report: the exit code's
// reason, or for other failures exclusive's code of the session error.
func errorCode(err error) string {
	var ue *usageError
	if errors.As(err, &ue) {
		return "usage"
	}
	switch exitCode(err) {
	case exitNeedsRepair:
		return "needs_repair"
	case exitCorrupt:
		return "corrupt"
	case exitNotDETS:
		return "not_dets"
	case exitBusy:
		if errors.Is(err, exclusive.ErrTimedOut) {
			return "timed_out"
		}
		return "busy"
	}
	switch code := exclusive.Code(err); code {
	case "ok", "error", "callback_failed", "open_failed":
		// Not more specific than the message.
	default:
		return code
	}
	return "error"
}

// jsonErrorHelp documents the JSON error report of commands that print JSON.
const jsonErrorHelp = `With JSON output, a failure is reported on stderr as one line of JSON too:
  {"error": {"command": "info", "code": "needs_repair", "exit_code": 2,
             "message": "..."}}
code is usage, needs_repair, corrupt, not_dets, busy or timed_out for those
failures, the code of package exclusive for other session failures (such as
cleanup_failed or unsafe_alias), else error; message is the text that the
plain error line has after "dets COMMAND: ".`

type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Command  string `json:"command"`
	Code     string `json:"code"`
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"`
}

// oneLine makes an error message fit on one line of stderr.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "; ")
	return strings.NewReplacer("\n", "; ", "\r", " ").Replace(s)
}

// shown is a path as stdout prints it: as it is, or quoted in Go syntax
// when it holds a control character (a newline would split the line that
// scripts read as one) or bytes that are not UTF-8.
func shown(path string) string {
	if !utf8.ValidString(path) || strings.ContainsFunc(path, unicode.IsControl) {
		return strconv.Quote(path)
	}
	return path
}
