package kinds_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/internal/testutil"
	"github.com/godets/godets/kinds"
)

// The multi-process tests re-run this test binary as child processes
// (testutil.Command). A child does the job of its role in TestMain and
// exits without running any test; these variables carry its parameters.
const (
	childPath = "KINDS_TEST_PATH"
	childArgs = "KINDS_TEST_ARGS"
)

func TestMain(m *testing.M) {
	testutil.RunChildRole(func(role string) int {
		if err := runChild(role, os.Getenv(childPath), os.Getenv(childArgs)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		return 0
	})
	os.Exit(m.Run())
}

func sessionOpts() exclusive.Options {
	return exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(60 * time.Second)}
}

func runChild(role, path, args string) error {
	switch role {
	case "counter":
		n, err := strconv.Atoi(args)
		if err != nil {
			return err
		}
		for range n {
			if err := incrementCounters(path); err != nil {
				return err
			}
		}
		return nil
	case "fetch":
		return fetchCommand(path, strings.Split(args, ","))
	}
	return fmt.Errorf("unknown role %q", role)
}

// incrementCounters is one read-modify-write session. It bumps "count" with
// the seed's lookup-then-insert pattern and "atomic" with UpdateCounter.
func incrementCounters(path string) error {
	return kinds.WithExclusiveSet(path, sessionOpts(), kinds.String, kinds.Int,
		func(table *kinds.Set[string, int64]) error {
			current, err := table.Lookup("count")
			if errors.Is(err, kinds.ErrNotFound) {
				current, err = 0, nil
			}
			if err != nil {
				return err
			}
			if err := table.Insert("count", current+1); err != nil {
				return err
			}
			if _, err := table.UpdateCounter("atomic", 1); errors.Is(err, kinds.ErrNotFound) {
				return table.Insert("atomic", 1)
			} else {
				return err
			}
		})
}

// fetchValue is what the slow fetch returns for a key; any process fetching
// the key gets the same answer, so the final table can be checked.
func fetchValue(k string) string { return "meta:" + k }

// fetchCommand is the seed's two-session pattern: read what is cached, fetch
// the rest with no lock held, then insert in a second session.
func fetchCommand(path string, keys []string) error {
	var missing []string
	err := kinds.WithExclusiveSet(path, sessionOpts(), kinds.String, kinds.String,
		func(table *kinds.Set[string, string]) error {
			missing = missing[:0]
			for _, k := range keys {
				ok, err := table.Member(k)
				if err != nil {
					return err
				}
				if !ok {
					missing = append(missing, k)
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	time.Sleep(20 * time.Millisecond) // the network, with no table and no lock
	return kinds.WithExclusiveSet(path, sessionOpts(), kinds.String, kinds.String,
		func(table *kinds.Set[string, string]) error {
			for _, k := range missing {
				if err := table.Insert(k, fetchValue(k)); err != nil {
					return err
				}
			}
			return nil
		})
}

// runChildren starts one child per args entry and waits for all of them.
func runChildren(t *testing.T, role, path string, args []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(args))
	outs := make([][]byte, len(args))
	for i, a := range args {
		cmd := testutil.Command(role, childPath+"="+path, childArgs+"="+a)
		cmd.Stderr = nil // CombinedOutput collects it
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("child %d (%s %s): %v\n%s", i, role, args[i], err, outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestNoLostUpdates: 8 processes each run 100 read-modify-write sessions
// through the typed counter; the totals must be exact.
func TestNoLostUpdates(t *testing.T) {
	procs, sessions := 8, 100
	if testing.Short() {
		sessions = 20
	}
	path := filepath.Join(t.TempDir(), "counters.dets")
	args := make([]string, procs)
	for i := range args {
		args[i] = strconv.Itoa(sessions)
	}
	start := time.Now()
	runChildren(t, "counter", path, args)
	t.Logf("%d sessions in %v", procs*sessions, time.Since(start))

	want := int64(procs * sessions)
	err := kinds.WithExclusiveSet(path, sessionOpts(), kinds.String, kinds.Int,
		func(table *kinds.Set[string, int64]) error {
			for _, k := range []string{"count", "atomic"} {
				got, err := table.Lookup(k)
				if err != nil {
					return err
				}
				if got != want {
					t.Errorf("%s = %d, want %d", k, got, want)
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTwoPhaseFetchLosesNoKey: 4 processes with overlapping key sets each
// run the two-session fetch; every key any of them wanted ends up stored.
func TestTwoPhaseFetchLosesNoKey(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	r := rand.New(rand.NewPCG(seed, 0))
	const procs, universe, perProc = 4, 40, 20
	path := filepath.Join(t.TempDir(), "cache.dets")
	args := make([]string, procs)
	wanted := map[string]bool{}
	for i := range args {
		var ks []string
		for _, j := range r.Perm(universe)[:perProc] {
			k := "pkg" + strconv.Itoa(j)
			ks = append(ks, k)
			wanted[k] = true
		}
		args[i] = strings.Join(ks, ",")
	}
	runChildren(t, "fetch", path, args)
	err := kinds.WithExclusiveSet(path, sessionOpts(), kinds.String, kinds.String,
		func(table *kinds.Set[string, string]) error {
			var err error
			got := map[string]string{}
			for k, v := range table.All(&err) {
				got[k] = v
			}
			if err != nil {
				return err
			}
			if len(got) != len(wanted) {
				t.Errorf("table holds %d keys, want %d", len(got), len(wanted))
			}
			for k := range wanted {
				if got[k] != fetchValue(k) {
					t.Errorf("key %s = %q, want %q", k, got[k], fetchValue(k))
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
}
