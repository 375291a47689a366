package kinds

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/godets/godets/etf"
)

// TupleField is one element of a tuple codec built by Tuple or Record. Make
// it with Field.
type TupleField[T any] struct {
	encode func(*T) (etf.Term, error)
	decode func(etf.Term, *T) error
	// The field codec's direct path (direct.go); nil when it has none.
	appendRaw func([]byte, *T) ([]byte, bool)
	readRaw   func([]byte, *T, *arena) (int, bool)
}

// Field maps one tuple element to one field of the struct T. at returns a
// pointer to the field inside the struct it is given; the same function
// serves encoding (read through the pointer) and decoding (write through it):
//
//	kinds.Field(kinds.String, func(u *User) *string { return &u.Name })
func Field[T, F any](c Codec[F], at func(*T) *F) TupleField[T] {
	c = c.trusted()
	f := TupleField[T]{
		encode: func(v *T) (etf.Term, error) {
			if c.Encode == nil || at == nil {
				return nil, &EncodeError{Codec: "field", Reason: "field has no codec or accessor"}
			}
			return c.Encode(*at(v))
		},
		decode: func(t etf.Term, v *T) error {
			if c.Decode == nil || at == nil {
				return &DecodeError{Expected: "a field with a codec", Got: describe(t)}
			}
			f, err := c.Decode(t)
			if err != nil {
				return err
			}
			*at(v) = f
			return nil
		},
	}
	if at != nil && c.valid() && c.appendRaw != nil && c.readRaw != nil {
		f.appendRaw = func(dst []byte, v *T) ([]byte, bool) { return c.appendRaw(dst, *at(v)) }
		f.readRaw = func(b []byte, v *T, a *arena) (int, bool) {
			x, n, ok := c.readRaw(b, a)
			if ok {
				*at(v) = x
			}
			return n, ok
		}
	}
	return f
}

// Tuple maps a struct T to a tuple with one element per field, in order:
// {Field1, Field2, ...}.
//
//	type User struct{ Name string; Age int64 }
//	var UserCodec = kinds.Tuple(
//		kinds.Field(kinds.String, func(u *User) *string { return &u.Name }),
//		kinds.Field(kinds.Int, func(u *User) *int64 { return &u.Age }),
//	)
func Tuple[T any](fields ...TupleField[T]) Codec[T] {
	return tupleCodec("", false, fields)
}

// Record maps a struct T to an Erlang record: a tuple whose first element
// is the atom tag, then one element per field, as -record(tag, {...})
// stores it. Decoding checks the tag. The tag is any atom, the empty one included;
// one that is no atom (not UTF-8, or over 255 characters) makes every
// Encode fail with ErrEncode.
func Record[T any](tag string, fields ...TupleField[T]) Codec[T] {
	return tupleCodec(tag, true, fields)
}

func tupleCodec[T any](tag string, tagged bool, fields []TupleField[T]) Codec[T] {
	fields = append([]TupleField[T](nil), fields...)
	off := 0
	if tagged {
		off = 1
	}
	arity := len(fields) + off
	name := "tuple of arity " + strconv.Itoa(arity)
	var tagErr error
	if tagged {
		name = "record " + quoteShort(tag) + " (" + name + ")"
		if _, err := etf.Encode(etf.Atom(tag)); err != nil {
			tagErr = &EncodeError{Codec: name, Reason: "the record tag is not a valid atom"}
		}
	}
	c := Codec[T]{
		Name: name,
		Encode: func(v T) (etf.Term, error) {
			if tagErr != nil {
				return nil, tagErr
			}
			out := make(etf.Tuple, arity)
			if tagged {
				out[0] = etf.Atom(tag)
			}
			for i, f := range fields {
				t, err := f.encode(&v)
				if err != nil {
					return nil, within(elemPath(i+off), err)
				}
				out[i+off] = t
			}
			return out, nil
		},
		Decode: func(t etf.Term) (T, error) {
			var v T
			tup, ok := t.(etf.Tuple)
			if !ok || len(tup) != arity {
				return v, mismatch(name, t)
			}
			if tagged {
				if a, ok := tup[0].(etf.Atom); !ok || string(a) != tag {
					return v, &DecodeError{Path: ".1", Expected: "atom " + quoteShort(tag), Got: describe(tup[0])}
				}
			}
			for i, f := range fields {
				if err := f.decode(tup[i+off], &v); err != nil {
					var zero T
					return zero, within(elemPath(i+off), err)
				}
			}
			return v, nil
		},
	}
	directTuple(&c, tag, tagged, fields)
	return stampFast(c)
}

