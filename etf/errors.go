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
)

// DecodeError says where and why decoding failed.
type DecodeError struct {
	Offset int    // byte offset in the input where the problem was found
	Reason string // what was wrong, e.g. "length 4000000 exceeds remaining 12 bytes"
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("etf: invalid external term at byte %d: %s", e.Offset, e.Reason)
}

// Is makes every *DecodeError match ErrDecode.
func (e *DecodeError) Is(target error) bool { return target == ErrDecode }

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
