package dets

import (
	"errors"
	"testing"

	"github.com/godets/godets/etf"
)

// TestBuildFailureStopsTheTable: a bulk build (InitTable's) counts a
// slot's objects before it writes their bucket, and its old content is
// gone once it starts. A write that failed midway (a full file) left the
// table usable, and Close saved a clean file whose header counted objects
// it did not hold. Now the failure marks the table inconsistent: Close
// fails, and the file needs a repair. Found by an audit of the otp9 engine.
func TestBuildFailureStopsTheTable(t *testing.T) {
	path := tmpFile(t, "b.dets")
	tb, err := Open(path, Options{})
	must(t, err)
	ps, err := tb.prepare([]etf.Term{etf.Tuple{etf.Int(1), etf.Int(1)}, etf.Tuple{etf.Int(2), etf.Int(2)}})
	must(t, err)
	m, n := hashParamsFor(256)
	s0, s1 := slotOf(ps[0].hash, m, n), slotOf(ps[1].hash, m, n)
	if s0 == s1 {
		t.Fatal("the two keys share a slot: the test needs two")
	}
	if s0 > s1 {
		ps[0], ps[1] = ps[1], ps[0]
		s0, s1 = s1, s0
	}
	tb.mu.Lock()
	p := bulkParams{kind: Set, keyPos: 1, minSlots: 256, maxSlots: 1 << 25, next: 256}
	err = tb.fail(tb.build(p, func(yield func(bulkObject, error) bool) {
		if !yield(bulkObject{slot: s0, key: ps[0].key, obj: ps[0].obj}, nil) {
			return
		}
		tb.bud = &buddy{base: tb.bud.base} // the file is full from here on
		yield(bulkObject{slot: s1, key: ps[1].key, obj: ps[1].obj}, nil)
	}))
	tb.mu.Unlock()
	if !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("build: %v; want ErrFileTooLarge", err)
	}
	if err := tb.Insert(etf.Tuple{etf.Int(3), etf.Int(3)}); err == nil {
		t.Fatal("the table took an insert after a failed build")
	}
	if err := tb.Close(); err == nil {
		t.Fatal("Close saved the table a build left half written")
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("reopen: %v; want ErrNeedsRepair", err)
	}
}
