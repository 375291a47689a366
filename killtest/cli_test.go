package killtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// buildCLI builds cmd/dets into dir and returns the binary's path.
func buildCLI(t *testing.T, dir string) string {
	t.Helper()
	if os.Getenv("GODETS_QEMU") != "" {
		t.Skip("the dets binary is built for the host, not the emulated target")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build cmd/dets with")
	}
	bin, err := testutil.BuildProgram(dir, "github.com/godets/godets/cmd/dets")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestKillCLI kills the dets tool inside its session (issue #20 item 3):
// `dets load` inserts objects into the counter table of TestKillHolder in
// its exclusive session, while two holder children wait to increment the
// counter in theirs. The parent SIGKILLs each load at a moment drawn
// uniformly over a measured load (parse, wait for the lock, inserts). A
// waiter gets the lock and repairs under AutoRepair; at the end the counter
// is exact (the acknowledged increments plus at most one per killed holder
// session; holders are not killed here), every other object is one the
// load was given, and Check is clean.
func TestKillCLI(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	rng := rand.New(rand.NewPCG(seed, 0x636c69))
	kills := budget(30, 4, 300)
	dir := t.TempDir()
	bin := buildCLI(t, dir)
	path := filepath.Join(dir, "counter.dets")
	createCounterTable(t, path)

	// Load r inserts objects keyed r*objects+i, which the counter's atom
	// key never equals; loadObject rebuilds each from its key.
	const objects = 10000
	load := func(r int) *exec.Cmd {
		var in strings.Builder
		for i := range objects {
			o := loadObject(r*objects + i)
			fmt.Fprintf(&in, "{%d,<<\"%s\">>}.\n", o[0], string(o[1].(etf.Binary)))
		}
		input := filepath.Join(dir, fmt.Sprintf("input-%03d.terms", r))
		if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "load", "--wait", "60s", "--repair", "auto", path, input)
		cmd.Stderr = os.Stderr
		return cmd
	}

	var holders []*exec.Cmd
	var logs []string
	repairs := make(chan struct{}, 1<<16)
	for i := range 2 {
		lp := filepath.Join(dir, fmt.Sprintf("ack-%d.log", i))
		logs = append(logs, lp)
		cmd := testutil.Command("holder", childPathEnv+"="+path, childLogEnv+"="+lp)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			for l := range lineReader(out) {
				if l == "repaired" {
					repairs <- struct{}{}
				}
			}
		}()
		holders = append(holders, cmd)
	}
	stopHolders := func() {
		for _, h := range holders {
			_ = h.Process.Kill()
			_ = h.Wait()
		}
		holders = nil
	}
	t.Cleanup(stopHolders)

	start := time.Now()
	if out, err := load(0).Output(); err != nil {
		t.Fatalf("reference load: %v %q", err, out)
	}
	took := time.Since(start)
	t.Logf("a load of %d objects takes %v next to two holders", objects, took)

	finished := []int{0}
	killed := 0
	for k := 1; k <= kills; k++ {
		after := time.Duration(rng.Float64() * 1.1 * float64(took))
		cmd := load(k)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("seed %d kill %d: the load failed by itself: %v", seed, k, err)
			}
			finished = append(finished, k)
		case <-time.After(after):
			_ = cmd.Process.Kill()
			<-done
			killed++
		}
	}
	// Let a holder take the lock after the last kill, then stop them.
	time.Sleep(200 * time.Millisecond)
	stopHolders()

	acked, inFlight, maxAcked := tallyCounter(t, seed, logs)
	tab, err := dets.Open(path, dets.Options{Kind: dets.Set, Repair: dets.AutoRepair})
	if err != nil {
		t.Fatalf("seed %d: final open: %v", seed, err)
	}
	defer tab.Close()
	if err := tab.Check(); err != nil {
		t.Fatalf("seed %d: Check: %v", seed, err)
	}
	var final int64 = -1
	invented, loaded := 0, 0
	for o, err := range tab.All() {
		if err != nil {
			t.Fatalf("seed %d: All: %v", seed, err)
		}
		tu, _ := o.(etf.Tuple)
		if len(tu) == 2 && etf.Equal(tu[0], countKey) {
			if v, ok := tu[1].(etf.Int); ok {
				final = int64(v)
				continue
			}
		}
		if k, ok := tu[0].(etf.Int); ok && len(tu) == 2 && etf.Equal(o, loadObject(int(k))) {
			loaded++
			continue
		}
		invented++
		if invented <= 3 {
			t.Errorf("seed %d: an object neither the counter nor loaded: %v", seed, o)
		}
	}
	lost := 0
	for _, r := range finished {
		for i := range objects {
			got, err := tab.Lookup(etf.Int(r*objects + i))
			if err != nil || len(got) != 1 {
				lost++
			}
		}
	}
	if lost > 0 {
		t.Errorf("seed %d: %d objects of the %d loads that finished are missing", seed, lost, len(finished))
	}
	ok := final >= int64(acked) && final <= int64(acked+inFlight) && maxAcked <= final
	line := fmt.Sprintf("kill-cli otp9: %d loads of dets load (%d killed, %d finished first), %d repairs by a waiting holder, %d increments acknowledged, %d in flight, final counter %d, %s; %d loaded objects, %d of finished loads lost, %d invented",
		kills, killed, len(finished)-1, len(repairs), acked, inFlight, final, map[bool]string{true: "exact", false: "WRONG"}[ok], loaded, lost, invented)
	t.Log(line)
	fmt.Println(line)
	if !ok {
		t.Errorf("seed %d: counter %d outside [%d, %d] (largest acknowledged %d)", seed, final, acked, acked+inFlight, maxAcked)
	}
	if !ok || invented > 0 || lost > 0 {
		keepEvidence(t, seed, dir)
	}
}

// loadObject is the object the loads insert under key k.
func loadObject(k int) etf.Tuple {
	return etf.Tuple{etf.Int(k), etf.Binary(strings.Repeat(string(rune('a'+k%26)), 20+k%90))}
}
