// Package model is a reference model of DETS table semantics for tests:
// set, bag and duplicate_bag, with OTP's rules (docs/reliability.md §2).
//
// Rules (OTP dets, checked against the engine's own tests and OTP 25):
//   - keys compare with =:= (exact): 1 and 1.0 are different keys;
//   - set: an insert replaces the object under its key (last write wins);
//   - bag: an insert of an object identical (=:=) to a stored one moves it
//     to the end of its key's list; distinct objects append;
//   - duplicate_bag: an insert always appends, copies are kept;
//   - delete_object removes every object identical to the argument (all
//     copies in a duplicate_bag; a set only if the stored one is identical);
//   - insert_new inserts all of its objects only if none of their keys is
//     present, and reports whether it did;
//   - update_counter (sets only) adds to an integer element.
//
// The package imports etf but not dets (dets's in-package tests import it).
// Kind values equal dets.Kind values (Set 1, Bag 2, DuplicateBag 3).
package model

import (
	"errors"
	"iter"
	"maps"
	"slices"

	"github.com/godets/godets/etf"
)

// Kind is the table type; the values equal dets.Kind's.
type Kind uint8

const (
	Set          Kind = 1
	Bag          Kind = 2
	DuplicateBag Kind = 3
)

// ErrBadArgument is returned by UpdateCounter for a missing key, a bad
// position, a non-integer element or a non-set table.
var ErrBadArgument = errors.New("model: bad argument")

// Model is one table's logical content.
type Model struct {
	kind   Kind
	keyPos int
	keys   map[string][]etf.Term // key encoding -> objects in order
}

// New returns an empty model; keyPos is 1-based.
func New(kind Kind, keyPos int) *Model {
	if keyPos < 1 {
		keyPos = 1
	}
	return &Model{kind: kind, keyPos: keyPos, keys: map[string][]etf.Term{}}
}

// Kind returns the model's kind.
func (m *Model) Kind() Kind { return m.kind }

// Enc is the canonical encoding used as identity for keys and objects. It
// panics on a term etf cannot encode (tests build their terms).
func Enc(t etf.Term) string {
	b, err := etf.Encode(t)
	if err != nil {
		panic("model: " + err.Error())
	}
	return string(b)
}

// KeyOf returns the key of obj, or false if obj is not a tuple with at
// least keyPos elements.
func (m *Model) KeyOf(obj etf.Term) (etf.Term, bool) {
	tu, ok := obj.(etf.Tuple)
	if !ok || len(tu) < m.keyPos {
		return nil, false
	}
	return tu[m.keyPos-1], true
}

func (m *Model) keyEnc(obj etf.Term) string {
	k, ok := m.KeyOf(obj)
	if !ok {
		panic("model: object is not a tuple with the key position")
	}
	return Enc(k)
}

// Insert applies objs in order.
func (m *Model) Insert(objs ...etf.Term) {
	for _, o := range objs {
		k := m.keyEnc(o)
		switch m.kind {
		case Set:
			m.keys[k] = []etf.Term{o}
		case Bag:
			l := slices.DeleteFunc(m.keys[k], func(x etf.Term) bool { return etf.Equal(x, o) })
			m.keys[k] = append(l, o)
		default:
			m.keys[k] = append(m.keys[k], o)
		}
	}
}

// InsertNew inserts objs if none of their keys is present.
func (m *Model) InsertNew(objs ...etf.Term) bool {
	for _, o := range objs {
		if len(m.keys[m.keyEnc(o)]) > 0 {
			return false
		}
	}
	m.Insert(objs...)
	return true
}

// Delete removes every object under key.
func (m *Model) Delete(key etf.Term) { delete(m.keys, Enc(key)) }

// DeleteObject removes every object identical to obj.
func (m *Model) DeleteObject(obj etf.Term) {
	k := m.keyEnc(obj)
	l := slices.DeleteFunc(m.keys[k], func(x etf.Term) bool { return etf.Equal(x, obj) })
	if len(l) == 0 {
		delete(m.keys, k)
	} else {
		m.keys[k] = l
	}
}

// DeleteOne removes the first object identical to obj: one copy of a
// duplicate_bag's object, as a repair drops when one record is damaged.
func (m *Model) DeleteOne(obj etf.Term) {
	k := m.keyEnc(obj)
	l := m.keys[k]
	i := slices.IndexFunc(l, func(x etf.Term) bool { return etf.Equal(x, obj) })
	switch {
	case i < 0:
	case len(l) == 1:
		delete(m.keys, k)
	default:
		m.keys[k] = append(l[:i:i], l[i+1:]...)
	}
}

// DeleteAllObjects empties the table.
func (m *Model) DeleteAllObjects() { clear(m.keys) }

