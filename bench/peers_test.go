package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestPeers is issue 22: the engine workload through godets, OTP dets
// (when escript is on PATH), bbolt, pogreb and pebble, in BENCH_ROUNDS
// interleaved rounds, each system in a rotated order per round. It prints
// the medians, the targets and writes the results file (BENCH_RESULTS,
// default results/peers.json) for cmd/chart. It runs only when
// BENCH_PEERS=1 or BENCH_COMPARE=1 (run.sh sets them), and never fails on
// speed, only on a wrong answer.
func TestPeers(t *testing.T) {
	if os.Getenv("BENCH_PEERS") != "1" && os.Getenv("BENCH_COMPARE") != "1" {
		t.Skip("bench: set BENCH_PEERS=1 (or use ./run.sh peers) to compare with bbolt, pogreb and pebble")
	}
	rounds, iters := benchRounds(t), sessionIters(t)
	started := time.Now().UTC()
	otp := optionalOTP(t)
	systems := PeerSystems()
	col := &collector{}
	dir := t.TempDir()

	for _, n := range sizes(t) {
		set, bag := NewDataset(n, SetLayout), NewDataset(n, BagLayout)
		closed, bags, killed := map[string]string{}, map[string]string{}, map[string]string{}
		for _, sys := range systems {
			closed[sys.Name] = filepath.Join(dir, fmt.Sprintf("%s-closed-%d", sys.Name, n))
			if err := buildStore(sys, closed[sys.Name], set); err != nil {
				t.Fatal(err)
			}
			size, err := DiskSize(closed[sys.Name])
			if err != nil {
				t.Fatal(err)
			}
			col.add("file size", n, sys.Name, measure{float64(size), -1})
			bags[sys.Name] = filepath.Join(dir, fmt.Sprintf("%s-bag-%d", sys.Name, n))
			if err := buildStore(sys, bags[sys.Name], bag); err != nil {
				t.Fatal(err)
			}
			killed[sys.Name] = killedStore(t, sys, dir, n)
		}
		var otpDirty string
		if otp != nil {
			otpDirty = filepath.Join(dir, fmt.Sprintf("otp-dirty-%d.dets", n))
			if _, err := otp.Run(30*time.Minute, "dirty", fmt.Sprint(n), fmt.Sprint(killOverlap), otpDirty); err != nil {
				t.Fatal(err)
			}
		}
		for round := range rounds {
			t.Logf("N=%d: round %d of %d", n, round+1, rounds)
			if otp != nil {
				otpEngineRound(t, otp, col, n, round, otpDirty, dir)
			}
			for _, sys := range rotate(systems, round) {
				col.add("insert", n, sys.Name, benchPeerInsert(t, sys, dir, set))
				col.add("lookup", n, sys.Name, benchPeerLookup(t, sys, closed[sys.Name], set))
				col.add("scan", n, sys.Name, benchPeerScan(t, sys, closed[sys.Name], set))
				col.add("open", n, sys.Name, benchPeerOpen(t, sys, closed[sys.Name], set))
				col.add("bag lookup", n, sys.Name, benchPeerLookup(t, sys, bags[sys.Name], bag))
				col.add("open after kill", n, sys.Name, benchRecover(t, sys, killed[sys.Name], dir, n))
				if sys.Name == "godets" {
					col.add("lookup", n, "godets typed", benchTypedLookup(t, closed[sys.Name], set))
					col.add("scan", n, "godets typed", benchTypedScan(t, closed[sys.Name], set))
					col.add("scan", n, "godets raw", benchRawScan(t, closed[sys.Name], set))
				}
			}
		}
		for _, p := range []map[string]string{closed, bags, killed} {
			for _, path := range p {
				os.RemoveAll(path)
			}
		}
	}

	sd := newSessionData(iters)
	bases := map[string]string{}
	for _, sys := range systems {
		bases[sys.Name] = filepath.Join(dir, sys.Name+"-session-base")
		if err := buildStore(sys, bases[sys.Name], sd.look); err != nil {
			t.Fatal(err)
		}
	}
	for round := range rounds {
		t.Logf("sessions: round %d of %d", round+1, rounds)
		if otp != nil {
			otpCycleRound(t, otp, col, bases["godets"], dir, iters)
		}
		for _, sys := range rotate(systems, round) {
			var lookup, insert measure
			if sys.Name == "godets" {
				lookup, insert = godetsSessions(t, bases[sys.Name], dir, sd, iters)
			} else {
				lookup, insert = peerSessions(t, sys, bases[sys.Name], dir, sd, iters)
			}
			col.add("session lookup", sessionSize, sys.Name, lookup)
			col.add("session insert", sessionSize, sys.Name, insert)
		}
	}

	res := col.results(started, rounds)
	res.Note = rawTraversalName()
	if otp != nil {
		res.OTP = "OTP 25 dets (otp_driver.escript)"
	}
	printPeers(res, systems)
	path := os.Getenv("BENCH_RESULTS")
	if path == "" {
		path = filepath.Join("results", "peers.json")
	}
	if err := res.Write(path); err != nil {
		t.Fatal(err)
	}
	report("\nresults written to %s; chart: go run ./cmd/chart %s ../docs/bench-peers.svg\n", path, path)
}

