package kinds

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/godets/godets/etf"
)

// Codec converts a Go value of type T to an Erlang term and back.
//
// A Codec is a plain struct of two functions, so a custom codec is a
// composite literal and needs no named type:
//
//	var Celsius = kinds.Codec[Temp]{
//		Name:   "float",
//		Encode: func(t Temp) (etf.Term, error) { return etf.Float(t), nil },
//		Decode: func(x etf.Term) (Temp, error) { ... },
//	}
//
// Decode must return an error matching ErrDecode (ideally a *DecodeError)
// for a term of the wrong shape, never a zero value and never a panic.
// Encode returns an error matching ErrEncode for a value that has no term
// form. Both functions must be safe for concurrent use. Most users build
// codecs from the built-ins (String, Int, ...) and the combinators (Tuple,
// Record, Tuple2, List, Convert). A copy of a built-in with Encode or
// Decode replaced runs the replacement: the built-ins' faster internal
// paths serve only the functions they were made with.
type Codec[T any] struct {
	// Name says what the codec expects, in Erlang terms ("binary",
	// "tuple of arity 2"); it appears as Expected in decode errors.
	Name   string
	Encode func(T) (etf.Term, error)
	Decode func(etf.Term) (T, error)

	// Fast paths that the handles use when a built-in codec sets them;
	// nil means Encode or Decode. They exist because a handle knows what
	// a caller of Encode and Decode cannot: how long the term lives.
	//
	// borrow encodes v into a term that may share memory with v. The
	// handles pass such terms only to the engine, which reads them and
	// never writes to them or hands them back (it returns freshly decoded
	// terms), so a Binary over an immutable string's bytes is safe.
	borrow func(T) (etf.Term, error)
	// adopt decodes a term that the caller owns and drops afterwards; the
	// result may share memory with it. The handles use it for terms that
	// the engine returned, which etf.Decode builds afresh for every call.
	adopt func(etf.Term) (T, error)

	// The direct path (direct.go), set by the built-ins and by Tuple and
	// Record over codecs that have it; nil means the term path.
	//
	// appendRaw appends the body (no version byte) of v's encoding, the
	// bytes etf.Encode writes for Encode's term; ok false leaves dst to
	// Encode, which reports why.
	appendRaw func(dst []byte, v T) ([]byte, bool)
	// readRaw decodes the body at the front of b and returns its length;
	// ok false says "take Decode on the term", which gives the value or
	// the error. It copies what it keeps (into a when not nil): b is
	// borrowed.
	readRaw func(b []byte, a *arena) (v T, n int, ok bool)
	// binString marks String's readRaw (a binary read as a string), so a
	// handle of two such codecs reads a pair in one go (directStrings).
	binString bool

	// encMade and decMade are the Encode and Decode the fast paths were
	// made with (stampFast). A copy of a built-in whose Encode or Decode
	// the caller replaced keeps the fields above; trusted drops those
	// that no longer belong, so the caller's functions run. They are
	// compared as function values (closureID), not by their code: every
	// Record's Encode has the same code. Holding them keeps their
	// identity from being reused while c exists.
	encMade func(T) (etf.Term, error)
	decMade func(etf.Term) (T, error)
}

// stampFast records that c's fast paths belong to its Encode and Decode.
func stampFast[T any](c Codec[T]) Codec[T] {
	c.encMade, c.decMade = c.Encode, c.Decode
	return c
}

// trusted returns c without the fast paths whose Encode or Decode was
// replaced after stampFast: the encoding ones (borrow, appendRaw) follow
// Encode, the decoding ones (adopt, readRaw, binString) follow Decode.
// Every handle and combinator takes its codecs through it.
func (c Codec[T]) trusted() Codec[T] {
	if (c.borrow != nil || c.appendRaw != nil) && closureID(c.Encode) != closureID(c.encMade) {
		c.borrow, c.appendRaw = nil, nil
	}
	if (c.adopt != nil || c.readRaw != nil || c.binString) && closureID(c.Decode) != closureID(c.decMade) {
		c.adopt, c.readRaw, c.binString = nil, nil, false
	}
	return c
}

// valid reports whether both functions are set.
func (c Codec[T]) valid() bool { return c.Encode != nil && c.Decode != nil }

// encodeBorrowed encodes v for a call that only reads the term.
func (c *Codec[T]) encodeBorrowed(v T) (etf.Term, error) {
	if c.borrow != nil {
		return c.borrow(v)
	}
	return c.Encode(v)
}

// decodeOwned decodes a term nobody else references.
func (c *Codec[T]) decodeOwned(t etf.Term) (T, error) {
	if c.adopt != nil {
		return c.adopt(t)
	}
	return c.Decode(t)
}

// String stores a Go string as an Erlang binary, the way Gleam and Elixir
// store their strings. Decoding accepts any binary: like Go strings, the
// bytes need not be valid UTF-8.
var String = stampFast(Codec[string]{
	Name: "binary",
	Encode: func(s string) (etf.Term, error) {
		return etf.Binary(s), nil
	},
	Decode: func(t etf.Term) (string, error) {
		if b, ok := t.(etf.Binary); ok {
			return string(b), nil
		}
		return "", mismatch("binary", t)
	},
	borrow: func(s string) (etf.Term, error) {
		return etf.Binary(bytesView(s)), nil
	},
	adopt: func(t etf.Term) (string, error) {
		if b, ok := t.(etf.Binary); ok {
			return stringView(b), nil
		}
		return "", mismatch("binary", t)
	},
	appendRaw: appendStringRaw,
	readRaw:   readStringRaw,
	binString: true,
})

