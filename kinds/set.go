package kinds

import (
	"iter"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// Set is a typed handle over a dets table of kind set whose objects are
// {Key, Value} tuples (keypos 1). At most one value is stored per key, and
// an insert replaces it (last write wins). It mirrors Gleam's slate/set.
//
// A handle does not own the table: it neither opens nor closes it. Inside an
// exclusive session (WithExclusiveSet) it is valid only during the callback.
// A Set is safe for concurrent use if the table is.
type Set[K, V any] struct {
	b base[K, V]
}

// NewSet returns a typed handle over t, which must be a set with key
// position 1; otherwise the error matches ErrTableMismatch.
func NewSet[K, V any](t *dets.Table, key Codec[K], value Codec[V]) (*Set[K, V], error) {
	b, err := newBase(t, dets.Set, key, value)
	if err != nil {
		return nil, err
	}
	return &Set[K, V]{b: b}, nil
}

// Table returns the underlying table, for operations the handle lacks.
func (s *Set[K, V]) Table() *dets.Table { return s.b.t }

// Insert stores value under key, replacing any value stored before.
func (s *Set[K, V]) Insert(key K, value V) error { return s.b.insert(key, value) }

// InsertNew stores value under key only if the key is absent, and reports
// whether it did.
func (s *Set[K, V]) InsertNew(key K, value V) (bool, error) { return s.b.insertNew(key, value) }

// Lookup returns the value stored under key. An absent key gives an error
// for which errors.Is(err, ErrNotFound) holds; storage errors and decode
// errors (errors.Is(err, ErrDecode)) never match ErrNotFound.
func (s *Set[K, V]) Lookup(key K) (V, error) {
	var (
		v     V
		verr  error
		found bool
	)
	direct, err := s.b.lookupDirect(key, func(obj []byte) error {
		if !found { // a set holds one
			found = true
			v, verr = s.b.decodeValue(obj)
		}
		return nil
	})
	if direct {
		switch {
		case err != nil:
			var zero V
			return zero, err
		case !found:
			var zero V
			return zero, ErrNotFound
		}
		return v, verr
	}
	objs, err := s.b.lookupRaw(key)
	if err != nil {
		var zero V
		return zero, err
	}
	if len(objs) == 0 {
		var zero V
		return zero, ErrNotFound
	}
	return s.b.value(objs[0])
}

// Member reports whether key has a value.
func (s *Set[K, V]) Member(key K) (bool, error) { return s.b.member(key) }

// Delete removes key and its value. Deleting an absent key is not an error.
func (s *Set[K, V]) Delete(key K) error { return s.b.delete(key) }

// DeleteObject removes key only if its value equals value (as Erlang
// compares terms: 1 and 1.0 differ).
func (s *Set[K, V]) DeleteObject(key K, value V) error { return s.b.deleteObject(key, value) }

// Rows returns an iterator over every object, in the table's storage
// order, that cannot lose an error:
//
//	for row, err := range set.Rows() {
//		var bad *kinds.RowError
//		if errors.As(err, &bad) {
//			log.Printf("skipping %v", err) // this object only; the loop goes on
//			continue
//		}
//		if err != nil {
//			return err // a storage error: the iteration has ended
//		}
//		use(row.Key, row.Value)
//	}
//
// An object that the codecs cannot decode yields a *RowError (matching
// ErrDecode) for that object alone, with row.Key set when the key decoded
// (RowError.KeyDecoded), and the iteration goes on. A storage error (a
// closed table, a damaged file) is yielded once, with a zero Row, and ends
// the iteration.
//
// The loop body may use and change the table, as with dets.Table.All:
// objects inserted or deleted during the loop may or may not be seen, and
// an object that stays in the table throughout is seen exactly once (the
// table waits for the loop's end to grow).
func (s *Set[K, V]) Rows() iter.Seq2[Row[K, V], error] { return s.b.rows() }

// All returns an iterator over every key and value, in the table's
// storage order, for callers that want all the rows or none: it stops at
// the first storage or decode error and stores it in *errp. Check *errp
// after the loop:
//
//	var err error
//	for k, v := range set.All(&err) { ... }
//	if err != nil { ... }
//
// *errp is cleared when a traversal starts. A nil errp panics when All is
// called, since such a loop could never report its error; Rows needs no
// pointer and reports a bad row without stopping. The loop body may change
// the table, as Rows describes.
func (s *Set[K, V]) All(errp *error) iter.Seq2[K, V] { return s.b.all(errp) }

// Size returns the number of objects in the table.
func (s *Set[K, V]) Size() (int, error) { return tableSize(s.b.t) }

// UpdateCounter adds incr to the integer value stored under key and returns
// the new value, in one step that no other session can split. The key must
// exist and its value must be an integer; V is an integer type with Int or
// Integer as its codec (or any codec that decodes integers). An absent key
// gives an error matching ErrNotFound.
//
// The new value is checked against the value codec before anything is
// written: a result that the codec would not decode (an int64 past
// math.MaxInt64, a uint8 below 0) gives an error matching ErrOutOfRange and
// leaves the stored value as it was. Only the result is checked, so a
// stored value out of range may be brought back into it. The raw
// dets.Table.UpdateCounter keeps OTP's semantics instead, where a counter
// may grow into a bignum.
//
// The check runs inside the engine's update, under the table's lock
// (dets.Table.UpdateCounterIf), so no other writer can come between the
// check and the write, and the file never holds a refused result, not
// even after a crash. The value codec's Decode therefore must not use the
// table.
//
// Only sets have counters: OTP's dets:update_counter rejects bag and
// duplicate_bag tables, so Bag and DuplicateBag have no such method.
func (s *Set[K, V]) UpdateCounter(key K, incr int64) (V, error) {
	var zero V
	kt, err := s.b.key(key)
	if err != nil {
		return zero, err
	}
	var v V
	_, err = updateCounter(s.b.t, kt, incr, func(n etf.Term) error {
		var derr error
		if v, derr = s.b.vc.Decode(n); derr != nil {
			return outOfRange(n, derr)
		}
		return nil
	})
	if err != nil {
		return zero, err
	}
	return v, nil
}
