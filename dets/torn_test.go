package dets

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
)

// tornObject is the only object the workload of TestRepairKilledInsideWrite
// inserts under key k: a binary long enough that buckets often end inside
// one across a page boundary.
func tornObject(k int) etf.Tuple {
	return etf.Tuple{etf.Int(k), etf.Binary(strings.Repeat(string(rune('a'+k%26)), 20+k%90))}
}

// TestRepairKilledInsideWrite models a process killed inside a write: Linux
// stops a buffered write of a process with a fatal signal pending at a
// page boundary, so the first bytes of the write are in the file and the
// rest are what was there before (zeros in a freshly extended file). For
// every write of the table file that crosses a page boundary, and every
// boundary inside it, the image is the file after the writes before it
// plus that write's bytes up to the boundary; AutoRepair must give a table
// holding only objects that were inserted. Before buckets were written
// header-last (writeBucket), a bucket whose last object was a binary cut
// inside its bytes framed and decoded exactly, and the repair kept the
// invented object (a binary ending in zeros), as in killtest's TestKillCLI.
const tornPage = 4096 // the page a killed write stops at

func TestRepairKilledInsideWrite(t *testing.T) {
	cfs := crashfs.New()
	tab, err := Open(crashTablePath, Options{Kind: Set, FS: memFS{cfs}})
	if err != nil {
		t.Fatal(err)
	}
	// Single inserts (writeGroups), batches (insertBatch) and the
	// splits of grow (flush's merged writes).
	k := 0
	r := rand.New(rand.NewPCG(1, 2))
	for k < 6000 {
		n := 1
		if r.IntN(4) == 0 {
			n = 1 + r.IntN(400)
		}
		objs := make([]etf.Term, n)
		for i := range objs {
			objs[i] = tornObject(k)
			k++
		}
		if err := tab.Insert(objs...); err != nil {
			t.Fatal(err)
		}
	}
	log := cfs.Log()
	node := -1
	for _, rec := range log {
		if rec.Kind == crashfs.OpCreate && rec.Name == crashTablePath {
			node = rec.Node
		}
	}
	if node < 0 {
		t.Fatal("no create of the table file in the log")
	}
	cases, repaired := 0, 0
	var before []byte // the file after the writes before rec
	for i, rec := range log {
		if rec.Node != node {
			continue
		}
		switch rec.Kind {
		case crashfs.OpTruncate:
			before = append(before[:min(int64(len(before)), rec.Off)], make([]byte, max(0, rec.Off-int64(len(before))))...)
			continue
		case crashfs.OpWrite:
		default:
			continue
		}
		end := rec.Off + int64(len(rec.Data))
		apply := func() {
			if int64(len(before)) < end {
				before = append(before, make([]byte, end-int64(len(before)))...)
			}
			copy(before[rec.Off:], rec.Data)
		}
		first := (rec.Off/tornPage + 1) * tornPage
		if first >= end {
			apply()
			continue
		}
		for b := first; b < end; b += tornPage {
			img := append([]byte(nil), before...)
			if need := b; int64(len(img)) < need {
				img = append(img, make([]byte, need-int64(len(img)))...)
			}
			copy(img[rec.Off:b], rec.Data[:b-rec.Off])
			cases++
			ifs := crashfs.New()
			ifs.Put(crashTablePath, img)
			rt, err := Open(crashTablePath, Options{Kind: Set, FS: memFS{ifs}, Repair: AutoRepair})
			if err != nil {
				t.Fatalf("write %d (%v) cut at %d: open: %v", i, rec, b, err)
			}
			if err := rt.Check(); err != nil {
				t.Fatalf("write %d (%v) cut at %d: Check: %v", i, rec, b, err)
			}
			repaired++
			for o, err := range rt.All() {
				if err != nil {
					t.Fatalf("write %d cut at %d: All: %v", i, b, err)
				}
				tu, _ := o.(etf.Tuple)
				key, ok := tu[0].(etf.Int)
				if !ok || len(tu) != 2 || !etf.Equal(o, tornObject(int(key))) {
					t.Fatalf("write %d (%v) cut at %d: repair kept an object never inserted: %v", i, rec, b, o)
				}
			}
			rt.Close()
		}
		apply()
	}
	if cases == 0 {
		t.Fatal("no write crossed a page boundary")
	}
	t.Logf("%d images of a write cut at a page boundary, %d repaired", cases, repaired)
}
