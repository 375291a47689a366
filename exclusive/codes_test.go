package exclusive

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
)

// detsSentinels lists every exported error variable of package dets;
// TestDetsSentinelListIsComplete keeps it complete.
var detsSentinels = map[string]error{
	"ErrNotDETS":            dets.ErrNotDETS,
	"ErrUnsupportedVersion": dets.ErrUnsupportedVersion,
	"ErrBadTypeCode":        dets.ErrBadTypeCode,
	"ErrBadHashMethod":      dets.ErrBadHashMethod,
	"ErrUnsupportedHash":    dets.ErrUnsupportedHash,
	"ErrNeedsRepair":        dets.ErrNeedsRepair,
	"ErrNotClosed":          dets.ErrNotClosed,
	"ErrKindMismatch":       dets.ErrKindMismatch,
	"ErrKeyPosMismatch":     dets.ErrKeyPosMismatch,
	"ErrFormatMismatch":     dets.ErrFormatMismatch,
	"ErrInvalidOptions":     dets.ErrInvalidOptions,
	"ErrNotSupported":       dets.ErrNotSupported,
	"ErrAlreadyOpen":        dets.ErrAlreadyOpen,
	"ErrCorrupt":            dets.ErrCorrupt,
	"ErrMapFault":           dets.ErrMapFault,
	"ErrFileTooLarge":       dets.ErrFileTooLarge,
	"ErrFormatLimit":        dets.ErrFormatLimit,
	"ErrReadOnly":           dets.ErrReadOnly,
	"ErrClosed":             dets.ErrClosed,
	"ErrBadObject":          dets.ErrBadObject,
	"ErrBadArgument":        dets.ErrBadArgument,
	"ErrNoSuchKey":          dets.ErrNoSuchKey,
	"ErrNoSuchSlot":         dets.ErrNoSuchSlot,
	"ErrImageTooShort":      dets.ErrImageTooShort,
	"ErrCannotRedact":       dets.ErrCannotRedact,
}

// A new sentinel in package dets must be added to detsSentinels (and so
// get a code): the list is checked against the declarations of every
// non-test file of the package.
func TestDetsSentinelListIsComplete(t *testing.T) {
	files, err := filepath.Glob("../dets/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		declared = append(declared, exportedErrVars(f)...)
	}
	var listed []string
	for n := range detsSentinels {
		listed = append(listed, n)
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Fatalf("package dets declares %v,\nthe test lists %v", declared, listed)
	}
}

// exportedErrVars lists the exported Err* variables that f declares.
func exportedErrVars(f *ast.File) []string {
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
					declared = append(declared, n.Name)
				}
			}
		}
	}
	return declared
}

// exclusiveErrors is one error of each kind this package returns.
func exclusiveErrors() map[string]error {
	errs := map[string]error{
		"invalid_wait":     ErrInvalidWait,
		"invalid_callback": ErrNilCallback,
		"invalid_options":  &OptionsError{Field: "Repair", Reason: "auto in Options, force in Options.Table"},
		"os_error":         &AcquisitionError{Err: syscall.EIO},
		"open_failed":      &SessionError{Stage: OpenFailure, Err: syscall.EACCES},
		"callback_failed":  &SessionError{Stage: CallbackFailure, Err: errors.New("mine")},
		"close_failed":     &SessionError{Stage: CloseFailure, Err: syscall.EIO},
		"cleanup_failed":   &CleanupError{Failures: []error{syscall.EIO}},
	}
	for _, r := range []error{ErrBusy, ErrTimedOut, ErrUnsupportedFilesystem, ErrUnsafeAlias, ErrUnsupportedTarget, ErrQuarantined, ErrAlreadyOpen} {
		errs[r.Error()] = &AcquisitionError{Reason: r}
	}
	return errs
}

