package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The open-after-kill workload: a child (this test binary run again)
// writes N objects into a store in the fast mode, syncs, overwrites 100 of
// them, says "ready" and is killed with SIGKILL, as the OTP driver's dirty
// file is made. Each round then times opening a synced copy of what it
// left: godets repairs it (AutoRepair), bbolt finds its last commit, pogreb
// rebuilds its index, pebble replays its WAL.
const (
	peerChildEnv = "BENCH_PEER_CHILD" // the system the child writes
	peerPathEnv  = "BENCH_PEER_PATH"
	peerNEnv     = "BENCH_PEER_N"
	killOverlap  = 100 // objects overwritten after the sync
)

// peerWriterChild is the child's side; its exit code is for the parent,
// which kills it before it would return.
func peerWriterChild() int {
	sys, err := SystemByName(os.Getenv(peerChildEnv))
	if err != nil {
		fmt.Println("error:", err)
		return 3
	}
	n, err := strconv.Atoi(os.Getenv(peerNEnv))
	if err != nil || n < 1 {
		fmt.Println("error: bad", peerNEnv, os.Getenv(peerNEnv))
		return 3
	}
	d := NewDataset(n, SetLayout)
	s, err := sys.Open(os.Getenv(peerPathEnv), SetLayout, Fast)
	if err == nil {
		for i := 0; i < n && err == nil; i++ {
			err = s.Put(d, i)
		}
	}
	if err == nil {
		err = s.Sync()
	}
	for i := 0; i < min(killOverlap, n) && err == nil; i++ {
		err = s.Put(d, i)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 3
	}
	fmt.Println("ready")
	time.Sleep(time.Hour) // the parent's SIGKILL ends it
	return 0
}

// killedStore runs a writer child for sys, kills it and returns the path
// of what it left.
func killedStore(t *testing.T, sys System, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-killed-%d", sys.Name, n))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), peerChildEnv+"="+sys.Name, peerPathEnv+"="+path, peerNEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	var got string
	select {
	case got = <-line:
	case <-time.After(20 * time.Minute):
		got = "no answer in 20 minutes"
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if got != "ready" {
		t.Fatalf("%s writer child: %s (%v)", sys.Name, got, werr)
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Fatalf("%s writer child was not killed by SIGKILL: %v", sys.Name, werr)
	}
	return path
}

// benchRecover times one open of a synced copy of the killed store, then
// checks (untimed) that it holds all n objects.
func benchRecover(t *testing.T, sys System, killed, dir string, n int) measure {
	t.Helper()
	p := filepath.Join(dir, sys.Name+"-recover")
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(killed, p); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(p)
	settle()
	runtime.GC()
	warmCPUs() // the same start as the OTP repair's (see warmCPUs)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	s, err := sys.Open(p, SetLayout, Fast)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("%s: open after kill: %v", sys.Name, err)
	}
	got, err := s.Scan()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil || got != n {
		t.Fatalf("%s: after kill the store holds %d objects (%v), want %d", sys.Name, got, err, n)
	}
	return measure{float64(took.Nanoseconds()), float64(after.Mallocs - before.Mallocs)}
}
