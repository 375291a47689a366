package otptest

import (
	"errors"
	"testing"
)

// TestEvalSplit: a crash splits the range until the crashing item stands
// alone; every other item is answered, in place.
func TestEvalSplit(t *testing.T) {
	const bad = 5
	runs := 0
	res, answered, crashed := EvalSplit(t, 8, func(lo, hi int) ([]int, error) {
		runs++
		if lo <= bad && bad < hi && hi-lo > 0 {
			return nil, errors.New("otptest: erl failed: signal: segmentation fault\n...")
		}
		out := make([]int, hi-lo)
		for i := range out {
			out[i] = 10 * (lo + i)
		}
		return out, nil
	})
	if crashed != 1 || answered[bad] {
		t.Fatalf("crashed %d, item %d answered %v", crashed, bad, answered[bad])
	}
	for i, r := range res {
		if i != bad && (!answered[i] || r != 10*i) {
			t.Fatalf("item %d: %d, answered %v", i, r, answered[i])
		}
	}
	if runs != 7 { // 0-7, 0-3, 4-7, 4-5, 4, 5, 6-7
		t.Errorf("%d runs, want 7", runs)
	}
	if Crashed(errors.New("otptest: erl error: badarg")) {
		t.Error("an Erlang error counted as a crash")
	}
}