// #16 item 11: every dets sentinel has its own code and a path-free
// sentence, from the open stage and from the callback alike, and no code
// of this package is reused.
func TestDetsSentinelsHaveCodes(t *testing.T) {
	const secret = "/SECRET/dir/t.dets"
	codes := map[string]string{} // code → what gave it
	for name, e := range exclusiveErrors() {
		codes[Code(e)] = "exclusive " + name
	}
	if len(codes) != len(exclusiveErrors()) {
		t.Fatalf("exclusive errors share codes: %v", codes)
	}
	for name, sentinel := range detsSentinels {
		code, msg := Code(sentinel), Message(sentinel)
		if code == "error" || codes[code] != "" {
			t.Errorf("%s: code %q (also %s)", name, code, codes[code])
			continue
		}
		codes[code] = name
		if !strings.HasSuffix(msg, ".") || strings.Contains(msg, "\n") || strings.Contains(msg, "dets:") {
			t.Errorf("%s: sentence %q", name, msg)
		}
		withPath := fmt.Errorf("%w: %s", sentinel, secret)
		for _, c := range []struct {
			err        error
			code, want string
		}{
			{withPath, code, msg},
			{&SessionError{Stage: OpenFailure, Err: withPath}, code, msg},
			{&SessionError{Stage: CallbackFailure, Err: fmt.Errorf("step: %w", withPath)}, "callback_failed", clause(msg)},
			{&CleanupError{Primary: &SessionError{Stage: CallbackFailure, Err: withPath}, Failures: []error{syscall.EIO}}, "cleanup_failed", ""},
		} {
			got := Message(c.err)
			if Code(c.err) != c.code || CauseCode(c.err) != code || !strings.Contains(got, c.want) || strings.Contains(got, "SECRET") {
				t.Errorf("%s in %T: code %s, cause %s, message %q; want %s, cause %s, a message with %q",
					name, c.err, Code(c.err), CauseCode(c.err), got, c.code, code, c.want)
			}
		}
	}
	// The engine's wrappings: corruption details, a file that needs repair
	// because its free lists are corrupt.
	ce := &dets.CorruptionError{Path: secret, Section: "object", Offset: 9, Reason: "bad"}
	if Code(ce) != "corrupt" || strings.Contains(Message(ce), "SECRET") {
		t.Errorf("CorruptionError: %s %q", Code(ce), Message(ce))
	}
	nr := fmt.Errorf("%w: %s: %w", dets.ErrNeedsRepair, secret, ce)
	if Code(&SessionError{Stage: OpenFailure, Err: nr}) != "needs_repair" {
		t.Errorf("needs repair over corruption: %s", Code(nr))
	}
	if Code(dets.ErrNoSuchKey) != "no_such_key" || !errors.Is(dets.ErrNoSuchKey, dets.ErrBadArgument) {
		t.Errorf("ErrNoSuchKey: %s", Code(dets.ErrNoSuchKey))
	}
}

// codedErr stands in for a kinds error with its own code.
type codedErr struct{ detail string }

func (e codedErr) Error() string       { return "kinds: table mismatch: " + e.detail }
func (e codedErr) SafeCode() string    { return "table_mismatch" }
func (e codedErr) SafeMessage() string { return "The table does not match the handle." }

// Message uses a CodedError's SafeMessage, alone and as a session's cause.
func TestCodedErrorMessage(t *testing.T) {
	var e error = codedErr{detail: "/SECRET"}
	if Code(e) != "table_mismatch" || Message(e) != "The table does not match the handle." {
		t.Fatalf("bare: %s %q", Code(e), Message(e))
	}
	open := &SessionError{Stage: OpenFailure, Err: fmt.Errorf("wrapped: %w", e)}
	if Code(open) != "table_mismatch" || Message(open) != "The table does not match the handle." {
		t.Fatalf("open: %s %q", Code(open), Message(open))
	}
	cb := &SessionError{Stage: CallbackFailure, Err: e}
	if Code(cb) != "callback_failed" || CauseCode(cb) != "table_mismatch" ||
		Message(cb) != "The session callback failed: the table does not match the handle." {
		t.Fatalf("callback: %s %s %q", Code(cb), CauseCode(cb), Message(cb))
	}
	if strings.Contains(Message(open)+Message(cb), "SECRET") {
		t.Fatal("a path leaked")
	}
}

