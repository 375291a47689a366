package etf

import (
	"errors"
	"fmt"
)

var (
	// ErrDecode marks every error caused by bytes that are not a valid
	// external term encoding. Details are in *DecodeError.
	ErrDecode = errors.New("etf: invalid external term")
	// ErrEncode marks a term that cannot be encoded (a NaN float, an atom
	// over 255 characters, a malformed Bitstring, a nil Term).
	ErrEncode = errors.New("etf: term cannot be encoded")
	// ErrSyntax marks text that is not a valid Erlang term. Details are in
	// *SyntaxError.
	ErrSyntax = errors.New("etf: syntax error")
	// ErrTooDeep marks a term nested deeper than MaxDepth. OTP writes and
	// reads such terms; Decode does not build them, so that hostile input
	// cannot exhaust the stack. From Validate it means the rest of the
	// term is sound (see Validate); it always matches ErrDecode too.
	ErrTooDeep = errors.New("etf: term nested deeper than MaxDepth")
)

// DecodeError says where and why decoding failed.
type DecodeError struct {
	Offset int    // byte offset in the input where the problem was found
	Reason string // what was wrong, e.g. "length 4000000 exceeds remaining 12 bytes"
	// Deep says the term nests deeper than MaxDepth at Offset: the error
	// matches ErrTooDeep, and Reason is empty or "(in decompressed data)".
	Deep bool
}

func (e *DecodeError) Error() string {
	if e.Deep {
		where := ""
		if e.Reason != "" {
			where = " " + e.Reason
		}
		return fmt.Sprintf("etf: term nested deeper than %d levels at byte %d%s (OTP reads it; too deep to decode here)",
			MaxDepth, e.Offset, where)
	}
	return fmt.Sprintf("etf: invalid external term at byte %d: %s", e.Offset, e.Reason)
}

// Is makes every *DecodeError match ErrDecode, and one for a term nested
// too deeply ErrTooDeep as well.
func (e *DecodeError) Is(target error) bool {
	return target == ErrDecode || e.Deep && target == ErrTooDeep
}

// EncodeError says which term could not be encoded.
type EncodeError struct {
	Reason string
}

func (e *EncodeError) Error() string { return "etf: cannot encode term: " + e.Reason }

// Is makes every *EncodeError match ErrEncode.
func (e *EncodeError) Is(target error) bool { return target == ErrEncode }

// SyntaxError says where Erlang text failed to parse.
type SyntaxError struct {
	Line, Col int // 1-based position of the problem
	Reason    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("etf: syntax error at line %d, column %d: %s", e.Line, e.Col, e.Reason)
}

// Is makes every *SyntaxError match ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }
