package matchspec

import "errors"

// ErrBadSpec is the sentinel every compile error matches: OTP would refuse
// the same specification with badarg.
var ErrBadSpec = errors.New("matchspec: invalid match specification")

// ErrUnsupported matches compile errors for forms OTP accepts but this
// package does not evaluate (self/0, node/0,1: they name the calling Erlang
// process or node, which a Go program does not have). Such errors match
// ErrBadSpec too, so a caller that only checks ErrBadSpec refuses them.
var ErrUnsupported = errors.New("matchspec: unsupported in match specifications outside an Erlang node")

// CompileError says where in a specification compiling failed and why.
// Path is, for example, "clause 2, guard 1"; Reason is a short phrase.
type CompileError struct {
	Path        string
	Reason      string
	Unsupported bool
}

func (e *CompileError) Error() string {
	if e.Path == "" {
		return "matchspec: " + e.Reason
	}
	return "matchspec: " + e.Path + ": " + e.Reason
}

// Is makes errors.Is(err, ErrBadSpec) hold for every CompileError, and
// errors.Is(err, ErrUnsupported) for the unsupported ones.
func (e *CompileError) Is(target error) bool {
	return target == ErrBadSpec || (e.Unsupported && target == ErrUnsupported)
}
