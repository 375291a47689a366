package dets

import (
	"fmt"
	"iter"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

// Queries with match specifications (OTP dets:select/2, match/2,
// match_object/2, select_delete/2, match_delete/2).
//
// A query reads its candidates in one of two ways, as OTP does. When every
// clause head fixes the key (Spec.BoundKeys), only those keys are looked
// up, each as Lookup reads it. Otherwise every object is read once, by the
// traversal All uses, and the spec is run on each; when the spec's heads
// and guards can be tested on the bytes (matchspec's RejectsRaw), the scan
// goes through RawAll and decodes only the objects that test keeps, which
// for a selective query is most of the cost saved (scanFor). Both ways go
// through the table's public reads (Lookup, All, RawAll) and DeleteObject, so queries
// share their locking, their error handling and, for the deletes, their
// crash safety.
//
// Results come in the order the objects are read: for bound keys, the keys
// in Erlang term order and each key's objects oldest first; otherwise All's
// file order. OTP's dets:select goes in slot order; both are the same
// multiset.

// Select returns the results of the match specification ms (a list of
// {Head, Guards, Body} clauses, as dets:select/2 takes) for every object
// that one of its clauses matches. A spec that does not compile gives an
// error matching ErrBadArgument and matchspec.ErrBadSpec.
func (t *Table) Select(ms etf.Term) ([]etf.Term, error) {
	s, err := matchspec.Compile(ms)
	if err != nil {
		return nil, badSpec(err)
	}
	return t.collect(s)
}

// SelectSeq is Select as an iterator, for a table too large to hold the
// results in memory. The table is locked only while objects are read, so
// the loop body may use the table; objects changed meanwhile may or may
// not be seen (see All). An error is yielded once and ends the iteration.
func (t *Table) SelectSeq(ms etf.Term) iter.Seq2[etf.Term, error] {
	s, err := matchspec.Compile(ms)
	if err != nil {
		return errorSeq(badSpec(err))
	}
	return t.results(s)
}

// Match returns, for every object that pattern matches, the list of the
// values bound to the pattern's variables '$1', '$2', ... in the order of
// their numbers (dets:match/2).
func (t *Table) Match(pattern etf.Term) ([]etf.Term, error) {
	return t.collectPattern(pattern, matchspec.Bindings)
}

// MatchSeq is Match as an iterator (see SelectSeq).
func (t *Table) MatchSeq(pattern etf.Term) iter.Seq2[etf.Term, error] {
	return t.patternSeq(pattern, matchspec.Bindings)
}

// MatchObject returns every object that pattern matches
// (dets:match_object/2).
func (t *Table) MatchObject(pattern etf.Term) ([]etf.Term, error) {
	return t.collectPattern(pattern, matchspec.Object)
}

// MatchObjectSeq is MatchObject as an iterator (see SelectSeq).
func (t *Table) MatchObjectSeq(pattern etf.Term) iter.Seq2[etf.Term, error] {
	return t.patternSeq(pattern, matchspec.Object)
}

func (t *Table) collectPattern(pattern etf.Term, r matchspec.Result) ([]etf.Term, error) {
	if r == matchspec.Object {
		if objs, ok, err := t.keyObjects(pattern); ok {
			return objs, err
		}
	}
	s, err := matchspec.MatchSpec(pattern, r)
	if err != nil {
		return nil, badSpec(err)
	}
	return t.collect(s)
}

func (t *Table) patternSeq(pattern etf.Term, r matchspec.Result) iter.Seq2[etf.Term, error] {
	s, err := matchspec.MatchSpec(pattern, r)
	if err != nil {
		return errorSeq(badSpec(err))
	}
	return t.results(s)
}

// SelectSpec runs a compiled spec over the table, as SelectSeq does; a spec
// compiled once serves many queries.
func (t *Table) SelectSpec(s *matchspec.Spec) iter.Seq2[etf.Term, error] {
	if s == nil {
		return errorSeq(fmt.Errorf("%w: nil match spec", ErrBadArgument))
	}
	return t.results(s)
}

// SelectDelete deletes every object for which ms returns true (any other
// result keeps the object) and returns how many it deleted
// (dets:select_delete/2). It refuses a read-only table with ErrReadOnly.
//
// Each matching object is deleted as DeleteObject deletes it, under the
// table's lock and as crash-safe as any single write: a crash in the middle
// leaves some of the matching objects deleted and the others in place,
// never a damaged table. The spec [{'_', [], [true]}] empties the table as
// DeleteAllObjects does, as OTP does.
func (t *Table) SelectDelete(ms etf.Term) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	if isDeleteAll(ms) {
		return t.deleteAll()
	}
	s, err := matchspec.Compile(ms)
	if err != nil {
		return 0, badSpec(err)
	}
	return t.deleteWhere(s)
}

