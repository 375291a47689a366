package dets

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/godets/godets/internal/crashfs"
	"github.com/godets/godets/internal/testhook"
)

// TestTestHookRepairMemEntries: testhook.RepairMemEntries, which the kill
// tests set in their children, bounds a repair's in-memory index, so that a
// small dirty file is sorted externally (PATH.TMP.sort is created) and
// still repairs to its content; at zero the same repair stays in memory.
// Not parallel: the hook is global.
func TestTestHookRepairMemEntries(t *testing.T) {
	img, m, _ := killedImage(t, t.TempDir(), Set, rand.New(rand.NewPCG(1, 2)), 400)
	want := m.Objects()
	sortFiles := func() int {
		cfs := crashfs.New()
		cfs.Put("t.dets", img)
		if _, err := Repair("t.dets", Options{FS: memFS{cfs}}, nil); err != nil {
			t.Fatal(err)
		}
		tab := openT(t, "t.dets", Options{FS: memFS{cfs}})
		got, err := sortedContentsErr(tab)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("repaired %d objects, want %d", len(got), len(want))
		}
		n := 0
		for _, r := range cfs.Log() {
			if r.Kind == crashfs.OpCreate && strings.HasSuffix(r.Name, ".TMP.sort") {
				n++
			}
		}
		return n
	}
	if n := sortFiles(); n != 0 {
		t.Fatalf("without the hook the repair of %d objects created %d sort files", len(want), n)
	}
	setForTest(t, &testhook.RepairMemEntries, 50)
	if n := sortFiles(); n == 0 {
		t.Fatalf("with RepairMemEntries 50 the repair of %d objects did not sort externally", len(want))
	}
}
