package kinds

import "iter"

// The typed predicate of issue #21: a filter over the typed traversal, so
// a query that is easiest to say in Go (a prefix, a range, a field of a
// record) reads the table once, decoding each object straight into K and
// V, with no match specification and no terms.

// errpNilSelect is SelectSeq's panic for a nil error pointer (see errpNil).
const errpNilSelect = "kinds: SelectSeq needs a non-nil *error to report errors through; use Select for a slice and an error"

// keepNil is the panic for a nil predicate: it could only mean "no rows"
// or "every row", and either is better said with All.
const keepNil = "kinds: Select and SelectSeq need a non-nil predicate; use All for every row"

// selectSeq yields the rows that keep accepts, with all's error rules.
func (b *base[K, V]) selectSeq(keep func(K, V) bool, errp *error) iter.Seq2[K, V] {
	if keep == nil {
		panic(keepNil)
	}
	if errp == nil {
		panic(errpNilSelect)
	}
	rows := b.all(errp)
	return func(yield func(K, V) bool) {
		for k, v := range rows {
			if keep(k, v) && !yield(k, v) {
				return
			}
		}
	}
}

// selectRows collects the rows that keep accepts; an error gives no rows.
func (b *base[K, V]) selectRows(keep func(K, V) bool) ([]Row[K, V], error) {
	var err error
	var out []Row[K, V]
	for k, v := range b.selectSeq(keep, &err) {
		out = append(out, Row[K, V]{Key: k, Value: v})
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Select returns the rows for which keep returns true, in the table's
// storage order (All's). keep sees every row, decoded as All decodes it,
// and may keep the key and value it is given; it runs without the table's
// lock, as All's loop body does, so it may use the table, with the
// guarantees of All. The first storage or decode error ends the traversal and is
// returned with no rows: a row the codecs cannot read is an error here,
// as in All, since keep could not judge it. An empty result is a nil
// slice and no error.
func (s *Set[K, V]) Select(keep func(key K, value V) bool) ([]Row[K, V], error) {
	return s.b.selectRows(keep)
}

// SelectSeq is Select as an iterator over the rows keep accepts, with
// All's rules: it stops at the first error and stores it in *errp, which
// it clears when the traversal starts; a nil errp panics when SelectSeq
// is called. The loop body, like keep, may use the table.
func (s *Set[K, V]) SelectSeq(keep func(key K, value V) bool, errp *error) iter.Seq2[K, V] {
	return s.b.selectSeq(keep, errp)
}

// Select returns every object (key and value) for which keep returns
// true, as Set.Select does; a key with three values is judged three
// times, once with each.
func (s *Bag[K, V]) Select(keep func(key K, value V) bool) ([]Row[K, V], error) {
	return s.b.selectRows(keep)
}

// SelectSeq is Select as an iterator, as Set.SelectSeq describes.
func (s *Bag[K, V]) SelectSeq(keep func(key K, value V) bool, errp *error) iter.Seq2[K, V] {
	return s.b.selectSeq(keep, errp)
}

// Select returns every stored copy for which keep returns true, as
// Set.Select does.
func (s *DuplicateBag[K, V]) Select(keep func(key K, value V) bool) ([]Row[K, V], error) {
	return s.b.selectRows(keep)
}

// SelectSeq is Select as an iterator, as Set.SelectSeq describes.
func (s *DuplicateBag[K, V]) SelectSeq(keep func(key K, value V) bool, errp *error) iter.Seq2[K, V] {
	return s.b.selectSeq(keep, errp)
}
