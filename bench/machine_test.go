package bench

import (
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestCompareMachine prints what bounds the ratios on this machine: the
// latency of a random read in a 256 MB area (a lookup at 1M waits for two
// of them), a cached 128-byte pread (each OTP lookup makes a few), an
// fdatasync of a small change (a write session pays one or two), and
// writing 25 MB with an fdatasync (a repair at 100k writes that much and
// syncs it; OTP's repair does not sync). Machines of one class differ by
// several times in these, and the ratios move with them.
func TestCompareMachine(t *testing.T) {
	if os.Getenv("BENCH_COMPARE") != "1" {
		t.Skip("bench: set BENCH_COMPARE=1 (or use run.sh)")
	}
	dir := t.TempDir()
	chase := chaseLatency(t, 256<<20)
	pread := preadLatency(t, filepath.Join(dir, "pread"))
	small, bulk := syncLatency(t, filepath.Join(dir, "sync"))
	report("\nmachine: random read in 256 MB %s, cached 128 B pread %s, fdatasync of a small write %s (median), 25 MB write + fdatasync %s\n",
		ns(chase), ns(pread), ns(small), ns(bulk))
}

// chaseLatency follows a random cycle through the cache lines of size
// bytes, each load depending on the one before.
func chaseLatency(t *testing.T, size int) float64 {
	const line = 8 // uint64s per cache line
	a := make([]uint64, size/8)
	n := len(a) / line
	perm := rand.New(rand.NewSource(1)).Perm(n)
	for i, p := range perm {
		a[p*line] = uint64(perm[(i+1)%n] * line)
	}
	const steps = 2_000_000
	p := uint64(perm[0] * line)
	start := time.Now()
	for range steps {
		p = a[p]
	}
	d := time.Since(start)
	if p%line != 0 { // every step lands on a line start
		t.Fatalf("chase went off the cycle at %d", p)
	}
	return float64(d.Nanoseconds()) / steps
}

func preadLatency(t *testing.T, path string) float64 {
	data := make([]byte, 8<<20)
	rand.New(rand.NewSource(2)).Read(data)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewSource(3))
	b := make([]byte, 128)
	const reads = 20_000
	start := time.Now()
	for range reads {
		off := r.Int63n(int64(len(data) - len(b)))
		if _, err := f.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		if b[0] != data[off] {
			t.Fatalf("pread at %d read the wrong bytes", off)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / reads
}

// syncLatency returns the median fdatasync after a 64-byte write, and the
// time to write 25 MB in 1 MiB writes and fdatasync it.
func syncLatency(t *testing.T, path string) (small, bulk float64) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ds []float64
	for i := range 100 {
		if _, err := f.WriteAt(make([]byte, 64), int64(i%16)*4096); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, float64(time.Since(start).Nanoseconds()))
	}
	slices.Sort(ds)
	buf := make([]byte, 1<<20)
	start := time.Now()
	for i := range 25 {
		if _, err := f.WriteAt(buf, int64(i)<<20); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	bulk = float64(time.Since(start).Nanoseconds())
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 25<<20 {
		t.Fatalf("wrote %d bytes, want %d", fi.Size(), 25<<20)
	}
	return ds[len(ds)/2], bulk
}
