package dets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// The child roles of the dets tests that kill a process: this test binary
// run again by testutil.Command with one of these roles, its parameters in
// the environment.
const (
	roleRepairHold  = "dets-repair-hold" // repairHoldChild
	roleSoakWriter  = "dets-soak-writer" // soakWriterChild
	childPathEnv    = "GODETS_DETS_CHILD_PATH"
	childBytesEnv   = "GODETS_DETS_CHILD_BYTES"
	childCreateEnv  = "GODETS_DETS_CHILD_CREATE"
	childPendingEnv = "GODETS_DETS_CHILD_PENDING"
)

func TestMain(m *testing.M) {
	testutil.RunChildRole(runChild)
	os.Exit(m.Run())
}

func runChild(role string) int {
	path := os.Getenv(childPathEnv)
	switch role {
	case roleRepairHold:
		return repairHoldChild(path)
	case roleSoakWriter:
		return soakWriterChild(path)
	}
	fmt.Fprintf(os.Stderr, "dets test child: unknown role %q\n", role)
	return 2
}

// repairHoldChild repairs path and, at the first progress report of the
// build once PATH.TMP exists, prints "building" and waits for its stdin to
// close: the parent kills it there, mid-repair.
func repairHoldChild(path string) int {
	_, err := Repair(path, Options{}, func(p RepairProgress) {
		if p.Phase != "write" {
			return
		}
		if _, err := os.Stat(tmpPath(path)); err == nil {
			fmt.Println("building")
			io.Copy(io.Discard, os.Stdin)
			os.Exit(3) // not killed: the parent failed
		}
	})
	fmt.Println("repair returned:", err)
	return 2
}

// soakObject is object i of the soak table: the benchmark's shape, a
// 16-byte binary key and a 100-byte binary value.
func soakObject(i uint64, key, val []byte) etf.Tuple {
	be.PutUint64(key[8:], i)
	be.PutUint64(val, i*0x9e3779b97f4a7c15)
	return etf.Tuple{etf.Binary(slices.Clone(key)), etf.Binary(slices.Clone(val))}
}

// soakWriterChild fills the native set table at path (created when
// childCreateEnv is set, else opened) with soak objects until the file is
// childBytesEnv bytes long, Syncs, prints "synced N" (the objects in the
// table), inserts childPendingEnv more, prints "ready M" and waits for its
// stdin to close: the parent kills it there, its last writes in the log
// only.
func soakWriterChild(path string) int {
	target, _ := strconv.ParseInt(os.Getenv(childBytesEnv), 10, 64)
	pending, _ := strconv.ParseUint(os.Getenv(childPendingEnv), 10, 64)
	opts := Options{Repair: AutoRepair}
	if os.Getenv(childCreateEnv) != "" {
		opts = Options{Kind: Set, Format: Native}
	}
	tab, err := Open(path, opts)
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	info, err := tab.Info()
	if err != nil {
		fmt.Println("info:", err)
		return 2
	}
	n := uint64(info.Size)
	key, val := make([]byte, 16), make([]byte, 100)
	batch := make([]etf.Term, 1000)
	insert := func(count uint64) error {
		for count > 0 {
			b := batch[:min(count, uint64(len(batch)))]
			for i := range b {
				b[i] = soakObject(n, key, val)
				n++
			}
			if err := tab.Insert(b...); err != nil {
				return err
			}
			count -= uint64(len(b))
		}
		return nil
	}
	for i := 0; ; i++ {
		if i%64 == 0 {
			if fi, err := os.Stat(path); err != nil || fi.Size() >= target {
				break
			}
		}
		if err := insert(uint64(len(batch))); err != nil {
			fmt.Println("insert:", err)
			return 2
		}
	}
	if err := tab.Sync(); err != nil {
		fmt.Println("sync:", err)
		return 2
	}
	fmt.Println("synced", n)
	if err := insert(pending); err != nil {
		fmt.Println("insert:", err)
		return 2
	}
	fmt.Println("ready", n)
	io.Copy(io.Discard, os.Stdin)
	return 3 // not killed: the parent failed
}

