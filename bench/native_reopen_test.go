package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/godets/godets/dets"
)

// Reopen after kill -9 (issue 19; docs/format-native.md §11.2): a writer
// child (this test binary run again) builds a table of N benchmark objects,
// syncs, overwrites 100 of them and is killed with SIGKILL. The parent
// times the AutoRepair open of a synced copy: native recovers from its
// log, otp9 runs its full repair scan. Both formats in the same run, in
// alternating order, median of the rounds.
const (
	reopenChildEnv  = "BENCH_REOPEN_CHILD" // "otp9" or "native": the child's format
	reopenPathEnv   = "BENCH_REOPEN_PATH"
	reopenNEnv      = "BENCH_REOPEN_N"
	reopenOverwrite = 100
)

// TestNativeReopenChild is the writer child; it does nothing unless run
// by TestNativeReopen.
func TestNativeReopenChild(t *testing.T) {
	format := os.Getenv(reopenChildEnv)
	if format == "" {
		t.Skip("the writer child of TestNativeReopen")
	}
	n, err := strconv.Atoi(os.Getenv(reopenNEnv))
	if err == nil {
		err = reopenWrite(os.Getenv(reopenPathEnv), format, n)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour) // the parent's SIGKILL ends it
}

// reopenOptions are the options of the table the child creates: the
// defaults, so that both tables grow as the inserts ask.
func reopenOptions(format string) dets.Options {
	if format == "native" {
		return dets.Options{Format: dets.Native}
	}
	return dets.Options{}
}

func reopenWrite(path, format string, n int) error {
	tab, err := dets.Open(path, reopenOptions(format))
	if err != nil {
		return err
	}
	for i := 0; i < n && err == nil; i++ {
		err = tab.Insert(Object(i))
	}
	if err == nil {
		err = tab.Sync()
	}
	for i := 0; i < min(reopenOverwrite, n) && err == nil; i++ {
		err = tab.Insert(Object(i))
	}
	return err // the table stays open: the kill finds it so
}

// reopenKilled runs a writer child and kills it; it returns the file.
func reopenKilled(t *testing.T, dir, format string, n int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.dets", format, n))
	cmd := exec.Command(os.Args[0], "-test.run=^TestNativeReopenChild$")
	cmd.Env = append(os.Environ(), reopenChildEnv+"="+format, reopenPathEnv+"="+path, reopenNEnv+"="+strconv.Itoa(n))
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
		t.Fatalf("%s writer child: %s (%v)", format, got, werr)
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Fatalf("%s writer child was not killed by SIGKILL: %v", format, werr)
	}
	return path
}

// reopenOnce times the AutoRepair open of a synced copy of killed and
// checks, untimed, that the table holds the n objects.
func reopenOnce(t *testing.T, killed, format string, n int) time.Duration {
	t.Helper()
	p := copyFile(t, killed, killed+".open")
	defer os.Remove(p)
	settle()
	runtime.GC()
	warmCPUs()
	start := time.Now()
	tab, err := dets.Open(p, dets.Options{Repair: dets.AutoRepair})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: open after kill: %v", format, err)
	}
	defer tab.Close()
	info, err := tab.Info()
	if err != nil || info.Size != n || !info.Clean {
		t.Fatalf("%s: after kill the table holds %d objects (clean %v, %v), want %d", format, info.Size, info.Clean, err, n)
	}
	for _, i := range []int{0, reopenOverwrite - 1, n / 2, n - 1} {
		objs, err := tab.Lookup(Key(i))
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: Lookup of object %d after kill: %v %v", format, i, objs, err)
		}
	}
	if format == "native" {
		st, ok, err := tab.Recovery()
		if err != nil || !ok || st.Replayed != reopenOverwrite {
			t.Fatalf("native: Recovery() = %+v %v %v, want the %d overwrites replayed", st, ok, err, reopenOverwrite)
		}
	}
	return took
}

// TestNativeReopen prints the reopen-after-kill times of native (recovery)
// and otp9 (full repair) for 100k objects, and 1M with BENCH_LARGE=1.
// Target (issue 19): 1M native in at most 50 ms. Runs with BENCH_COMPARE=1.
func TestNativeReopen(t *testing.T) {
	if os.Getenv("BENCH_COMPARE") != "1" {
		t.Skip("bench: set BENCH_COMPARE=1 (or use run.sh)")
	}
	ns := []int{100_000}
	if os.Getenv("BENCH_LARGE") == "1" {
		ns = append(ns, 1_000_000)
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	dir := t.TempDir()
	for _, n := range ns {
		formats := []string{"native", "otp9"}
		killed := map[string]string{}
		for _, f := range formats {
			killed[f] = reopenKilled(t, dir, f, n)
		}
		times := map[string][]time.Duration{}
		for r := range rounds {
			for i := range formats {
				f := formats[(i+r)%len(formats)]
				times[f] = append(times[f], reopenOnce(t, killed[f], f, n))
			}
		}
		med := func(f string) time.Duration {
			ds := slices.Sorted(slices.Values(times[f]))
			return ds[len(ds)/2]
		}
		t.Logf("reopen after kill -9, %d objects: native %v (recovery), otp9 %v (full repair); %.1fx; rounds %v / %v",
			n, med("native").Round(10*time.Microsecond), med("otp9").Round(10*time.Microsecond),
			float64(med("otp9"))/float64(med("native")), times["native"], times["otp9"])
	}
}