// directTuple gives a tuple codec the direct path when every field has
// one, the tuple fits SMALL_TUPLE_EXT and the tag is an atom.
func directTuple[T any](c *Codec[T], tag string, tagged bool, fields []TupleField[T]) {
	var head []byte // the tuple's header and tag, as etf.Encode writes them
	arity := len(fields)
	if tagged {
		enc, err := etf.Encode(etf.Atom(tag))
		if err != nil {
			return // Encode reports it
		}
		arity++
		head = enc[1:]
	}
	if arity > 255 {
		return
	}
	for _, f := range fields {
		if f.appendRaw == nil || f.readRaw == nil {
			return
		}
	}
	head = append([]byte{tagSmallTuple, byte(arity)}, head...)
	c.appendRaw = func(dst []byte, v T) ([]byte, bool) {
		dst = append(dst, head...)
		for _, f := range fields {
			var ok bool
			if dst, ok = f.appendRaw(dst, &v); !ok {
				return dst, false
			}
		}
		return dst, true
	}
	c.readRaw = func(b []byte, a *arena) (T, int, bool) {
		var v T
		if !bytes.HasPrefix(b, head) {
			return v, 0, false
		}
		off := len(head)
		for _, f := range fields {
			n, ok := f.readRaw(b[off:], &v, a)
			if !ok {
				var zero T
				return zero, 0, false
			}
			off += n
		}
		return v, off, true
	}
}

// elemPath names the 0-based tuple element i the way Erlang's element/2
// counts, from 1.
func elemPath(i int) string { return "." + strconv.Itoa(i+1) }

// Pair is a two-element tuple {A, B}, for values that need no struct.
type Pair[A, B any] struct {
	First  A
	Second B
}

// Tuple2 maps Pair[A, B] to the tuple {A, B}.
func Tuple2[A, B any](a Codec[A], b Codec[B]) Codec[Pair[A, B]] {
	return Tuple(
		Field(a, func(p *Pair[A, B]) *A { return &p.First }),
		Field(b, func(p *Pair[A, B]) *B { return &p.Second }),
	)
}

// List maps []T to a proper Erlang list of elements encoded by c. A nil or
// empty slice encodes as []; [] decodes as an empty, non-nil slice.
func List[T any](c Codec[T]) Codec[[]T] {
	name := "list"
	if c.Name != "" {
		name = "list of " + c.Name
	}
	return Codec[[]T]{
		Name: name,
		Encode: func(vs []T) (etf.Term, error) {
			if c.Encode == nil {
				return nil, &EncodeError{Codec: name, Reason: "element codec has no Encode"}
			}
			out := make(etf.List, len(vs))
			for i, v := range vs {
				t, err := c.Encode(v)
				if err != nil {
					return nil, within(listPath(i), err)
				}
				out[i] = t
			}
			return out, nil
		},
		Decode: func(t etf.Term) ([]T, error) {
			l, ok := t.(etf.List)
			if !ok {
				return nil, mismatch(name, t)
			}
			if c.Decode == nil {
				return nil, &DecodeError{Expected: name, Got: "a codec without Decode"}
			}
			out := make([]T, len(l))
			for i, e := range l {
				v, err := c.Decode(e)
				if err != nil {
					return nil, within(listPath(i), err)
				}
				out[i] = v
			}
			return out, nil
		},
	}
}

func listPath(i int) string { return "[" + strconv.Itoa(i) + "]" }

// Convert builds a codec for U on top of a codec for T, for enums, units and
// validated types. decode may reject a well-formed T; its error becomes a
// *DecodeError (kept as the cause, for errors.Is and errors.As) unless it
// already is one. encode errors likewise become *EncodeError.
//
//	var Level = kinds.Convert(kinds.Atom, parseLevel, func(l Level) (string, error) { return l.String(), nil })
func Convert[T, U any](c Codec[T], decode func(T) (U, error), encode func(U) (T, error)) Codec[U] {
	return Codec[U]{
		Name: c.Name,
		Encode: func(u U) (etf.Term, error) {
			if c.Encode == nil || encode == nil {
				return nil, &EncodeError{Codec: c.Name, Reason: "codec has no Encode"}
			}
			t, err := encode(u)
			if err != nil {
				if errors.Is(err, ErrEncode) {
					return nil, err
				}
				return nil, &EncodeError{Codec: c.Name, Reason: err.Error()}
			}
			return c.Encode(t)
		},
		Decode: func(x etf.Term) (U, error) {
			var zero U
			if c.Decode == nil || decode == nil {
				return zero, &DecodeError{Expected: c.Name, Got: "a codec without Decode"}
			}
			t, err := c.Decode(x)
			if err != nil {
				return zero, err
			}
			u, err := decode(t)
			if err != nil {
				if errors.Is(err, ErrDecode) {
					return zero, err
				}
				return zero, &DecodeError{Expected: c.Name, Got: describe(x), Err: err}
			}
			return u, nil
		},
	}
}