// optionalOTP returns the OTP runner, or nil (and a note) without escript.
func optionalOTP(t *testing.T) *OTP {
	o, err := NewOTP(t.TempDir())
	if err != nil {
		t.Logf("no OTP column: %v", err)
		return nil
	}
	return o
}

// otpEngineRound runs one round of the OTP engine workload and one repair
// of a copy of the dirty file OTP left.
func otpEngineRound(t *testing.T, o *OTP, col *collector, n, round int, dirty, dir string) {
	t.Helper()
	res, err := o.Run(30*time.Minute, "engine", fmt.Sprint(n), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"insert", "open", "lookup", "scan"} {
		if res[op].Int("total_ns") <= 0 {
			t.Fatalf("OTP gave no %s result: %v", op, res)
		}
		col.add(op, n, "OTP", measure{float64(res[op].Int("total_ns")) / float64(res[op].Int("n")), -1})
	}
	if round == 0 {
		col.add("file size", n, "OTP", measure{float64(res["insert"].Int("file_size")), -1})
	}
	c := copyFile(t, dirty, filepath.Join(dir, "otp-repair.dets"))
	defer os.Remove(c)
	settle()
	rep, err := o.Run(30*time.Minute, "repair", c)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep["repair"].Int("objects"); got != int64(n) {
		t.Fatalf("OTP repair kept %d objects, want %d", got, n)
	}
	col.add("open after kill", n, "OTP", measure{float64(rep["repair"].Int("total_ns")), -1})
}

// otpCycleRound times OTP's raw open, lookup, close on a copy of the godets
// session table (OTP has no lock, so it is not a whole session).
func otpCycleRound(t *testing.T, o *OTP, col *collector, base, dir string, iters int) {
	t.Helper()
	c := copyFile(t, base, filepath.Join(dir, "otp-session.dets"))
	defer os.Remove(c)
	res, err := o.Run(30*time.Minute, "cycle", fmt.Sprint(iters), c)
	if err != nil {
		t.Fatal(err)
	}
	med := res["cycle"].Int("median_ns")
	if med <= 0 {
		t.Fatalf("OTP gave no cycle result: %v", res)
	}
	col.add("session lookup", sessionSize, "OTP", measure{float64(med), -1})
}

// rotate returns systems starting at index round (mod len), so that no
// system always runs first or last in a round.
func rotate(systems []System, round int) []System {
	k := round % len(systems)
	return append(append([]System{}, systems[k:]...), systems[:k]...)
}

// collector gathers the rounds of every figure in the order first seen.
type collector struct {
	keys []string
	figs map[string]*Figure
	allo map[string][]float64
}

func (c *collector) add(workload string, n int, system string, m measure) {
	if c.figs == nil {
		c.figs, c.allo = map[string]*Figure{}, map[string][]float64{}
	}
	k := fmt.Sprintf("%s|%d|%s", workload, n, system)
	f, ok := c.figs[k]
	if !ok {
		f = &Figure{Workload: workload, N: n, System: system, Unit: unitOf(workload)}
		c.figs[k] = f
		c.keys = append(c.keys, k)
	}
	f.Rounds = append(f.Rounds, m.ns)
	c.allo[k] = append(c.allo[k], m.allocs)
}

func unitOf(workload string) string {
	for _, w := range Workloads {
		if w.Name == workload {
			return w.Unit
		}
	}
	return "ns/op"
}

func (c *collector) results(started time.Time, rounds int) *Results {
	r := &Results{
		Date:    started.Format("2006-01-02 15:04 UTC"),
		Machine: machineInfo(),
		Go:      runtime.Version(),
		Command: "cd bench && BENCH_ROUNDS=" + fmt.Sprint(rounds) + " " + sizesEnv() + "./run.sh peers",
		Rounds:  rounds,
	}
	for _, k := range c.keys {
		f := *c.figs[k]
		f.Median = median(f.Rounds)
		f.Allocs = median(c.allo[k])
		r.Figures = append(r.Figures, f)
	}
	return r
}

func sizesEnv() string {
	var s string
	for _, k := range []string{"BENCH_SIZES", "BENCH_LARGE", "BENCH_SESSION_ITERS"} {
		if v := os.Getenv(k); v != "" {
			s += k + "=" + v + " "
		}
	}
	return s
}

// machineInfo describes the CPU, the core count and the kernel.
func machineInfo() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := runtime.GOOS
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel += " " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores, %s/%s", cpu, runtime.NumCPU(), kernel, runtime.GOARCH)
}
