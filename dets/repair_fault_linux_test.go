package dets

import (
	"bytes"
	"errors"
	"github.com/godets/godets/internal/testutil"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// rfDirtyImage returns the bytes of a set of n objects {I, I, <<pad>>} as a
// kill -9 leaves them (the table still open, so the header says dirty),
// and the sorted encodings of its objects.
func rfDirtyImage(t *testing.T, n int) ([]byte, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.dets")
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(Set)
	for i := range n {
		insertBoth(t, tab, m, paddedObj(i, i, 100))
	}
	img := readFileT(t, path)
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	return img, m.Objects()
}

// rfFill writes zeros to a file in dir until the file system is full.
func rfFill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for {
		if _, err := f.Write(zeroBlock[:]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the file system: %v", err)
			}
			break
		}
	}
	// Small writes take the last partial block.
	for {
		if _, err := f.Write(zeroBlock[:512]); err != nil {
			break
		}
	}
	return path
}

// rfCheckFullDiskError checks the error of a repair that found the disk
// full: ENOSPC, a *MapFaultError, not a request to repair (exit 1, not 2).
func rfCheckFullDiskError(t *testing.T, what string, err error) {
	t.Helper()
	var mf *MapFaultError
	switch {
	case err == nil:
		t.Fatalf("%s on a full disk succeeded", what)
	case !errors.Is(err, syscall.ENOSPC):
		t.Fatalf("%s: %v, want ENOSPC", what, err)
	case !errors.As(err, &mf) || !errors.Is(err, ErrMapFault):
		t.Fatalf("%s: %v (%T), want a *MapFaultError", what, err, err)
	case errors.Is(err, ErrNeedsRepair), errors.Is(err, ErrCorrupt):
		t.Fatalf("%s: %v also matches ErrNeedsRepair or ErrCorrupt", what, err)
	case strings.Contains(err.Error(), "\n"):
		t.Fatalf("%s: the message has several lines: %q", what, err)
	}
	t.Logf("%s: %v", what, err)
}

// TestRepairSparseFileOnFullDisk: a full tmpfs holds a dirty table that is
// longer than its data (an ENOSPC can leave it sparse). Reading the hole
// through the repair's memory map needs a page the file system cannot
// give, which raises SIGBUS. Repair, an AutoRepair open and the dets
// repair command must all fail with ENOSPC (the command with exit 1),
// leave the file byte-identical and leave no temporary file; once space
// is freed the repair brings back every object.
func TestRepairSparseFileOnFullDisk(t *testing.T) {
	dir := testutil.SmallTmpfs(t, "4m")
	img, want := rfDirtyImage(t, 2000)
	path := filepath.Join(dir, "sparse.dets")
	writeFileT(t, path, img)
	if err := os.Truncate(path, int64(len(img))+1<<20); err != nil {
		t.Fatal(err)
	}
	filler := rfFill(t, dir)
	orig := fileHash(t, path)
	unchanged := func(what string) {
		t.Helper()
		if fileHash(t, path) != orig {
			t.Fatalf("%s changed the file", what)
		}
		noTempsIn(t, dir)
	}

	_, err := Repair(path, Options{}, nil)
	rfCheckFullDiskError(t, "Repair", err)
	unchanged("Repair")
	// The same with the scan split: its helper goroutine meets the hole.
	_, err = Repair(path, withTuning(Options{}, func(tn *tuning) { tn.parallelScanMin = 0 }), nil)
	rfCheckFullDiskError(t, "Repair with a split scan", err)
	unchanged("Repair with a split scan")

	tab, err := Open(path, Options{Repair: AutoRepair})
	if err == nil {
		tab.Close()
	}
	rfCheckFullDiskError(t, "AutoRepair open", err)
	unchanged("AutoRepair open")

	if !testing.Short() {
		bin := filepath.Join(t.TempDir(), "dets")
		build := exec.Command("go", "build", "-o", bin, "github.com/godets/godets/cmd/dets")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "repair", path)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("dets repair: %v, want exit 1; stderr:\n%s", err, stderr.Bytes())
		}
		msg := strings.TrimSuffix(stderr.String(), "\n")
		if msg == "" || strings.Contains(msg, "\n") || !strings.Contains(msg, "no space left") {
			t.Fatalf("dets repair: stderr %q, want one line naming the full disk", msg)
		}
		t.Logf("dets repair: exit 1: %s", msg)
		unchanged("dets repair")
	}

	// The setup was real: with space, the same file repairs.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path, Options{}, nil); err != nil {
		t.Fatalf("repair after freeing space: %v", err)
	}
	if got := reopenClean(t, path); !slices.Equal(got, want) {
		t.Fatalf("repaired %d objects, want %d", len(got), len(want))
	}
	noTempsIn(t, dir)
}

// TestRepairSourceTruncatedMidway truncates the old file between the scan
// and the build, as another process could: the build's reads of the map
// then fault. Each way of building (planned, two builders, the external
// sort) must fail with a *MapFaultError wrapping io.ErrUnexpectedEOF,
// remove its temporary files and leave the file as the truncation left it.
func TestRepairSourceTruncatedMidway(t *testing.T) {
	t.Parallel()
	img, _ := rfDirtyImage(t, 3000)
	for _, c := range []struct {
		name            string
		parallel, limit int
	}{
		{"planned", 1 << 16, repairMemEntriesMax},
		{"split", 1, repairMemEntriesMax},
		{"external", 1 << 16, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, splits := countSplits(withTuning(Options{}, func(tn *tuning) {
				tn.parallelBuildMin, tn.repairMemEntries = c.parallel, c.limit
			}))
			dir := t.TempDir()
			path := filepath.Join(dir, "t.dets")
			writeFileT(t, path, img)
			cut := false
			progress := func(p RepairProgress) {
				if p.Phase == "scan" && p.BytesScanned == p.BytesTotal && !cut {
					cut = true
					if err := os.Truncate(path, 4096); err != nil {
						t.Error(err)
					}
				}
			}
			_, err := Repair(path, opts, progress)
			if split := splits.Load() > 0; split != (c.name == "split") {
				t.Fatalf("the build ran on two goroutines: %v", split)
			}
			var mf *MapFaultError
			if !cut || !errors.As(err, &mf) || !errors.Is(err, ErrMapFault) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("repair of a file cut after the scan (cut %v): %v, want a *MapFaultError of io.ErrUnexpectedEOF", cut, err)
			}
			if mf.Offset < 4096 || mf.Offset >= int64(len(img)) || mf.Path != path {
				t.Fatalf("fault at offset %d of %s, want one in [4096, %d) of %s", mf.Offset, mf.Path, len(img), path)
			}
			t.Logf("%v", err)
			if got := readFileT(t, path); !bytes.Equal(got, img[:4096]) {
				t.Fatalf("the file has %d bytes after the failed repair, not the 4096 the cut left", len(got))
			}
			noTempsIn(t, dir)
		})
	}
}
