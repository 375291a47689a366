package kinds

import (
	"strconv"
	"testing"

	"github.com/godets/godets/dets"
)

// TestDirectAllocs bounds what the direct path allocates for a
// Set[string, string]: a Lookup only the string it returns, an Insert
// nothing (1 leaves room for a collection emptying a pool during the
// run), a traversal a shared chunk now and then for the bytes of the keys
// and values (arena), far less than one allocation an object.
func TestDirectAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	const n = 1000
	s, err := NewSet(openTable(t, dets.Set, 1), String, String)
	must(t, err)
	for i := range n {
		must(t, s.Insert("package-"+strconv.Itoa(i), "metadata of package "+strconv.Itoa(i)))
	}
	if a := testing.AllocsPerRun(200, func() {
		if v, err := s.Lookup("package-500"); err != nil || v != "metadata of package 500" {
			t.Fatal(v, err)
		}
	}); a > 1 {
		t.Errorf("Lookup: %v allocations, want 1 (the value)", a)
	}
	if a := testing.AllocsPerRun(200, func() {
		if _, err := s.Lookup("absent"); err != ErrNotFound {
			t.Fatal(err)
		}
	}); a > 0 {
		t.Errorf("Lookup of an absent key: %v allocations, want 0", a)
	}
	if a := testing.AllocsPerRun(200, func() { must(t, s.Insert("package-500", "metadata of package 500")) }); a > 1 {
		t.Errorf("Insert (replace): %v allocations, want 0", a)
	}
	const perTraversal = 10 // the iterators, the engine's scan buffers
	const limit = perTraversal + n/50
	seen := 0
	a := testing.AllocsPerRun(5, func() {
		seen = 0
		var err error
		for range s.All(&err) {
			seen++
		}
		must(t, err)
	})
	t.Logf("All: %v allocations for %d objects", a, seen)
	if seen != n || a > limit {
		t.Errorf("All: %v allocations for %d objects, want <= %d", a, seen, limit)
	}
	a = testing.AllocsPerRun(5, func() {
		seen = 0
		for _, err := range s.Rows() {
			must(t, err)
			seen++
		}
	})
	t.Logf("Rows: %v allocations for %d objects", a, seen)
	if seen != n || a > limit {
		t.Errorf("Rows: %v allocations for %d objects, want <= %d", a, seen, limit)
	}
}
