package kinds

import (
	"iter"

	"github.com/godets/godets/etf"
)

// Row is one stored object of a typed table: its key and its value.
type Row[K, V any] struct {
	Key   K
	Value V
}

// RowError reports one stored object that the handle's codecs cannot
// decode, yielded by Rows for that object alone: the iteration goes on with
// the next one. It matches ErrDecode, and Err is the codec's error (usually
// a *DecodeError whose Path says whether the key or the value failed).
type RowError struct {
	// Key is the object's stored key term (its first element), so the row
	// can be inspected or deleted through Table; nil when the object is not
	// a tuple.
	Key etf.Term
	// KeyDecoded reports whether the Row yielded with this error holds the
	// decoded key; otherwise its Key is the zero value.
	KeyDecoded bool
	Err        error
}

func (e *RowError) Error() string {
	if e.Key == nil {
		return "kinds: row: " + trimKinds(e.Err.Error())
	}
	return "kinds: row with key " + formatShort(e.Key) + ": " + trimKinds(e.Err.Error())
}

// Unwrap returns the codec's error.
func (e *RowError) Unwrap() error { return e.Err }

// Is makes every *RowError match ErrDecode, whatever its cause.
func (e *RowError) Is(target error) bool { return target == ErrDecode }

// SafeCode is ErrDecode's code, "decode_failed".
func (e *RowError) SafeCode() string { return ErrDecode.(*codedSentinel).code }

// SafeMessage is ErrDecode's sentence; the key stays in Error.
func (e *RowError) SafeMessage() string { return ErrDecode.(*codedSentinel).safe }

// formatShort writes a term in Erlang syntax if that is short, else
// describes its shape.
func formatShort(t etf.Term) string {
	if s := etf.Format(t); len(s) <= maxShown {
		return s
	}
	return describe(t)
}

func trimKinds(s string) string {
	const p = "kinds: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// rows traverses the table as Rows documents.
func (b *base[K, V]) rows() iter.Seq2[Row[K, V], error] {
	return func(yield func(Row[K, V], error) bool) {
		var a arena
		for obj, err := range b.t.RawAll() {
			if err != nil {
				yield(Row[K, V]{}, err)
				return
			}
			r, err := b.rowOf(obj, &a)
			if !yield(r, err) {
				return
			}
		}
	}
}

// rowOf decodes one stored object given as its bytes, directly if it can.
func (b *base[K, V]) rowOf(obj []byte, a *arena) (Row[K, V], error) {
	if k, v, ok := b.directPair(obj, a); ok {
		return Row[K, V]{Key: k, Value: v}, nil
	}
	t, err := termOf(obj)
	if err != nil {
		return Row[K, V]{}, &RowError{Err: err}
	}
	return b.row(t)
}

// row decodes one stored object. A good row adopts the engine's fresh
// terms; a bad one decodes its key with the copying Decode, because the
// RowError hands the raw key term to the caller as well.
func (b *base[K, V]) row(obj etf.Term) (Row[K, V], error) {
	var r Row[K, V]
	tup, ok := obj.(etf.Tuple)
	if !ok || len(tup) == 0 {
		return r, &RowError{Err: &DecodeError{Path: "object", Expected: "tuple of arity 2", Got: describe(obj)}}
	}
	if len(tup) != objectArity {
		k, kerr := b.kc.Decode(tup[0])
		if kerr == nil {
			r.Key = k
		}
		return r, &RowError{Key: tup[0], KeyDecoded: kerr == nil,
			Err: &DecodeError{Path: "object", Expected: "tuple of arity 2", Got: describe(obj)}}
	}
	v, verr := b.vc.decodeOwned(tup[1])
	if verr != nil {
		k, kerr := b.kc.Decode(tup[0])
		if kerr != nil {
			return r, &RowError{Key: tup[0], Err: within("key", kerr)}
		}
		r.Key = k
		return r, &RowError{Key: tup[0], KeyDecoded: true, Err: within("value", verr)}
	}
	k, kerr := b.kc.decodeOwned(tup[0])
	if kerr != nil {
		return r, &RowError{Key: tup[0], Err: within("key", kerr)}
	}
	r.Key, r.Value = k, v
	return r, nil
}
