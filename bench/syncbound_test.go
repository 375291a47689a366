//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

// TestSessionSyncBound measures what bounds the session insert (issue 22:
// godets' exclusive.With cycle against bbolt's fsync-per-commit Update).
// Both cycles make two fdatasyncs (strace -f -c of either, recorded in
// README.md): godets one to make the "not closed" flag durable before the
// first change and one to order the data before the closed header (docs/
// reliability.md); bbolt one after its data pages and one after its meta
// page. So each round times, interleaved in a rotated order: the godets
// cycle, the same with Durability LikeOTP (less its second fdatasync),
// bbolt's durable cycle, bbolt's NoSync cycle (the same work less its two
// fdatasyncs), and a bare fdatasync of a small overwrite in the
// same directory; the report gives every figure in fdatasyncs. Runs only
// with BENCH_PEERS=1 or BENCH_COMPARE=1; never fails on speed.
func TestSessionSyncBound(t *testing.T) {
	if os.Getenv("BENCH_PEERS") != "1" && os.Getenv("BENCH_COMPARE") != "1" {
		t.Skip("bench: set BENCH_PEERS=1 to measure the session insert's fdatasync bound")
	}
	rounds, iters := benchRounds(t), sessionIters(t)
	dir := t.TempDir()
	sd := newSessionData(4 * rounds * (sessionWarmup + iters)) // four inserting cycles a round
	bolt := bboltSystem()
	bases := map[string]string{"godets": filepath.Join(dir, "godets-base"), "bbolt": filepath.Join(dir, "bbolt-base")}
	if err := buildStore(godetsSystem(), bases["godets"], sd.look); err != nil {
		t.Fatal(err)
	}
	if err := buildStore(bolt, bases["bbolt"], sd.look); err != nil {
		t.Fatal(err)
	}
	// Each cycle inserts a new object: next hands out their indexes.
	next := sessionSize
	insertCycles := func(open func() (Store, error)) measure {
		return cycles(t, iters, func(int) error {
			s, err := open()
			if err != nil {
				return err
			}
			err = s.Put(sd.ins, next)
			next++
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			return err
		})
	}
	copyBase := func(name string) string {
		path := filepath.Join(dir, name)
		os.RemoveAll(path)
		if err := CopyTree(bases[strings.Fields(name)[0]], path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	work := []struct {
		name string
		run  func() measure
	}{
		{"godets With", func() measure {
			path := copyBase("godets session")
			return cycles(t, iters, func(int) error {
				i := next
				next++
				return exclusive.With(path, exclusive.Options{}, func(tb *dets.Table) error {
					return tb.Insert(sd.ins.Objects[i])
				})
			})
		}},
		{"godets LikeOTP", func() measure { // the same less the fsync before the closed header
			path := copyBase("godets likeotp")
			opts := exclusive.Options{Table: dets.Options{Durability: dets.LikeOTP}}
			return cycles(t, iters, func(int) error {
				i := next
				next++
				return exclusive.With(path, opts, func(tb *dets.Table) error {
					return tb.Insert(sd.ins.Objects[i])
				})
			})
		}},
		{"bbolt Update", func() measure {
			path := copyBase("bbolt durable")
			return insertCycles(func() (Store, error) { return bolt.Open(path, SetLayout, Durable) })
		}},
		{"bbolt NoSync", func() measure {
			path := copyBase("bbolt nosync")
			return insertCycles(func() (Store, error) { return bolt.Open(path, SetLayout, Fast) })
		}},
		{"fdatasync", func() measure { return bareSyncs(t, filepath.Join(dir, "sync"), iters) }},
	}
	got := map[string][]float64{}
	for round := range rounds {
		var line []string
		for k := range work {
			w := work[(k+round)%len(work)]
			m := w.run()
			got[w.name] = append(got[w.name], m.ns)
			line = append(line, fmt.Sprintf("%s %s", w.name, ns(m.ns)))
		}
		t.Logf("round %d: %s", round+1, strings.Join(line, ", "))
	}
	med := func(name string) float64 {
		v := slices.Clone(got[name])
		slices.Sort(v)
		return v[len(v)/2]
	}
	sync := med("fdatasync")
	t.Logf("medians of %d rounds of %d cycles (a 1,000-object table, one new object a cycle):", rounds, iters)
	for _, w := range work {
		t.Logf("  %-15s %9s = %.2f fdatasyncs", w.name, ns(med(w.name)), med(w.name)/sync)
	}
	t.Logf("  godets / bbolt Update %.2f; bbolt's two fdatasyncs (Update - NoSync) %s = %.2f bare ones; godets' second (With - LikeOTP) %s = %.2f",
		med("godets With")/med("bbolt Update"), ns(med("bbolt Update")-med("bbolt NoSync")),
		(med("bbolt Update")-med("bbolt NoSync"))/sync, ns(med("godets With")-med("godets LikeOTP")),
		(med("godets With")-med("godets LikeOTP"))/sync)
}

// bareSyncs times iters fdatasyncs, each after a 128-byte overwrite of
// one of 16 pages of an existing file (no size change: the cheapest
// fdatasync that writes anything).
func bareSyncs(t *testing.T, path string, iters int) measure {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 16<<12), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 128)
	return cycles(t, iters, func(i int) error {
		b[0] = byte(i)
		if _, err := f.WriteAt(b, int64(i%16)<<12); err != nil {
			return err
		}
		return syscall.Fdatasync(int(f.Fd())) // as dets and bbolt sync on Linux
	})
}