// #16 item 11: a nested session that cannot start, its error returned by
// the outer callback, is the outer session's callback failure. errors.Is
// still sees ErrBusy, and what errors.As finds is marked Nested; the outer
// session's own acquisition failure is not.
func TestNestedAcquisitionIsCallbackFailure(t *testing.T) {
	f := newFixture(t)
	var inner error
	err := f.run(Immediate, func(*fakeTable) error {
		inner = f.run(Immediate, func(*fakeTable) error { return nil })
		return fmt.Errorf("nested: %w", inner)
	})
	var se *SessionError
	var ae *AcquisitionError
	if !errors.As(err, &se) || se.Stage != CallbackFailure || !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v", err)
	}
	if Code(err) != "callback_failed" || CauseCode(err) != "busy" || !strings.Contains(Message(err), "a session it started") {
		t.Fatalf("code %s, cause %s, message %q", Code(err), CauseCode(err), Message(err))
	}
	if !errors.As(err, &ae) || !ae.Nested || ae.Reason != ErrBusy {
		t.Fatalf("errors.As gave %+v, want a nested busy", ae)
	}
	var own *AcquisitionError
	if !errors.As(inner, &own) || own.Nested || own == ae {
		t.Fatalf("the callback's own value changed: %+v", own)
	}
	// Inside a cleanup failure the nested mark stays.
	captureLog(t)
	g := newFixture(t)
	g.closeErr = errors.New("injected close failure")
	err = g.run(Immediate, func(*fakeTable) error {
		return g.run(WaitUpTo(time.Millisecond), func(*fakeTable) error { return nil })
	})
	ae = nil
	if !errors.As(err, &ae) || !ae.Nested || Code(err) != "cleanup_failed" || CauseCode(err) != "timed_out" {
		t.Fatalf("cleanup: %v, %+v, %s, %s", err, ae, Code(err), CauseCode(err))
	}
	// The session's own failure to start.
	h := newFixture(t)
	l, err := lockfile.Acquire(h.path, lockfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
	err = h.run(Immediate, func(*fakeTable) error { return nil })
	ae = nil
	if !errors.As(err, &ae) || ae.Nested || Code(err) != "busy" || CauseCode(err) != "busy" {
		t.Fatalf("own: %v, %+v, %s", err, ae, Code(err))
	}
}

// The open failures through the engine, which used to give
// open_failed and "unexpected error".
func TestOpenStageCodes(t *testing.T) {
	set := newSet1000(t)
	dirty, _ := dirtyTable(t)
	for _, c := range []struct {
		path string
		opts Options
		code string
	}{
		{set, Options{Table: dets.Options{Kind: dets.Bag}}, "kind_mismatch"},
		{set, Options{Table: dets.Options{KeyPos: 2}}, "keypos_mismatch"},
		{dirty, Options{ReadOnly: true, Repair: dets.AutoRepair}, "not_closed"},
		{dirty, Options{}, "needs_repair"},
	} {
		err := With(c.path, c.opts, noop)
		var se *SessionError
		if !errors.As(err, &se) || se.Stage != OpenFailure || Code(err) != c.code || CauseCode(err) != c.code {
			t.Errorf("%+v: got %v, code %s, want %s", c.opts, err, Code(err), c.code)
		}
		if m := Message(err); strings.Contains(m, "unexpected") || strings.Contains(m, c.path) {
			t.Errorf("%s: message %q", c.code, m)
		}
	}
}

// The code table of the package doc says what Code returns.
func TestDocCodeTable(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^//\t([a-z_]+) +dets\.(Err[A-Za-z]+)`)
	seen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		seen[m[2]] = true
		if got := Code(detsSentinels[m[2]]); got != m[1] {
			t.Errorf("doc.go says %s for dets.%s, Code gives %s", m[1], m[2], got)
		}
	}
	if len(seen) != len(detsSentinels) {
		t.Errorf("doc.go lists %d dets errors, there are %d", len(seen), len(detsSentinels))
	}
	for code, e := range exclusiveErrors() {
		if !strings.Contains(string(b), "//\t"+Code(e)+" ") {
			t.Errorf("doc.go does not list %s (%s)", Code(e), code)
		}
	}
}

// Error messages stay on one line: a cleanup with two failures, one of
// them itself two joined errors, and lockfile's reports of a late or
// refused lock whose release failed in both of its steps.
func TestMessagesAreOneLine(t *testing.T) {
	a, b, c := errors.New("unlock failed"), errors.New("close failed"), errors.New("closing table failed")
	for _, err := range []error{
		&CleanupError{Primary: &AcquisitionError{Reason: ErrTimedOut}, Failures: []error{lockfile.JoinLine(a, b), c}},
		&lockfile.LateReleaseError{Path: "/d/t.dets", Err: lockfile.JoinLine(a, b)},
		&lockfile.RecheckReleaseError{Path: "/d/t.dets", Cause: &lockfile.AliasError{Kind: lockfile.IdentityChanged, Path: "/d/t.dets"}, Err: lockfile.JoinLine(a, b)},
	} {
		if msg := err.Error(); strings.Contains(msg, "\n") {
			t.Errorf("two lines: %q", msg)
		}
		if !errors.Is(err, a) {
			t.Errorf("%v: errors.Is lost a joined error", err)
		}
	}
	if lockfile.JoinLine(nil, nil) != nil {
		t.Error("JoinLine of nils is not nil")
	}
}
