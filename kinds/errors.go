package kinds

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned by Set.Lookup when the key has no object. It is
	// never wrapped around a storage error, so errors.Is(err, ErrNotFound)
	// separates "absent" from "could not read", as the seed's
	// Error(slate.NotFound) does.
	ErrNotFound = errors.New("kinds: key not found")

	// ErrDecode marks every term that a codec could not turn into a Go value.
	// Details are in *DecodeError.
	ErrDecode = errors.New("kinds: term does not match codec")

	// ErrEncode marks every Go value that a codec could not turn into a term
	// (a NaN float, an atom over 255 characters). Details are in *EncodeError.
	ErrEncode = errors.New("kinds: value cannot be encoded")

	// ErrTableMismatch is returned when a handle is made over a table whose
	// kind or key position does not match: typed handles need {Key, Value}
	// objects with keypos 1 in a table of the handle's kind.
	ErrTableMismatch = errors.New("kinds: table does not match handle")
)

// maxShown bounds how much of a term an error message quotes.
const maxShown = 40

// DecodeError says what a codec expected and what it found. Got is a short
// description of the term (its type and size, or a small scalar), never a
// dump of the whole term. Path locates the term inside the object, e.g.
// "value.2[0]" is the first list element inside the second element of the
// value tuple; it is empty for a codec used directly.
type DecodeError struct {
	Path     string
	Expected string
	Got      string
	Err      error // the cause from a Convert function, or nil
}

func (e *DecodeError) Error() string {
	s := "kinds: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	s += "expected " + e.Expected + ", got " + e.Got
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes every *DecodeError match ErrDecode.
func (e *DecodeError) Is(target error) bool { return target == ErrDecode }

// Unwrap returns the cause, if any.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError says why a Go value has no term form.
type EncodeError struct {
	Path   string
	Codec  string
	Reason string
}

func (e *EncodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("kinds: cannot encode %s: %s", e.Codec, e.Reason)
	}
	return fmt.Sprintf("kinds: %s: cannot encode %s: %s", e.Path, e.Codec, e.Reason)
}

// Is makes every *EncodeError match ErrEncode.
func (e *EncodeError) Is(target error) bool { return target == ErrEncode }

// mismatch builds the error for a term of the wrong shape.
func mismatch(expected string, got any) error {
	return &DecodeError{Expected: expected, Got: describe(got)}
}

// within prefixes the path of a codec error with p, so nested codecs report
// where in the object they failed. Other errors pass through unchanged.
func within(p string, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		c := *de
		c.Path = joinPath(p, c.Path)
		return &c
	}
	var ee *EncodeError
	if errors.As(err, &ee) {
		c := *ee
		c.Path = joinPath(p, c.Path)
		return &c
	}
	return err
}

func joinPath(outer, inner string) string {
	if inner == "" {
		return outer
	}
	if inner[0] == '.' || inner[0] == '[' {
		return outer + inner
	}
	return outer + "." + inner
}