// MatchDelete deletes every object that pattern matches
// (dets:match_delete/2) and returns how many it deleted; see SelectDelete.
func (t *Table) MatchDelete(pattern etf.Term) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	if a, ok := pattern.(etf.Atom); ok && a == "_" {
		return t.deleteAll()
	}
	s, err := matchspec.MatchSpec(pattern, matchspec.True)
	if err != nil {
		return 0, badSpec(err)
	}
	return t.deleteWhere(s)
}

// keyObjects answers MatchObject for the commonest pattern, a key and '_'
// elsewhere ({Key, '_', '_'}), without compiling it: the objects of the
// key that have the pattern's arity are what the compiled pattern would
// return. ok is false for any other pattern. Only keys whose literal
// match is plain equality take this way: numbers other than the float
// zeros, binaries, and atoms that are not '_' and do not start with '$'.
func (t *Table) keyObjects(pattern etf.Term) (objs []etf.Term, ok bool, err error) {
	p, isTuple := pattern.(etf.Tuple)
	if !isTuple {
		return nil, false, nil
	}
	if err := t.begin(false); err != nil {
		return nil, true, err
	}
	keyPos := t.keyPos
	t.mu.Unlock()
	if len(p) < keyPos || !plainKey(p[keyPos-1]) {
		return nil, false, nil
	}
	for i, e := range p {
		if a, isAtom := e.(etf.Atom); i != keyPos-1 && (!isAtom || a != "_") {
			return nil, false, nil
		}
	}
	objs, err = t.Lookup(p[keyPos-1])
	if err != nil {
		return nil, true, err
	}
	kept := objs[:0]
	for _, o := range objs {
		if ot, _ := o.(etf.Tuple); len(ot) == len(p) {
			kept = append(kept, o)
		}
	}
	clear(objs[len(kept):])
	if len(kept) == 0 {
		return nil, true, nil
	}
	return kept, true, nil
}

func plainKey(k etf.Term) bool {
	switch v := k.(type) {
	case etf.Int, *etf.BigInt, etf.Binary:
		return true
	case etf.Float:
		// a lookup of 0.0 finds -0.0 too (=:= in OTP 25), a pattern's
		// 0.0 matches only 0.0, bit for bit
		return v != 0
	case etf.Atom:
		return v != "_" && (len(v) == 0 || v[0] != '$')
	}
	return false
}

// queryKeys returns the keys t has to look up for s, or bound false.
// Spec.BoundKeys chooses them exactly as dets:select does (no look into
// maps; keys == to each other count once, the later clause's), because
// the choice changes results.
func (t *Table) queryKeys(s *matchspec.Spec) (keys []etf.Term, bound bool, err error) {
	if err := t.begin(false); err != nil {
		return nil, false, err
	}
	keyPos := t.keyPos
	t.mu.Unlock()
	keys, bound = s.BoundKeys(keyPos)
	return keys, bound, nil
}

// collect returns the results of s. It is the iterator of results written out,
// which saves a bound-key query (a Lookup's worth of work) the
// iterators' allocations.
func (t *Table) collect(s *matchspec.Spec) ([]etf.Term, error) {
	keys, bound, err := t.queryKeys(s)
	if err != nil {
		return nil, err
	}
	var out []etf.Term
	if bound {
		for _, k := range keys {
			objs, err := t.Lookup(k)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				if res, ok := s.Run(o); ok {
					out = append(out, res)
				}
			}
		}
		return out, nil
	}
	return t.collectScan(s)
}

