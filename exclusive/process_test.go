package exclusive

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/lockfile"
	"github.com/godets/godets/internal/testutil"
)

// Multi-process tests re-execute the test binary (testutil.StartChild);
// these variables carry a child's parameters.
const (
	childPathEnv = "GODETS_EXCLUSIVE_PATH"
	childNEnv    = "GODETS_EXCLUSIVE_N"
)

func TestMain(m *testing.M) {
	testutil.RunChildRole(func(role string) int { return runChild(role, os.Getenv(childPathEnv)) })
	os.Exit(m.Run())
}

var countKey = etf.Atom("count")

// readCount returns the counter stored under countKey, 0 if absent.
func readCount(t *dets.Table) (int64, error) {
	objs, err := t.Lookup(countKey)
	if err != nil || len(objs) == 0 {
		return 0, err
	}
	tup, ok := objs[0].(etf.Tuple)
	if !ok || len(tup) != 2 {
		return 0, fmt.Errorf("bad counter object %v", objs[0])
	}
	n, ok := tup[1].(etf.Int)
	if !ok {
		return 0, fmt.Errorf("bad counter value %v", tup[1])
	}
	return int64(n), nil
}

func increment(t *dets.Table) (int64, error) {
	n, err := readCount(t)
	if err != nil {
		return 0, err
	}
	return n + 1, t.Insert(etf.Tuple{countKey, etf.Int(n + 1)})
}

func runChild(role, path string) int {
	switch role {
	case "hold": // hold a session until stdin closes
		err := With(path, Options{Wait: WaitUpTo(5 * time.Second)}, func(*dets.Table) error {
			fmt.Println("locked")
			_, _ = io.Copy(io.Discard, os.Stdin)
			return nil
		})
		if err != nil {
			fmt.Println("error:", err)
			return 2
		}
		return 0
	case "dirty": // write inside a session, then wait to be killed
		err := With(path, Options{}, func(t *dets.Table) error {
			if err := t.Insert(etf.Tuple{countKey, etf.Int(41)}); err != nil {
				return err
			}
			fmt.Println("locked")
			_, _ = io.Copy(io.Discard, os.Stdin)
			return errors.New("not killed")
		})
		fmt.Println("error:", err)
		return 2
	case "counter": // N increments, one session each, printing callback intervals
		n, _ := strconv.Atoi(os.Getenv(childNEnv))
		w := bufio.NewWriter(os.Stdout)
		for range n {
			var start, end int64
			_, err := Do(path, Options{Wait: WaitUpTo(20 * time.Second)}, func(t *dets.Table) (int64, error) {
				start = monoNow()
				v, err := increment(t)
				end = monoNow()
				return v, err
			})
			if err != nil {
				fmt.Fprintln(w, "error:", err)
				w.Flush()
				return 2
			}
			fmt.Fprintln(w, "iv", start, end)
		}
		w.Flush()
		return 0
	case "fair":
		return fairChild(path)
	case "repairwait":
		return repairWaitChild(path)
	}
	return 4
}

// Child role "repairwait": print "ready", then one AutoRepair session with
// a long wait that increments the counter; print "ok <value>" or
// "error: <code> <error>".
func repairWaitChild(path string) int {
	fmt.Println("ready")
	n, err := Do(path, Options{Repair: dets.AutoRepair, Wait: WaitUpTo(20 * time.Second)}, increment)
	if err != nil {
		fmt.Println("error:", Code(err), err)
		return 2
	}
	fmt.Println("ok", n)
	return 0
}

// startChild starts a child of role on the table at path.
func startChild(t *testing.T, role, path string, env ...string) *testutil.Child {
	t.Helper()
	return testutil.StartChild(t, role, append([]string{childPathEnv + "=" + path}, env...)...)
}

func noop(*dets.Table) error { return nil }

