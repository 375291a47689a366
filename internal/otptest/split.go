package otptest

import (
	"strings"
	"testing"
)

// OTP 25's VM can die of a segmentation fault on a long batch of random
// match specifications: some spec corrupts its heap and a later one trips
// over it. The crash needs the whole batch (seed 8493964417819845565 of
// etf/matchspec's TestBoundKeysOTP crashed it with 800 specs, never with
// either half alone), so a test cannot leave the culprit out; it reruns
// the batch in parts instead.

// Crashed reports whether err is erl dying on a signal, as opposed to an
// error the Erlang code raised.
func Crashed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "erl failed: signal")
}

// EvalSplit answers n items with eval, which runs items [lo, hi) in one
// erl and returns one result per item. When erl dies on a signal, the
// range is split in halves and each is run on its own, down to single
// items; an item that crashes erl alone is left unanswered (its result
// is the zero value and answered[i] is false). Any other error fails t.
// crashed counts the unanswered items; callers fail when it is more than
// a small share of n.
func EvalSplit[T any](t testing.TB, n int, eval func(lo, hi int) ([]T, error)) (results []T, answered []bool, crashed int) {
	t.Helper()
	results, answered = make([]T, n), make([]bool, n)
	var run func(lo, hi int)
	run = func(lo, hi int) {
		out, err := eval(lo, hi)
		switch {
		case err == nil:
			if len(out) != hi-lo {
				t.Fatalf("otptest: erl gave %d results for %d items", len(out), hi-lo)
			}
			copy(results[lo:hi], out)
			for i := lo; i < hi; i++ {
				answered[i] = true
			}
		case !Crashed(err):
			t.Fatal(err)
		case hi-lo > 1:
			line, _, _ := strings.Cut(err.Error(), "\n")
			t.Logf("%s on items %d..%d; running the halves apart", line, lo, hi-1)
			mid := lo + (hi-lo)/2
			run(lo, mid)
			run(mid, hi)
		default:
			t.Logf("erl died on item %d alone; not compared", lo)
			crashed++
		}
	}
	if n > 0 {
		run(0, n)
	}
	return results, answered, crashed
}
