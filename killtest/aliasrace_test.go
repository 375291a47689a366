package killtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/internal/testutil"
)

// forceRepairChild runs ForceRepair sessions on the file until killed:
// each one renames a rebuilt file over the path while it holds the lock.
func forceRepairChild() int {
	opts := exclusive.Options{Repair: dets.ForceRepair, Wait: exclusive.WaitUpTo(30 * time.Second), Table: dets.Options{Kind: dets.Set}}
	fmt.Println("ready")
	for {
		if err := exclusive.With(os.Getenv(childPathEnv), opts, func(*dets.Table) error { return nil }); err != nil {
			fmt.Println("error:", exclusive.Code(err), err)
			return 3
		}
	}
}

// oneSessionChild runs one session that waits for the lock, as a new
// process does: its first check of the data file runs before the lock.
func oneSessionChild() int {
	opts := exclusive.Options{Wait: exclusive.WaitUpTo(30 * time.Second), Table: dets.Options{Kind: dets.Set}}
	if err := exclusive.With(os.Getenv(childPathEnv), opts, func(*dets.Table) error { return nil }); err != nil {
		fmt.Println("error:", exclusive.Code(err), err)
		return 3
	}
	fmt.Println("ok")
	return 0
}

// TestSessionRacesRepairRename: a session that starts while another
// process's session renames a repaired file over the path must wait and
// then open the new file. TestKillHolder found it failing with
// ErrUnsafeAlias ("hard-linked data file"): the check of the data file
// before the lock opened the old file, which the rename then unlinked, and
// took its link count of 0 for a hard link (lockfile now resolves again).
// Without the fix it failed within 3 to 10 s of sessions.
func TestSessionRacesRepairRename(t *testing.T) {
	run := 10 * time.Second
	if testing.Short() {
		run = 3 * time.Second
	}
	path := filepath.Join(t.TempDir(), "t.dets")
	createCounterTable(t, path)
	cmd := testutil.Command("forcerepair", childPathEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if l := <-lineReader(out); l != "ready" {
		t.Fatalf("child: %q", l)
	}
	sessions := 0
	for end := time.Now().Add(run); time.Now().Before(end); sessions++ {
		b, err := testutil.Command("onesession", childPathEnv+"="+path).Output()
		if got := strings.TrimSpace(string(b)); err != nil || got != "ok" {
			t.Fatalf("session %d in a new process: %s (%v)", sessions, got, err)
		}
	}
	t.Logf("%d sessions without the failure", sessions)
}