// Behaviours 2, 3, 4, 6, 9 across processes.
func TestProcessContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	c := startChild(t, "hold", path)
	c.ExpectLine(t, "locked")

	start := time.Now()
	err := With(path, Options{Wait: Immediate}, noop)
	// The upper bounds below tell a wrong wait (the whole deadline, or
	// forever) from a right one on a loaded machine; they time nothing.
	if el := time.Since(start); !errors.Is(err, ErrBusy) || el > 500*time.Millisecond {
		t.Fatalf("Immediate: %v after %v", err, el)
	}
	if err := With(path, Options{Wait: WaitUpTo(0)}, noop); !errors.Is(err, ErrBusy) || Code(err) != "busy" {
		t.Fatalf("WaitUpTo(0): %v", err)
	}
	start = time.Now()
	err = With(path, Options{Wait: WaitUpTo(100 * time.Millisecond)}, noop)
	el := time.Since(start)
	if !errors.Is(err, ErrTimedOut) || errors.Is(err, ErrBusy) || Code(err) != "timed_out" {
		t.Fatalf("WaitUpTo: %v", err)
	}
	if el < 100*time.Millisecond || el > 600*time.Millisecond {
		t.Fatalf("TimedOut after %v", el)
	}
	t.Logf("TimedOut after %v", el)

	// Release at ~150 ms; a waiter gets in within about one poll interval.
	start = time.Now()
	time.AfterFunc(150*time.Millisecond, func() { c.Stdin.Close() })
	err = With(path, Options{Wait: WaitUpTo(2 * time.Second)}, noop)
	el = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if el > 150*time.Millisecond+500*time.Millisecond {
		t.Fatalf("acquired %v after start (release at 150ms)", el)
	}
	t.Logf("acquired after %v", el)
}

// Behaviour 15 plus repair: a SIGKILLed holder's lock is released by the
// kernel; the dirty file gives NeedsRepair with NoRepair and is repaired
// under the lock with AutoRepair, keeping the insert the holder had made
// (acknowledged before it printed "locked"; a kill loses no call).
func TestKilledHolderLeavesDirtyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	c := startChild(t, "dirty", path)
	c.ExpectLine(t, "locked")
	if err := With(path, Options{}, noop); !errors.Is(err, ErrBusy) {
		t.Fatalf("before kill: %v", err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := c.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
	l, err := lockfile.Acquire(path, lockfile.Options{Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(killed); el > 500*time.Millisecond { // a wait of the whole second is wrong
		t.Errorf("lock free only %v after the kill", el)
	}
	_ = l.Unlock()

	err = With(path, Options{Repair: dets.NoRepair}, noop)
	if !errors.Is(err, ErrNeedsRepair) || !errors.Is(err, dets.ErrNeedsRepair) || Code(err) != "needs_repair" {
		t.Fatalf("NoRepair: %v (%s)", err, Code(err))
	}
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != OpenFailure {
		t.Fatalf("not an open failure: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !slices.Equal(before, after) {
		t.Fatal("NoRepair session changed the file")
	}
	if !lockIsFree(t, path) {
		t.Fatal("lock kept after open failure")
	}

	n, err := Do(path, Options{Repair: dets.AutoRepair}, readCount)
	if err != nil {
		t.Fatalf("AutoRepair: %v", err)
	}
	if n != 41 {
		t.Fatalf("counter after repair %d, want the killed holder's acknowledged 41", n)
	}
	if err := With(path, Options{}, noop); err != nil {
		t.Fatalf("after repair: %v", err)
	}
}

// startCounterChildren makes a table holding the counter at 0 and starts
// procs children in role, each to run per sessions on it.
func startCounterChildren(t *testing.T, role string, procs, per int) (path string, start time.Time, kids []*testutil.Child) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "t.dets")
	if err := With(path, Options{}, func(t *dets.Table) error {
		return t.Insert(etf.Tuple{countKey, etf.Int(0)})
	}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	kids = make([]*testutil.Child, procs)
	for i := range kids {
		kids[i] = startChild(t, role, path, childNEnv+"="+strconv.Itoa(per))
	}
	return path, start, kids
}

// Behaviour 51: 8 processes × N sessions increment one counter exactly, with
// no two callbacks overlapping in time.
func TestStressCounter(t *testing.T) {
	procs, per := 8, 200
	if testing.Short() {
		per = 25
	}
	path, start, kids := startCounterChildren(t, "counter", procs, per)
	type iv struct{ s, e int64 }
	var ivs []iv
	for i, c := range kids {
		for {
			line, err := c.Stdout.ReadString('\n')
			if err != nil {
				break
			}
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "iv" {
				s, _ := strconv.ParseInt(f[1], 10, 64)
				e, _ := strconv.ParseInt(f[2], 10, 64)
				ivs = append(ivs, iv{s, e})
			} else {
				t.Errorf("child %d: %s", i, strings.TrimSpace(line))
			}
		}
		if err := c.Cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	t.Logf("%d sessions in %v", procs*per, time.Since(start))
	n, err := Do(path, Options{}, readCount)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(procs*per) || len(ivs) != procs*per {
		t.Fatalf("counter %d, intervals %d, want %d", n, len(ivs), procs*per)
	}
	slices.SortFunc(ivs, func(a, b iv) int { return int(a.s - b.s) })
	for i := 1; i < len(ivs); i++ {
		if ivs[i].s < ivs[i-1].e {
			t.Fatalf("callbacks overlap: %v and %v", ivs[i-1], ivs[i])
		}
	}
}
