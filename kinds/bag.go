package kinds

import (
	"iter"

	"github.com/godets/godets/dets"
)

// Bag is a typed handle over a dets table of kind bag whose objects are
// {Key, Value} tuples (keypos 1). A key holds any number of distinct
// values; inserting an object that is already stored changes nothing. It
// mirrors Gleam's slate/bag.
//
// A handle does not own the table. Inside an exclusive session
// (WithExclusiveBag) it is valid only during the callback.
type Bag[K, V any] struct {
	b base[K, V]
}

// NewBag returns a typed handle over t, which must be a bag with key
// position 1; otherwise the error matches ErrTableMismatch.
func NewBag[K, V any](t *dets.Table, key Codec[K], value Codec[V]) (*Bag[K, V], error) {
	b, err := newBase(t, dets.Bag, key, value)
	if err != nil {
		return nil, err
	}
	return &Bag[K, V]{b: b}, nil
}

// Table returns the underlying table, for operations the handle lacks.
func (s *Bag[K, V]) Table() *dets.Table { return s.b.t }

// Insert adds value under key unless that exact object is already stored.
func (s *Bag[K, V]) Insert(key K, value V) error { return s.b.insert(key, value) }

// InsertNew adds value under key only if the key has no values at all, and
// reports whether it did.
func (s *Bag[K, V]) InsertNew(key K, value V) (bool, error) { return s.b.insertNew(key, value) }

// Lookup returns every value stored under key; an absent key gives an empty
// slice and no error. A stored object the value codec rejects gives an
// error matching ErrDecode and no values.
func (s *Bag[K, V]) Lookup(key K) ([]V, error) { return s.b.lookupAll(key) }

// Member reports whether key has any value.
func (s *Bag[K, V]) Member(key K) (bool, error) { return s.b.member(key) }

// Delete removes key and all its values.
func (s *Bag[K, V]) Delete(key K) error { return s.b.delete(key) }

// DeleteObject removes the object {key, value}, keeping the key's other
// values.
func (s *Bag[K, V]) DeleteObject(key K, value V) error { return s.b.deleteObject(key, value) }

// Rows returns an iterator over every object as a Row; a key with three
// values appears three times. A bad object yields a *RowError and the
// iteration goes on, a storage error ends it, as Set.Rows describes.
func (s *Bag[K, V]) Rows() iter.Seq2[Row[K, V], error] { return s.b.rows() }

// All returns an iterator over every object as a key and a value; a key
// with three values appears three times. Errors are reported through errp
// as Set.All describes.
func (s *Bag[K, V]) All(errp *error) iter.Seq2[K, V] { return s.b.all(errp) }

// Size returns the number of objects in the table.
func (s *Bag[K, V]) Size() (int, error) { return tableSize(s.b.t) }

// DuplicateBag is a typed handle over a dets table of kind duplicate_bag
// whose objects are {Key, Value} tuples (keypos 1). A key holds any number
// of values, and equal objects are kept as separate copies. It mirrors
// Gleam's slate/duplicate_bag.
//
// A handle does not own the table. Inside an exclusive session
// (WithExclusiveDuplicateBag) it is valid only during the callback.
type DuplicateBag[K, V any] struct {
	b base[K, V]
}

// NewDuplicateBag returns a typed handle over t, which must be a
// duplicate_bag with key position 1; otherwise the error matches
// ErrTableMismatch.
func NewDuplicateBag[K, V any](t *dets.Table, key Codec[K], value Codec[V]) (*DuplicateBag[K, V], error) {
	b, err := newBase(t, dets.DuplicateBag, key, value)
	if err != nil {
		return nil, err
	}
	return &DuplicateBag[K, V]{b: b}, nil
}

// Table returns the underlying table, for operations the handle lacks.
func (s *DuplicateBag[K, V]) Table() *dets.Table { return s.b.t }

// Insert adds one more copy of the object {key, value}.
func (s *DuplicateBag[K, V]) Insert(key K, value V) error { return s.b.insert(key, value) }

// InsertNew adds {key, value} only if the key has no values at all, and
// reports whether it did.
func (s *DuplicateBag[K, V]) InsertNew(key K, value V) (bool, error) {
	return s.b.insertNew(key, value)
}

// Lookup returns every value stored under key, one entry per stored copy;
// an absent key gives an empty slice and no error.
func (s *DuplicateBag[K, V]) Lookup(key K) ([]V, error) { return s.b.lookupAll(key) }

// Member reports whether key has any value.
func (s *DuplicateBag[K, V]) Member(key K) (bool, error) { return s.b.member(key) }

// Delete removes key and all its values.
func (s *DuplicateBag[K, V]) Delete(key K) error { return s.b.delete(key) }

// DeleteObject removes every copy of the object {key, value}, as OTP does,
// keeping the key's other values.
func (s *DuplicateBag[K, V]) DeleteObject(key K, value V) error {
	return s.b.deleteObject(key, value)
}

// Rows returns an iterator over every object as a Row; each stored copy
// appears once. A bad object yields a *RowError and the iteration goes on,
// a storage error ends it, as Set.Rows describes.
func (s *DuplicateBag[K, V]) Rows() iter.Seq2[Row[K, V], error] { return s.b.rows() }

// All returns an iterator over every object as a key and a value; each
// stored copy appears once. Errors are reported through errp as Set.All
// describes.
func (s *DuplicateBag[K, V]) All(errp *error) iter.Seq2[K, V] { return s.b.all(errp) }

// Size returns the number of objects in the table, counting every copy.
func (s *DuplicateBag[K, V]) Size() (int, error) { return tableSize(s.b.t) }
