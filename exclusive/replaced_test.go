//go:build unix

package exclusive

import (
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
	"golang.org/x/sys/unix"
)

// blockedOn counts the requests /proc/locks shows blocked on the sidecar's
// inode.
func blockedOn(t *testing.T, sidecar string) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(sidecar, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	suffix := ":" + strconv.FormatUint(st.Ino, 10)
	n := 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && strings.HasSuffix(f[6], suffix) {
			n++
		}
	}
	return n
}

func dataIno(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// Issue #16 item 8: a holder is SIGKILLed mid-write, leaving the file
// dirty, while several AutoRepair sessions of other processes wait for the
// lock. The first to get it repairs, which renames a rebuilt file over the
// data path; the others must then go on with the new file, not fail as an
// unsafe alias (they did in 14 rounds of 15). Three rounds, four waiters.
func TestWaitersAfterRepairRename(t *testing.T) {
	const rounds, waiters = 3, 4
	path := filepath.Join(t.TempDir(), "t.dets")
	if err := With(path, Options{}, func(t *dets.Table) error {
		return t.Insert(etf.Tuple{countKey, etf.Int(0)})
	}); err != nil {
		t.Fatal(err)
	}
	sidecar := path + lockfile.SidecarSuffix
	for round := range rounds {
		before, err := Do(path, Options{Repair: dets.AutoRepair}, readCount)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		holder := startChild(t, "dirty", path)
		holder.ExpectLine(t, "locked")
		inoBefore := dataIno(t, path)
		kids := make([]*testutil.Child, waiters)
		for i := range kids {
			kids[i] = startChild(t, "repairwait", path)
		}
		for i, c := range kids {
			if line, err := c.Stdout.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
				t.Fatalf("round %d: waiter %d: %q %v", round, i, line, err)
			}
		}
		// Kill once every waiter has resolved the path and waits; a
		// waiter blocked in the kernel shows in /proc/locks (a polling
		// one does not, hence the bound).
		for deadline := time.Now().Add(2 * time.Second); blockedOn(t, sidecar) < waiters && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(30 * time.Millisecond)
		if err := holder.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = holder.Cmd.Wait()

		var got []int64
		for i, c := range kids {
			line, _ := c.Stdout.ReadString('\n')
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "ok" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				got = append(got, n)
			} else {
				t.Errorf("round %d: waiter %d: %s", round, i, strings.TrimSpace(line))
			}
			_ = c.Cmd.Wait()
		}
		if t.Failed() {
			t.FailNow()
		}
		if ino := dataIno(t, path); ino == inoBefore {
			t.Fatalf("round %d: the data file was not replaced (inode %d): no repair ran", round, ino)
		}
		// The killed holder's 41 may or may not have reached the disk;
		// after the repair the waiters counted up from one base.
		slices.Sort(got)
		base := got[0] - 1
		if base != before && base != 41 {
			t.Fatalf("round %d: counter values %v after %d", round, got, before)
		}
		for i, n := range got {
			if n != base+int64(i)+1 {
				t.Fatalf("round %d: counter values %v: lost or repeated increments", round, got)
			}
		}
		t.Logf("round %d: waiters counted %v after the repair", round, got)
	}
}