// UpdateCounter adds incr to the integer at 1-based pos of the object under
// key (a set only) and returns the new value. Only etf.Int values that stay
// in the int64 range are modelled.
func (m *Model) UpdateCounter(key etf.Term, pos int, incr int64) (etf.Term, error) {
	l := m.keys[Enc(key)]
	if m.kind != Set || len(l) == 0 {
		return nil, ErrBadArgument
	}
	tu := slices.Clone(l[0].(etf.Tuple))
	if pos == 0 {
		pos = m.keyPos + 1
	}
	if pos < 1 || pos > len(tu) || pos == m.keyPos {
		return nil, ErrBadArgument
	}
	v, ok := tu[pos-1].(etf.Int)
	if !ok {
		return nil, ErrBadArgument
	}
	s := v + etf.Int(incr)
	if (incr > 0 && s < v) || (incr < 0 && s > v) {
		return nil, ErrBadArgument // overflow: out of the model's range
	}
	tu[pos-1] = s
	m.keys[Enc(key)] = []etf.Term{tu}
	return s, nil
}

// Lookup returns the objects under key in order.
func (m *Model) Lookup(key etf.Term) []etf.Term { return slices.Clone(m.keys[Enc(key)]) }

// Len returns the number of objects.
func (m *Model) Len() int {
	n := 0
	for _, l := range m.keys {
		n += len(l)
	}
	return n
}

// NumKeys returns the number of keys present.
func (m *Model) NumKeys() int { return len(m.keys) }

// Terms returns every object, sorted by etf.CompareExact (a multiset, so
// two tables compare element by element).
func (m *Model) Terms() []etf.Term {
	var out []etf.Term
	for _, l := range m.keys {
		out = append(out, l...)
	}
	slices.SortStableFunc(out, etf.CompareExact)
	return out
}

// ByKey yields the objects of each present key, in insert order; the keys
// come in no fixed order (tests use it to pick existing objects). The
// slices are the model's own: callers must not modify them.
func (m *Model) ByKey() iter.Seq[[]etf.Term] {
	return func(yield func([]etf.Term) bool) {
		for _, l := range m.keys {
			if !yield(l) {
				return
			}
		}
	}
}

// Keys returns the encodings of the keys present.
func (m *Model) Keys() []string { return slices.Sorted(maps.Keys(m.keys)) }

// Objects returns the sorted encodings of all objects (a multiset).
func (m *Model) Objects() []string {
	var out []string
	for _, l := range m.keys {
		for _, o := range l {
			out = append(out, Enc(o))
		}
	}
	slices.Sort(out)
	return out
}

// KeyObjects returns the sorted object encodings under the key encoding k.
func (m *Model) KeyObjects(k string) []string {
	var out []string
	for _, o := range m.keys[k] {
		out = append(out, Enc(o))
	}
	slices.Sort(out)
	return out
}

// Clone returns an independent copy.
func (m *Model) Clone() *Model {
	c := New(m.kind, m.keyPos)
	for k, l := range m.keys {
		c.keys[k] = slices.Clone(l)
	}
	return c
}

// Equal reports whether a and b hold the same multiset of objects.
func Equal(a, b *Model) bool { return slices.Equal(a.Objects(), b.Objects()) }

// Tracker follows a table through a workload for crash checks: Cur is the
// state after every operation issued, Synced the state when the last Sync or
// Close returned nil (the acked durable state), and Ever every object ever
// inserted (what a recovered table may contain at most).
type Tracker struct {
	Cur, Synced *Model
	Ever        map[string]bool
}

// NewTracker returns a tracker of an empty table.
func NewTracker(kind Kind, keyPos int) *Tracker {
	return &Tracker{Cur: New(kind, keyPos), Synced: New(kind, keyPos), Ever: map[string]bool{}}
}

// Inserted records objs as ever inserted (call before issuing the insert).
func (t *Tracker) Inserted(objs ...etf.Term) {
	for _, o := range objs {
		t.Ever[Enc(o)] = true
	}
}

// Acked records a successful Sync or Close.
func (t *Tracker) Acked() { t.Synced = t.Cur.Clone() }

// Invented returns the object encodings in got (a multiset of encodings)
// that were never inserted.
func (t *Tracker) Invented(got []string) []string {
	var out []string
	for _, e := range got {
		if !t.Ever[e] {
			out = append(out, e)
		}
	}
	return out
}

// Missing returns the encodings of want's objects absent from got (both
// multisets as sorted encodings; multiplicity counts).
func Missing(want, got []string) []string {
	have := map[string]int{}
	for _, e := range got {
		have[e]++
	}
	var out []string
	for _, e := range want {
		if have[e] > 0 {
			have[e]--
		} else {
			out = append(out, e)
		}
	}
	return out
}
