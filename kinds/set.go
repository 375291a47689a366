package kinds

import (
	"iter"

	"github.com/godets/godets/dets"
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

// All returns an iterator over every key and value, in the table's
// storage order. The iterator stops at the first storage or decode error
// and stores it in *errp; check *errp after the loop:
//
//	var err error
//	for k, v := range set.All(&err) { ... }
//	if err != nil { ... }
//
// *errp is cleared when a traversal starts. A nil errp yields nothing. Do
// not change the table during the loop.
func (s *Set[K, V]) All(errp *error) iter.Seq2[K, V] { return s.b.all(errp) }

// Size returns the number of objects in the table.
func (s *Set[K, V]) Size() (int, error) { return tableSize(s.b.t) }

// UpdateCounter adds incr to the integer value stored under key and returns
// the new value, in one step that no other session can split. The key must
// exist and its value must be an integer; the result is decoded with the
// value codec, so V is an integer type with Int or Integer as its codec.
// An absent key gives an error matching ErrNotFound.
//
// Only sets have counters: OTP's dets:update_counter rejects bag and
// duplicate_bag tables, so Bag and DuplicateBag have no such method.
func (s *Set[K, V]) UpdateCounter(key K, incr int64) (V, error) {
	var zero V
	kt, err := s.b.key(key)
	if err != nil {
		return zero, err
	}
	n, err := updateCounter(s.b.t, kt, incr)
	if err != nil {
		return zero, err
	}
	v, err := s.b.vc.Decode(n)
	if err != nil {
		return zero, within("value", err)
	}
	return v, nil
}
