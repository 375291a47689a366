package killtest

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testhook"
	"github.com/godets/godets/internal/testutil"
)

// Children are this test binary run again (testutil.Command): the kit's
// GODETS_TEST_CHILD selects the role and these variables carry its
// parameters.
const (
	childPathEnv = "GODETS_KILL_PATH"
	childLogEnv  = "GODETS_KILL_LOG"
	childSeedEnv = "GODETS_KILL_CHILD_SEED"
	childKindEnv = "GODETS_KILL_KIND"
	childModeEnv = "GODETS_KILL_MODE"
	// childFormatEnv is the format a writer child creates its table in:
	// "native" for dets.Native, otherwise otp9.
	childFormatEnv = "GODETS_KILL_FORMAT"
	// childSortEnv, when set, is the repair's in-memory index bound in
	// the child (testhook.RepairMemEntries): a small file then takes the
	// external sort a large one would.
	childSortEnv = "GODETS_KILL_REPAIR_MEM"
)

// The old seed flag and variable still replay (the kit's are -seed and
// GODETS_SEED).
var _ = testutil.SeedAlias("kill.seed", "GODETS_KILL_SEED")

func TestMain(m *testing.M) {
	testutil.RunChildRole(func(role string) int {
		if n, err := strconv.Atoi(os.Getenv(childSortEnv)); err == nil {
			testhook.RepairMemEntries = n
		}
		return runChild(role)
	})
	os.Exit(m.Run())
}

func runChild(role string) int {
	switch role {
	case "writer":
		return writerChild()
	case "verify":
		return verifyChild()
	case "digest":
		return digestChild()
	case "build":
		return buildChild()
	case "repair":
		return repairChild()
	case "forcerepair":
		return forceRepairChild()
	case "onesession":
		return oneSessionChild()
	case "holder":
		return holderChild()
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 4
}

// soak reports whether GODETS_SOAK=1 asks for the long runs.
func soak() bool { return os.Getenv("GODETS_SOAK") == "1" }

// budget picks the iteration count for the normal, -short and soak runs.
func budget(normal, short, soakN int) int {
	switch {
	case soak():
		return soakN
	case testing.Short():
		return short
	}
	return normal
}

// ackLog is the child's append-only log of calls: each record is one line,
// "crc32 payload", fsynced before the child goes on, so after a SIGKILL
// every record but a torn last one reads back.
type ackLog struct{ f *os.File }

func createAckLog(path string) (*ackLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &ackLog{f: f}, nil
}

func (l *ackLog) add(fields ...string) error {
	payload := strings.Join(fields, " ")
	line := fmt.Sprintf("%08x %s\n", crc32.ChecksumIEEE([]byte(payload)), payload)
	if _, err := io.WriteString(l.f, line); err != nil {
		return err
	}
	return l.f.Sync()
}

// readAckLog returns the records of a log as fields. A last line that is
// cut or fails its checksum is a record torn by the kill and is dropped
// (torn reports it); a bad line before the last is an error.
func readAckLog(path string) (recs [][]string, torn bool, err error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i, ln := range lines {
		if ln == "" {
			continue
		}
		last := i == len(lines)-1 || (i == len(lines)-2 && lines[len(lines)-1] == "")
		ok := strings.HasSuffix(ln, "\n") && len(ln) > 10 && ln[8] == ' '
		var payload string
		if ok {
			payload = ln[9 : len(ln)-1]
			sum, perr := strconv.ParseUint(ln[:8], 16, 32)
			ok = perr == nil && uint32(sum) == crc32.ChecksumIEEE([]byte(payload))
		}
		if !ok {
			if last {
				return recs, true, nil
			}
			return nil, false, fmt.Errorf("%s: bad record %d: %q", path, i+1, ln)
		}
		recs = append(recs, strings.Fields(payload))
	}
	return recs, false, nil
}

// keepEvidence copies the files of dir to os.TempDir()/godets-kill-<seed>
// (t.TempDir is removed after the test) and logs where they are.
func keepEvidence(t *testing.T, seed uint64, dir string) {
	t.Helper()
	dst := filepath.Join(os.TempDir(), fmt.Sprintf("godets-kill-%d", seed))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Logf("keep evidence: %v", err)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
		if err != nil {
			t.Logf("keep evidence %s: %v", e.Name(), err)
		}
	}
	t.Logf("kept the failing file and acknowledgement logs in %s", dst)
}

// lineReader reads a child's stdout line by line on a goroutine, so the
// parent can wait for a line and a timer at once.
func lineReader(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	return ch
}