// collectScan is collect's scan, apart so that the loop's closure does not
// move a bound-key query's variables to the heap.
func (t *Table) collectScan(s *matchspec.Spec) ([]etf.Term, error) {
	var out []etf.Term
	for o, err := range t.scanFor(s) {
		if err != nil {
			return nil, err
		}
		if res, ok := s.Run(o); ok {
			out = append(out, res)
		}
	}
	return out, nil
}

// results yields the results of s.
func (t *Table) results(s *matchspec.Spec) iter.Seq2[etf.Term, error] {
	return func(yield func(etf.Term, error) bool) {
		for obj, err := range t.candidates(s) {
			if err != nil {
				yield(nil, err)
				return
			}
			if res, ok := s.Run(obj); ok && !yield(res, nil) {
				return
			}
		}
	}
}

// candidates yields the objects s has to see: those of its bound keys, or
// every object.
func (t *Table) candidates(s *matchspec.Spec) iter.Seq2[etf.Term, error] {
	keys, bound, err := t.queryKeys(s)
	if err != nil {
		return errorSeq(err)
	}
	if !bound {
		return t.scanFor(s)
	}
	return func(yield func(etf.Term, error) bool) {
		for _, k := range keys {
			objs, err := t.Lookup(k)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, o := range objs {
				if !yield(o, nil) {
					return
				}
			}
		}
	}
}

// deleteWhere deletes the candidates for which s returns true.
func (t *Table) deleteWhere(s *matchspec.Spec) (int, error) {
	n := 0
	var last etf.Term // the last object deleted
	for obj, err := range t.candidates(s) {
		if err != nil {
			return n, err
		}
		res, ok := s.Run(obj)
		if a, isAtom := res.(etf.Atom); !ok || !isAtom || a != etf.True {
			continue
		}
		n++
		// A duplicate bag's copies come one after another, and the
		// first DeleteObject removed them all.
		if last != nil && etf.Equal(last, obj) {
			continue
		}
		if err := t.DeleteObject(obj); err != nil {
			return n - 1, err
		}
		last = obj
	}
	return n, nil
}

// deleteAll empties the table, as DeleteAllObjects, and returns how many
// objects it held.
func (t *Table) deleteAll() (int, error) {
	if err := t.begin(true); err != nil {
		return 0, err
	}
	defer t.mu.Unlock()
	n := int(t.h.noObjects)
	if t.lay.tag == tagNative {
		if err := t.beginWrite(); err != nil {
			return 0, t.fail(err)
		}
		if err := t.fail(t.nativeRebuild(t.h.minSlots, func(func(bulkObject) error) error { return nil })); err != nil {
			return 0, err
		}
		return n, nil
	}
	if err := t.markDirty(); err != nil {
		return 0, t.fail(err)
	}
	if err := t.fail(t.initFile(t.h.minSlots, t.h.maxSlots)); err != nil {
		return 0, err
	}
	return n, nil
}

// writable returns begin(true)'s error, if any, without keeping the lock.
func (t *Table) writable() error {
	if err := t.begin(true); err != nil {
		return err
	}
	t.mu.Unlock()
	return nil
}

// isDeleteAll reports whether ms is [{'_', [], [true]}], which OTP's
// select_delete turns into a delete_all_objects.
func isDeleteAll(ms etf.Term) bool {
	l, ok := ms.(etf.List)
	if !ok || len(l) != 1 {
		return false
	}
	c, ok := l[0].(etf.Tuple)
	if !ok || len(c) != 3 {
		return false
	}
	head, hok := c[0].(etf.Atom)
	guards, gok := c[1].(etf.List)
	body, bok := c[2].(etf.List)
	if !hok || !gok || !bok || head != "_" || len(guards) != 0 || len(body) != 1 {
		return false
	}
	a, ok := body[0].(etf.Atom)
	return ok && a == etf.True
}

func badSpec(err error) error { return fmt.Errorf("%w: %w", ErrBadArgument, err) }

func errorSeq(err error) iter.Seq2[etf.Term, error] {
	return func(yield func(etf.Term, error) bool) { yield(nil, err) }
}
