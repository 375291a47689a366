package exclusive

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godets/godets/dets"
)

// Child role "fair": childNEnv sessions with WaitUpTo(1s), each holding the
// lock about 2 ms while it increments the counter. It prints one line per
// session: "w <wait ns>" when it got the lock, "timeout" on ErrTimedOut.
const fairHold = 2 * time.Millisecond

func fairChild(path string) int {
	n, _ := strconv.Atoi(os.Getenv(childNEnv))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for range n {
		var waited time.Duration
		var at int64
		start := time.Now()
		err := With(path, Options{Wait: WaitUpTo(time.Second)}, func(t *dets.Table) error {
			waited = time.Since(start)
			at = monoNow()
			if _, err := increment(t); err != nil {
				return err
			}
			time.Sleep(fairHold)
			return nil
		})
		switch {
		case err == nil:
			fmt.Fprintln(w, "w", int64(waited), at)
		case errors.Is(err, ErrTimedOut):
			fmt.Fprintln(w, "timeout")
		default:
			fmt.Fprintln(w, "error:", err)
			return 2
		}
	}
	return 0
}

// Fair waits (issue #16 item 9): 8 processes × 60 sessions, each holding
// the lock about 2 ms, all with WaitUpTo(1s). Every session must get the
// lock: polling waiters used to lose to whoever had just released and
// timed out. It reports the wait's p50/p99 and checks the counter exactly.
// -short runs 8 processes × 20 sessions.
func TestFairWaitsNoTimeouts(t *testing.T) {
	procs, per := 8, 60
	if testing.Short() {
		per = 20
	}
	path, start, kids := startCounterChildren(t, "fair", procs, per)
	var waits []time.Duration
	type turn struct {
		at   int64
		proc int
	}
	var turns []turn
	timeouts := make([]int, procs)
	for i, c := range kids {
		for {
			line, err := c.Stdout.ReadString('\n')
			if err != nil {
				break
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "w":
				ns, _ := strconv.ParseInt(f[1], 10, 64)
				at, _ := strconv.ParseInt(f[2], 10, 64)
				waits = append(waits, time.Duration(ns))
				turns = append(turns, turn{at, i})
			case len(f) == 1 && f[0] == "timeout":
				timeouts[i]++
			default:
				t.Errorf("child %d: %s", i, strings.TrimSpace(line))
			}
		}
		if err := c.Cmd.Wait(); err != nil {
			t.Errorf("child %d: %v", i, err)
		}
	}
	total := 0
	for _, n := range timeouts {
		total += n
	}
	// How often the lock went to the process that had just released it
	// (with turns taken in rotation, never; at random, one time in procs).
	slices.SortFunc(turns, func(a, b turn) int { return cmp.Compare(a.at, b.at) })
	again, run, longest := 0, 1, 1
	for i := 1; i < len(turns); i++ {
		if turns[i].proc == turns[i-1].proc {
			again++
			run++
			longest = max(longest, run)
		} else {
			run = 1
		}
	}
	slices.Sort(waits)
	var p50, p99, worst time.Duration
	if len(waits) > 0 {
		p50, p99, worst = waits[len(waits)/2], waits[len(waits)*99/100], waits[len(waits)-1]
	}
	t.Logf("%d×%d sessions in %v: wait p50 %v p99 %v max %v; %d timeouts (per process %v); "+
		"%d of %d turns to the previous owner, longest run %d",
		procs, per, time.Since(start).Round(time.Millisecond), p50, p99, worst, total, timeouts, again, len(turns)-1, longest)
	n, err := Do(path, Options{}, readCount)
	if err != nil {
		t.Fatal(err)
	}
	if total != 0 || n != int64(procs*per) || len(waits) != procs*per {
		t.Fatalf("%d timeouts, counter %d, %d sessions got the lock; want 0, %d, %d", total, n, len(waits), procs*per, procs*per)
	}
}
