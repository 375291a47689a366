package kinds

import (
	"errors"
	"fmt"

	"github.com/godets/godets/exclusive"
)

var (
	// ErrNotFound is returned by Set.Lookup when the key has no object. It is
	// never wrapped around a storage error, so errors.Is(err, ErrNotFound)
	// separates "absent" from "could not read", as the seed's
	// Error(slate.NotFound) does.
	ErrNotFound error = &codedSentinel{
		msg:  "kinds: key not found",
		code: "not_found",
		safe: "The key has no value in the table.",
	}

	// ErrDecode marks every term that a codec could not turn into a Go value.
	// Details are in *DecodeError.
	ErrDecode error = &codedSentinel{
		msg:  "kinds: term does not match codec",
		code: "decode_failed",
		safe: "A stored term does not match the type the table is read as.",
	}

	// ErrEncode marks every Go value that a codec could not turn into a term
	// (a NaN float, an atom over 255 characters). Details are in *EncodeError.
	ErrEncode error = &codedSentinel{
		msg:  "kinds: value cannot be encoded",
		code: "encode_failed",
		safe: "A value has no Erlang term form.",
	}

	// ErrTableMismatch is returned when a handle is made over a table whose
	// kind or key position does not match: typed handles need {Key, Value}
	// objects with keypos 1 in a table of the handle's kind.
	ErrTableMismatch error = &codedSentinel{
		msg:  "kinds: table does not match handle",
		code: "table_mismatch",
		safe: "The table's kind or key position does not match the typed handle.",
	}

	// ErrOutOfRange is returned by Set.UpdateCounter when the new value would
	// not decode with the value codec (an int64 counter past
	// math.MaxInt64, a uint8 below 0). Nothing is written. Details are in
	// *OutOfRangeError.
	ErrOutOfRange error = &codedSentinel{
		msg:  "kinds: counter result out of the value codec's range",
		code: "out_of_range",
		safe: "The counter's new value does not fit the table's value type; the counter is unchanged.",
	}
)

// codedSentinel is the type of the package's sentinels. Besides Error it
// gives exclusive.Code a stable code and exclusive.Message a sentence that
// names no path and quotes no stored data (exclusive.CodedError), so
// services can show kinds errors to end users the way they show session
// errors.
type codedSentinel struct{ msg, code, safe string }

func (e *codedSentinel) Error() string       { return e.msg }
func (e *codedSentinel) SafeCode() string    { return e.code }
func (e *codedSentinel) SafeMessage() string { return e.safe }

// The coded errors, checked at compile time.
var (
	_ exclusive.CodedError = (*codedSentinel)(nil)
	_ exclusive.CodedError = (*DecodeError)(nil)
	_ exclusive.CodedError = (*EncodeError)(nil)
	_ exclusive.CodedError = (*OutOfRangeError)(nil)
	_ exclusive.CodedError = (*RowError)(nil)
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

// SafeCode is ErrDecode's code, "decode_failed".
func (e *DecodeError) SafeCode() string { return ErrDecode.(*codedSentinel).code }

// SafeMessage is ErrDecode's sentence: Got may quote stored data, so the
// details stay in Error.
func (e *DecodeError) SafeMessage() string { return ErrDecode.(*codedSentinel).safe }

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

// SafeCode is ErrEncode's code, "encode_failed".
func (e *EncodeError) SafeCode() string { return ErrEncode.(*codedSentinel).code }

// SafeMessage is ErrEncode's sentence.
func (e *EncodeError) SafeMessage() string { return ErrEncode.(*codedSentinel).safe }

// OutOfRangeError is Set.UpdateCounter's refusal of a result that the value
// codec cannot decode. The stored value is unchanged.
type OutOfRangeError struct {
	Result   string // the refused result, in decimal
	Expected string // what the value codec accepts, e.g. "integer in int64 range"
}

func (e *OutOfRangeError) Error() string {
	return "kinds: counter result " + e.Result + " is out of range: the value codec expects " + e.Expected + "; the counter is unchanged"
}

// Is makes every *OutOfRangeError match ErrOutOfRange.
func (e *OutOfRangeError) Is(target error) bool { return target == ErrOutOfRange }

// SafeCode is ErrOutOfRange's code, "out_of_range".
func (e *OutOfRangeError) SafeCode() string { return ErrOutOfRange.(*codedSentinel).code }

// SafeMessage is ErrOutOfRange's sentence.
func (e *OutOfRangeError) SafeMessage() string { return ErrOutOfRange.(*codedSentinel).safe }

// mismatch builds the error for a term of the wrong shape.
func mismatch(expected string, got any) error {
	return &DecodeError{Expected: expected, Got: describe(got)}
}

// within prefixes the path of a codec error with p, so nested codecs report
// where in the object they failed. A *DecodeError or *EncodeError that a
// caller's codec wrapped (fmt.Errorf with %w, errors.Join) keeps its
// wrapper: the result is a codecErrorIn. Other errors pass through
// unchanged.
func within(p string, err error) error {
	switch e := err.(type) {
	case *DecodeError:
		c := *e
		c.Path = joinPath(p, c.Path)
		return &c
	case *EncodeError:
		c := *e
		c.Path = joinPath(p, c.Path)
		return &c
	case *codecErrorIn:
		return e.under(p)
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return (&codecErrorIn{orig: err, found: de}).under(p)
	}
	var ee *EncodeError
	if errors.As(err, &ee) {
		return (&codecErrorIn{orig: err, found: ee}).under(p)
	}
	return err
}

// codecErrorIn is a codec error inside a caller's wrapper, met at prefix
// inside the object. errors.As finds the *DecodeError or *EncodeError with
// its whole path (view); errors.Is sees the caller's chain (orig) too.
type codecErrorIn struct {
	prefix string
	orig   error // what the codec returned
	found  error // the *DecodeError or *EncodeError inside orig
	view   error // found with prefix joined to its path
}

func (e *codecErrorIn) under(p string) *codecErrorIn {
	c := &codecErrorIn{prefix: joinPath(p, e.prefix), orig: e.orig, found: e.found}
	switch f := e.found.(type) {
	case *DecodeError:
		v := *f
		v.Path = joinPath(c.prefix, v.Path)
		c.view = &v
	case *EncodeError:
		v := *f
		v.Path = joinPath(c.prefix, v.Path)
		c.view = &v
	}
	return c
}

func (e *codecErrorIn) Error() string   { return "kinds: " + e.prefix + ": " + e.orig.Error() }
func (e *codecErrorIn) Unwrap() []error { return []error{e.view, e.orig} }

func joinPath(outer, inner string) string {
	if inner == "" {
		return outer
	}
	if inner[0] == '.' || inner[0] == '[' {
		return outer + inner
	}
	return outer + "." + inner
}