// Bytes stores a byte slice as an Erlang binary. Encode does not copy: the
// caller must not change the slice while the call that encodes it runs.
// Decode returns the term's own bytes, which the caller then owns (terms
// that the table returns are fresh and not shared).
var Bytes = stampFast(Codec[[]byte]{
	Name: "binary",
	Encode: func(b []byte) (etf.Term, error) {
		return etf.Binary(b), nil
	},
	Decode: func(t etf.Term) ([]byte, error) {
		if b, ok := t.(etf.Binary); ok {
			return []byte(b), nil
		}
		return nil, mismatch("binary", t)
	},
	appendRaw: appendBinary,
	readRaw:   readBytesRaw,
})

// Charlist stores a Go string as an Erlang string: a list of Unicode code
// points, the form Erlang's "abc" literals have. Encoding needs valid UTF-8.
var Charlist = Codec[string]{
	Name: "list of code points",
	Encode: func(s string) (etf.Term, error) {
		if !utf8.ValidString(s) {
			return nil, &EncodeError{Codec: "charlist", Reason: "string is not valid UTF-8"}
		}
		return etf.Str(s), nil
	},
	Decode: func(t etf.Term) (string, error) {
		if l, ok := t.(etf.List); ok {
			if s, ok := l.AsString(); ok {
				return s, nil
			}
			return "", &DecodeError{Expected: "list of code points", Got: "list with a non-code-point element"}
		}
		return "", mismatch("list of code points", t)
	},
}

// Int stores an int64 as an Erlang integer. Decoding an integer outside the
// int64 range is a decode error, not a truncation.
var Int = Integer[int64]()

// Float stores a float64 as an Erlang float. NaN and infinities have no
// Erlang form and fail to encode. Decoding accepts only floats, not
// integers, as Gleam's decode.float does on the Erlang target.
var Float = stampFast(Codec[float64]{
	Name: "float",
	Encode: func(f float64) (etf.Term, error) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &EncodeError{Codec: "float", Reason: fmt.Sprintf("%v has no Erlang form", f)}
		}
		return etf.Float(f), nil
	},
	Decode: func(t etf.Term) (float64, error) {
		if f, ok := t.(etf.Float); ok {
			return float64(f), nil
		}
		return 0, mismatch("float", t)
	},
	appendRaw: appendFloatRaw,
	readRaw:   readFloatRaw,
})

// Bool stores a bool as the atom true or false.
var Bool = stampFast(Codec[bool]{
	Name: "atom true or false",
	Encode: func(b bool) (etf.Term, error) {
		return etf.Bool(b), nil
	},
	Decode: func(t etf.Term) (bool, error) {
		if a, ok := t.(etf.Atom); ok {
			switch a {
			case etf.True:
				return true, nil
			case etf.False:
				return false, nil
			}
		}
		return false, mismatch("atom true or false", t)
	},
	appendRaw: appendBoolRaw,
	readRaw:   readBoolRaw,
})

// maxAtomChars is Erlang's limit on the characters in one atom.
const maxAtomChars = 255

// Atom stores a Go string as an Erlang atom. The string must be valid UTF-8
// of at most 255 characters. Atoms are never garbage collected in the
// BEAM, so store unbounded user input with String instead.
var Atom = stampFast(Codec[string]{
	Name: "atom",
	Encode: func(s string) (etf.Term, error) {
		if !utf8.ValidString(s) {
			return nil, &EncodeError{Codec: "atom", Reason: "text is not valid UTF-8"}
		}
		if n := utf8.RuneCountInString(s); n > maxAtomChars {
			return nil, &EncodeError{Codec: "atom", Reason: fmt.Sprintf("%d characters exceed the limit of %d", n, maxAtomChars)}
		}
		return etf.Atom(s), nil
	},
	Decode: func(t etf.Term) (string, error) {
		if a, ok := t.(etf.Atom); ok {
			return string(a), nil
		}
		return "", mismatch("atom", t)
	},
	appendRaw: appendAtomRaw,
	readRaw:   readAtomRaw,
})

// Term passes Erlang terms through unchanged, for values of any shape.
var Term = Codec[etf.Term]{
	Name: "any term",
	Encode: func(t etf.Term) (etf.Term, error) {
		if t == nil {
			return nil, &EncodeError{Codec: "term", Reason: "nil is not a term"}
		}
		return t, nil
	},
	Decode: func(t etf.Term) (etf.Term, error) {
		if t == nil {
			return nil, mismatch("any term", t)
		}
		return t, nil
	},
}

// integer lists the Go integer types that Integer accepts.
type integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// Integer stores any Go integer type as an Erlang integer. Decoding checks
// the range of T: 300 does not decode into a uint8.
func Integer[T integer]() Codec[T] {
	var zero T
	inRange := fmt.Sprintf("integer in %T range", zero)
	return stampFast(Codec[T]{
		Name: "integer",
		Encode: func(v T) (etf.Term, error) {
			if v < 0 {
				return etf.Int(int64(v)), nil
			}
			if uint64(v) <= math.MaxInt64 {
				return etf.Int(int64(v)), nil
			}
			return etf.NewUint(uint64(v)), nil
		},
		Decode: func(t etf.Term) (T, error) {
			switch x := t.(type) {
			case etf.Int:
				v := T(x)
				if int64(v) == int64(x) && (v < 0) == (x < 0) {
					return v, nil
				}
				return 0, &DecodeError{Expected: inRange, Got: describe(t)}
			case *etf.BigInt:
				if x != nil && x.Sign() > 0 {
					if b := x.Big(); b.IsUint64() {
						u := b.Uint64()
						if v := T(u); v > 0 && uint64(v) == u {
							return v, nil
						}
					}
				}
				return 0, &DecodeError{Expected: inRange, Got: describe(t)}
			}
			return 0, mismatch("integer", t)
		},
		appendRaw: appendIntRaw[T],
		readRaw:   readIntRaw[T],
	})
}