// killSoakWriter runs soakWriterChild on path with env and SIGKILLs it
// once it is ready; it returns the objects it acknowledged.
func killSoakWriter(t *testing.T, path string, env ...string) uint64 {
	t.Helper()
	c := testutil.StartChild(t, roleSoakWriter, append(env, childPathEnv+"="+path)...)
	var n uint64
	for _, want := range []string{"synced", "ready"} {
		line, err := c.Stdout.ReadString('\n')
		if _, serr := fmt.Sscanf(line, want+" %d", &n); err != nil || serr != nil {
			t.Fatalf("soak writer: want %q, got %q (%v)", want, line, err)
		}
		t.Logf("%s: %s %d objects", time.Now().Format(time.TimeOnly), want, n)
	}
	must(t, c.Cmd.Process.Kill())
	c.Cmd.Wait()
	return n
}

// soakBytes is the soak table's size: GODETS_SOAK_BYTES, else 5 GB.
func soakBytes() int64 {
	if n, err := strconv.ParseInt(os.Getenv("GODETS_SOAK_BYTES"), 10, 64); err == nil {
		return n
	}
	return 5e9
}

// TestNativeSoak (GODETS_SOAK=1; docs/format-native.md §15.4): a native
// table of small objects grown to 5 GB (GODETS_SOAK_BYTES) by a child that
// is SIGKILLed with writes in its log; then a full repair (dets.Repair,
// what ForceRepair runs) with its time and peak heap (at most 64 MiB, issue 19), a Check of the
// result, and a second kill whose file reopens by recovery, timed. Every
// acknowledged object must be there each time. It needs about twice the
// table's size free, for the repair's PATH.TMP.
func TestNativeSoak(t *testing.T) {
	if os.Getenv("GODETS_SOAK") != "1" {
		t.Skip("soak mode: set GODETS_SOAK=1 (a 5 GB native table, about 11 GB of disk)")
	}
	size := soakBytes()
	dir := t.TempDir()
	if free := freeBytes(dir); free >= 0 && free < 2*size+size/4 {
		t.Skipf("%s has %d bytes free; the soak needs %d", dir, free, 2*size+size/4)
	}
	path := filepath.Join(dir, "soak.dets")
	start := time.Now()
	n := killSoakWriter(t, path, childCreateEnv+"=1", fmt.Sprintf("%s=%d", childBytesEnv, size), childPendingEnv+"=20000")
	built := time.Since(start)
	fi, err := os.Stat(path)
	must(t, err)

	// The full repair alone (dets repair; ForceRepair is it and an open),
	// its heap measured as TestNativeRepairMemory measures it.
	var repairTook time.Duration
	var rerr error
	peak := peakHeap(func() {
		start := time.Now()
		_, rerr = Repair(path, Options{}, nil)
		repairTook = time.Since(start)
	})
	must(t, rerr)
	tab, err := Open(path, Options{})
	must(t, err)
	info, err := tab.Info()
	must(t, err)
	if uint64(info.Size) != n {
		t.Fatalf("after the full repair: %d objects, want the %d acknowledged", info.Size, n)
	}
	start = time.Now()
	mustCheck(t, tab)
	checkTook := time.Since(start)
	must(t, tab.Close())
	repaired, err := os.Stat(path)
	must(t, err)

	n = killSoakWriter(t, path, fmt.Sprintf("%s=%d", childBytesEnv, 0), childPendingEnv+"=100000")
	var recoverTook time.Duration
	recoverPeak := peakHeap(func() {
		start := time.Now()
		tab, err = Open(path, Options{Repair: AutoRepair})
		recoverTook = time.Since(start)
	})
	must(t, err)
	rs, ok, err := tab.Recovery()
	must(t, err)
	info, err = tab.Info()
	must(t, err)
	if !ok || uint64(info.Size) != n {
		t.Fatalf("after the recovery (%v, %+v): %d objects, want the %d acknowledged", ok, rs, info.Size, n)
	}
	must(t, tab.Close())

	line := fmt.Sprintf("native soak: %d objects, %d bytes (%d after the repair), built in %v; kill -9; "+
		"full repair (dets.Repair) %v, peak heap %.1f MiB; Check %v; "+
		"kill -9 with %d records in the log; recovery %v, peak heap %.1f MiB",
		info.Size, fi.Size(), repaired.Size(), built.Round(time.Second), repairTook.Round(time.Millisecond),
		float64(peak)/(1<<20), checkTook.Round(time.Millisecond), rs.Records, recoverTook.Round(time.Millisecond),
		float64(recoverPeak)/(1<<20))
	t.Log(line)
	fmt.Println(line)
	if peak > 64<<20 {
		t.Errorf("the full repair's peak heap %.1f MiB is above issue 19's 64 MiB", float64(peak)/(1<<20))
	}
}
