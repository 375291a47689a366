package dets

import (
	"fmt"
	"iter"
	"slices"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

// Queries with match specifications (OTP dets:select/2, match/2,
// match_object/2, select_delete/2, match_delete/2).
//
// A query reads its candidates in one of two ways, as OTP does. When every
// clause head fixes the key (query.keys), only those keys are looked
// up, each as Lookup reads it. Otherwise every object is read once, by the
// traversal All uses, and the spec is run on each. Both ways go through
// the table's public reads (Lookup, All) and DeleteObject, so queries
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
	return t.collect(&query{s: s, from: fromTerm, term: ms})
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
	return t.results(&query{s: s, from: fromTerm, term: ms})
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
	s, err := matchspec.MatchSpec(pattern, r)
	if err != nil {
		return nil, badSpec(err)
	}
	return t.collect(&query{s: s, from: fromPattern, term: pattern})
}

func (t *Table) patternSeq(pattern etf.Term, r matchspec.Result) iter.Seq2[etf.Term, error] {
	s, err := matchspec.MatchSpec(pattern, r)
	if err != nil {
		return errorSeq(badSpec(err))
	}
	return t.results(&query{s: s, from: fromPattern, term: pattern})
}

// SelectSpec runs a compiled spec over the table, as SelectSeq does; a spec
// compiled once serves many queries. The keys it reads are those
// Spec.BoundKeys gives, which differ from OTP's choice only for specs that
// look up keys == but not =:= to each other, or map keys with variables
// (see query.keys).
func (t *Table) SelectSpec(s *matchspec.Spec) iter.Seq2[etf.Term, error] {
	if s == nil {
		return errorSeq(fmt.Errorf("%w: nil match spec", ErrBadArgument))
	}
	return t.results(&query{s: s, from: fromSpec})
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
	return t.deleteWhere(&query{s: s, from: fromTerm, term: ms})
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
	return t.deleteWhere(&query{s: s, from: fromPattern, term: pattern})
}

// query is a compiled spec and what decides the keys it looks up.
type query struct {
	s    *matchspec.Spec
	from uint8    // fromTerm, fromPattern or fromSpec
	term etf.Term // the spec or the pattern as written
	one  [1]etf.Term
}

const (
	fromTerm    = iota // term is the spec
	fromPattern        // term is the head of the one clause
	fromSpec           // only s is known
)

// keys chooses the keys a query looks up, given the table's key position;
// bound is false when it has to read every object. For a spec or pattern
// as written it decides as dets does (find_all_keys in dets.erl): when the
// head of every clause is a tuple whose key element, if it has one,
// contains no '_' and no variable, it looks up those keys. Like dets, it
// does not look for variables inside maps, so a map key with a variable in
// it is looked up as it is written. The keys come in clause order.
func (q *query) keys(keyPos int) (keys []etf.Term, bound bool) {
	switch q.from {
	case fromSpec:
		return q.s.BoundKeys(keyPos)
	case fromPattern:
		k, use := headKey(q.term, keyPos)
		if use != keyBound {
			return nil, false
		}
		q.one[0] = k
		return q.one[:], true
	}
	clauses, ok := q.term.(etf.List)
	if !ok {
		return nil, false
	}
	for _, c := range clauses {
		cl, ok := c.(etf.Tuple)
		if !ok || len(cl) != 3 {
			return nil, false
		}
		switch k, use := headKey(cl[0], keyPos); use {
		case keyBound:
			keys = append(keys, k)
		case keyAny:
			return nil, false
		}
	}
	return keys, len(keys) > 0
}

const (
	keyBound = iota // the head fixes the key
	keyAny          // the head may match any key
	keyNone         // the head cannot match an object of the table
)

// headKey says what a clause head fixes of the key at keyPos.
func headKey(head etf.Term, keyPos int) (etf.Term, int) {
	h, ok := head.(etf.Tuple)
	switch {
	case !ok:
		return nil, keyAny
	case len(h) < keyPos:
		return nil, keyNone
	case hasVariable(h[keyPos-1]):
		return nil, keyAny
	}
	return h[keyPos-1], keyBound
}

// hasVariable reports whether t holds '_' or a variable '$N' outside maps,
// where N is what list_to_integer/1 reads (a sign is allowed), as dets'
// contains_variable/1 decides it.
func hasVariable(t etf.Term) bool {
	switch v := t.(type) {
	case etf.Atom:
		if v == "_" {
			return true
		}
		if len(v) < 2 || v[0] != '$' {
			return false
		}
		n := v[1:]
		if n[0] == '-' || n[0] == '+' {
			n = n[1:]
		}
		if len(n) == 0 {
			return false
		}
		for _, c := range []byte(n) {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	case etf.Tuple:
		return slices.ContainsFunc(v, hasVariable)
	case etf.List:
		return slices.ContainsFunc(v, hasVariable)
	case *etf.ImproperList:
		return slices.ContainsFunc(v.Elems, hasVariable) || hasVariable(v.Tail)
	}
	return false
}

// queryKeys returns the keys t has to look up for q, in the order dets
// looks them up, or bound false.
func (t *Table) queryKeys(q *query) (keys []etf.Term, bound bool, err error) {
	if err := t.begin(false); err != nil {
		return nil, false, err
	}
	keyPos := t.keyPos
	t.mu.Unlock()
	keys, bound = q.keys(keyPos)
	if bound && len(keys) > 1 {
		keys = lookupKeys(keys)
	}
	return keys, bound, nil
}

// collect returns q's results. It is the iterator of results written out,
// which saves a bound-key query (a Lookup's worth of work) the
// iterators' allocations.
func (t *Table) collect(q *query) ([]etf.Term, error) {
	keys, bound, err := t.queryKeys(q)
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
				if res, ok := q.s.Run(o); ok {
					out = append(out, res)
				}
			}
		}
		return out, nil
	}
	for o, err := range t.All() {
		if err != nil {
			return nil, err
		}
		if res, ok := q.s.Run(o); ok {
			out = append(out, res)
		}
	}
	return out, nil
}

// results yields q's results.
func (t *Table) results(q *query) iter.Seq2[etf.Term, error] {
	return func(yield func(etf.Term, error) bool) {
		for obj, err := range t.candidates(q) {
			if err != nil {
				yield(nil, err)
				return
			}
			if res, ok := q.s.Run(obj); ok && !yield(res, nil) {
				return
			}
		}
	}
}

// candidates yields the objects q has to see: those of its bound keys, or
// every object.
func (t *Table) candidates(q *query) iter.Seq2[etf.Term, error] {
	keys, bound, err := t.queryKeys(q)
	if err != nil {
		return errorSeq(err)
	}
	if !bound {
		return t.All()
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

// lookupKeys returns the keys OTP looks up for a spec whose clause heads
// fix keys (in clause order): it sorts them with lists:usort/1, which drops
// every key == (not only =:=) to one before it, keeping the last clause's.
// So a spec with clauses for the keys 1 and 1.0 looks up only one of them,
// and finds only its objects, as dets does.
func lookupKeys(keys []etf.Term) []etf.Term {
	ks := slices.Clone(keys)
	slices.Reverse(ks)
	slices.SortStableFunc(ks, etf.Compare)
	return slices.CompactFunc(ks, func(a, b etf.Term) bool { return etf.Compare(a, b) == 0 })
}

// deleteWhere deletes the candidates for which s returns true.
func (t *Table) deleteWhere(q *query) (int, error) {
	n := 0
	var last etf.Term // the last object deleted
	for obj, err := range t.candidates(q) {
		if err != nil {
			return n, err
		}
		res, ok := q.s.Run(obj)
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
