package model

import (
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

func tu(k, v etf.Term) etf.Tuple { return etf.Tuple{k, v} }

func TestKinds(t *testing.T) {
	a1, a2, b1 := tu(etf.Int(1), etf.Atom("a")), tu(etf.Int(1), etf.Atom("b")), tu(etf.Float(1), etf.Atom("a"))
	cases := []struct {
		kind Kind
		want []etf.Term // Lookup(1) after Insert(a1, a2, a1, b1)
	}{
		{Set, []etf.Term{a1}},
		{Bag, []etf.Term{a2, a1}},
		{DuplicateBag, []etf.Term{a1, a2, a1}},
	}
	for _, c := range cases {
		m := New(c.kind, 1)
		m.Insert(a1, a2, a1, b1)
		if got := m.Lookup(etf.Int(1)); !slices.EqualFunc(got, c.want, etf.Equal) {
			t.Errorf("kind %d: Lookup(1) = %v, want %v", c.kind, got, c.want)
		}
		if got := m.Lookup(etf.Float(1)); len(got) != 1 {
			t.Errorf("kind %d: 1.0 is a distinct key, got %v", c.kind, got)
		}
		m.DeleteObject(a1)
		for _, o := range m.Lookup(etf.Int(1)) {
			if etf.Equal(o, a1) {
				t.Errorf("kind %d: DeleteObject left a copy", c.kind)
			}
		}
		if m.InsertNew(tu(etf.Float(1), etf.Atom("z"))) {
			t.Errorf("kind %d: InsertNew on a present key succeeded", c.kind)
		}
		if !m.InsertNew(tu(etf.Int(2), etf.Atom("z"))) {
			t.Errorf("kind %d: InsertNew on a new key failed", c.kind)
		}
		m.Delete(etf.Float(1))
		if len(m.Lookup(etf.Float(1))) != 0 || len(m.Lookup(etf.Int(2))) != 1 {
			t.Errorf("kind %d: Delete", c.kind)
		}
		m.DeleteAllObjects()
		if m.Len() != 0 {
			t.Errorf("kind %d: DeleteAllObjects left %d", c.kind, m.Len())
		}
	}
}

func TestUpdateCounter(t *testing.T) {
	m := New(Set, 1)
	m.Insert(etf.Tuple{etf.Atom("c"), etf.Int(5), etf.Atom("x")})
	if v, err := m.UpdateCounter(etf.Atom("c"), 0, 3); err != nil || v != etf.Int(8) {
		t.Fatalf("UpdateCounter = %v, %v", v, err)
	}
	for _, bad := range []struct {
		key etf.Term
		pos int
	}{{etf.Atom("nope"), 2}, {etf.Atom("c"), 3}, {etf.Atom("c"), 1}, {etf.Atom("c"), 9}} {
		if _, err := m.UpdateCounter(bad.key, bad.pos, 1); err == nil {
			t.Errorf("UpdateCounter(%v, %d) succeeded", bad.key, bad.pos)
		}
	}
	if _, err := New(Bag, 1).UpdateCounter(etf.Atom("c"), 2, 1); err == nil {
		t.Error("UpdateCounter on a bag succeeded")
	}
}

func TestTracker(t *testing.T) {
	tr := NewTracker(DuplicateBag, 1)
	o := tu(etf.Int(1), etf.Int(1))
	tr.Inserted(o, o)
	tr.Cur.Insert(o, o)
	tr.Acked()
	tr.Cur.Delete(etf.Int(1))
	if tr.Synced.Len() != 2 || tr.Cur.Len() != 0 {
		t.Fatal("Acked did not snapshot")
	}
	if inv := tr.Invented([]string{Enc(o), Enc(tu(etf.Int(2), etf.Int(2)))}); len(inv) != 1 {
		t.Fatalf("Invented = %d entries", len(inv))
	}
	if miss := Missing(tr.Synced.Objects(), []string{Enc(o)}); len(miss) != 1 {
		t.Fatalf("Missing counts multiplicity: %v", miss)
	}
}

func TestTermsAndByKey(t *testing.T) {
	m := New(Bag, 1)
	b2, a1, a2 := tu(etf.Int(2), etf.Atom("b")), tu(etf.Int(1), etf.Atom("a")), tu(etf.Int(1), etf.Atom("b"))
	m.Insert(b2, a2, a1)
	if got, want := m.Terms(), []etf.Term{a1, a2, b2}; !slices.EqualFunc(got, want, etf.Equal) {
		t.Errorf("Terms = %v, want %v", got, want)
	}
	if m.NumKeys() != 2 {
		t.Errorf("NumKeys = %d, want 2", m.NumKeys())
	}
	seen := map[string][]etf.Term{}
	for l := range m.ByKey() {
		k, _ := m.KeyOf(l[0])
		seen[Enc(k)] = l
	}
	if got := seen[Enc(etf.Int(1))]; !slices.EqualFunc(got, []etf.Term{a2, a1}, etf.Equal) {
		t.Errorf("ByKey(1) = %v, want insert order [a2 a1]", got)
	}
	if len(seen) != 2 {
		t.Errorf("ByKey yielded %d keys, want 2", len(seen))
	}
	for range m.ByKey() {
		break // an early stop must not panic
	}
}

// TestDeleteOne: one copy goes, the first, and the others stay in order;
// the last copy takes its key with it; a snapshot taken before is untouched.
func TestDeleteOne(t *testing.T) {
	a1, a2 := tu(etf.Int(1), etf.Atom("a")), tu(etf.Int(1), etf.Atom("b"))
	m := New(DuplicateBag, 1)
	m.Insert(a1, a2, a1)
	before := m.Clone()
	m.DeleteOne(a1)
	if got := m.Lookup(etf.Int(1)); !slices.EqualFunc(got, []etf.Term{a2, a1}, etf.Equal) {
		t.Fatalf("after one DeleteOne: %v", got)
	}
	m.DeleteOne(tu(etf.Int(1), etf.Atom("absent")))
	m.DeleteOne(a1)
	m.DeleteOne(a2)
	if m.NumKeys() != 0 || m.Len() != 0 {
		t.Fatalf("the last copy left key %v (%d keys)", m.Keys(), m.NumKeys())
	}
	if before.Len() != 3 {
		t.Fatalf("DeleteOne changed a clone: %d objects", before.Len())
	}
}
