package exclusive_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
)

// fetch stands in for slow network work done without the table or the lock.
func fetch(keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = "metadata for " + k
	}
	return out
}

// Two sessions around network work: read what is cached, release, fetch the
// rest without holding anything, then insert into the current table in a
// second session. Competing processes fetch in parallel and take turns for
// storage; inserts of different keys accumulate.
func Example_twoSessionsAroundNetworkWork() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cache.dets")
	opts := exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(time.Second)}
	wanted := []string{"alpha", "beta"}

	// 1. A locked read session.
	missing, err := exclusive.Do(path, opts, func(t *dets.Table) ([]string, error) {
		var missing []string
		for _, k := range wanted {
			objs, err := t.Lookup(etf.Str(k))
			if err != nil {
				return nil, err
			}
			if len(objs) == 0 {
				missing = append(missing, k)
			}
		}
		return missing, nil
	})
	if errors.Is(err, exclusive.ErrBusy) || errors.Is(err, exclusive.ErrTimedOut) {
		fmt.Println("cache busy; continuing without it")
		return
	}
	if err != nil {
		log.Fatal(exclusive.Message(err))
	}

	// 2. Network work, with no table and no lock.
	fetched := fetch(missing)

	// 3. A new locked write session inserts into the current table (not a
	// snapshot from step 1).
	err = exclusive.With(path, opts, func(t *dets.Table) error {
		for _, k := range missing {
			if err := t.Insert(etf.Tuple{etf.Str(k), etf.Str(fetched[k])}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(exclusive.Code(err), ": ", exclusive.Message(err))
	}
	fmt.Println("cached", len(missing), "entries")
	// Output: cached 2 entries
}

// Read-modify-write belongs in one session: releasing the lock between the
// read and the write would let another process's update be lost.
func Example_readModifyWrite() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "counters.dets")
	opts := exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(time.Second)}

	increment := func(t *dets.Table) (int64, error) {
		objs, err := t.Lookup(etf.Atom("count"))
		if err != nil {
			return 0, err
		}
		var n int64
		if len(objs) > 0 {
			n = int64(objs[0].(etf.Tuple)[1].(etf.Int))
		}
		return n + 1, t.Insert(etf.Tuple{etf.Atom("count"), etf.Int(n + 1)})
	}
	for range 3 {
		n, err := exclusive.Do(path, opts, increment)
		if err != nil {
			log.Fatal(exclusive.Message(err))
		}
		fmt.Println("count", n)
	}
	// Output:
	// count 1
	// count 2
	// count 3
}

// Code and Message give safe output; Error() is for trusted logs.
func ExampleCode() {
	err := exclusive.With("t.dets", exclusive.Options{Wait: exclusive.WaitUpTo(-time.Second)}, func(*dets.Table) error { return nil })
	fmt.Println(exclusive.Code(err))
	fmt.Println(exclusive.Message(err))
	// Output:
	// invalid_wait
	// The wait duration is negative.
}
