package etf

// Erlang text syntax: the printer (Format, AppendFormat, FormatStrict) and
// the reader (Parse, ParseAll, Reader). Each job has its file: text_print.go
// writes terms, text_lex.go cuts text into tokens, text_parse.go builds
// terms from them, text_bits.go evaluates binary segments and
// text_consult.go reads streams of terms as file:consult/1 does. This file
// holds what they share: the decisions below, the limits and the errors.
//
// The target is what file:consult/1 accepts, checked against OTP 25: the
// erl_scan tokens, the erl_parse grammar for a single expression, and the
// erl_parse:normalise/1 rules that turn an expression into a term. Those
// rules allow literals, tuples, lists, maps with =>, binaries whose segments
// evaluate to constants, a unary + or - directly on a number, parentheses, and
// fun M:F/A. Everything else (variables, operators, records, calls) is not a
// term and is rejected, as erl rejects it.
//
// Decisions, all checked against erl 25:
//
//   - Non-ASCII characters are written as UTF-8 inside quotes. file:consult
//     reads UTF-8 unless the file's first two lines carry a "coding: latin-1"
//     comment; Reader and ParseAll honour that comment too.
//   - Characters that are not printable (controls, C1 controls, format and
//     unassigned code points) are written as escapes (\n, \t, \x{HEX}).
//   - A list is written as a string only when every element is a printable
//     code point or \n, \t, \r; otherwise as [1,2,3]. A binary is written as
//     <<"text">> when every byte is printable ASCII or \n, \t, \r, as
//     <<"text"/utf8>> when it is such UTF-8 text with non-ASCII characters,
//     and as <<1,2,3>> otherwise. A bit string ends with a Value:Bits segment.
//   - Floats use the shorter of plain and scientific notation, always with a
//     digit on both sides of the point (1.0e10, 0.1, -0.0), which is what
//     erl_scan requires; the digits are the shortest that round-trip.
//   - Map pairs are written in CompareExact order of their keys.
//   - Pids, references, ports and local funs have no text form that erl can
//     read. Format writes them as #Pid<HEX>, #Ref<HEX>, #Port<HEX> or
//     #Fun<HEX> (HEX is the raw external encoding) for people to read;
//     FormatStrict refuses them. External funs are written as fun M:F/A,
//     which erl and Parse both read back.
//   - The reader limits nesting to maxTextDepth levels (one more than
//     Decode's MaxDepth) and the bits that sized binary segments may add
//     beyond their source text (<<0:100000000>>) to 8 Mibit per term, so
//     hostile input cannot exhaust the stack or memory. Work is linear in
//     the input except for very long integer literals (n log^2 n).
//   - The reader follows OTP 25's reserved words, so a bare maybe or else
//     reads as an atom; the printer quotes them, as OTP 27 needs.
//   - Native endianness in binary segments is taken to be little-endian.

import (
	"errors"
)

const (
	// maxTextDepth bounds the nesting of tuples, lists, maps and parentheses
	// in FormatStrict and the reader: one level more than Decode's MaxDepth
	// (which counts from 0), so every term Decode returns has a text form.
	maxTextDepth = MaxDepth + 1
	// maxSegmentBits bounds, per term, the bits that binary segments with an
	// explicit size (<<0:1000000>>, <<"ab":4096>>) may produce beyond 64
	// bits per segment.
	maxSegmentBits = 1 << 23
	// maxTextAtom is Erlang's limit on the length of an atom.
	maxTextAtom = 255
)

// ErrNoText marks a term that has no Erlang text form that erl (or Parse)
// reads back as the same term. Details are in *FormatError.
var ErrNoText = errors.New("etf: term has no Erlang text form")

// FormatError says why FormatStrict could not write a term.
type FormatError struct {
	Reason string // e.g. "pid has no text form"
}

func (e *FormatError) Error() string { return "etf: cannot write term as Erlang text: " + e.Reason }

// Is makes every *FormatError match ErrNoText.
func (e *FormatError) Is(target error) bool { return target == ErrNoText }
