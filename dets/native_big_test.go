package dets

import (
	"errors"
	mdl "github.com/godets/godets/internal/model"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/godets/godets/etf"
)

// bigBase is the buddy base of TestNativeBeyond4GiB's files: every block
// of the table lies above 4 GiB, and the file is a 5 GiB hole, a few
// hundred KiB of data and the header pages.
const bigBase = 5 << 30

// requireSparse skips the test when the file system of dir does not keep
// a hole of bigBase bytes sparse (a FAT or a compressed overlay would
// write them).
func requireSparse(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "probe")
	f, err := os.Create(p)
	must(t, err)
	defer os.Remove(p)
	defer f.Close()
	if _, err := f.WriteAt([]byte{1}, bigBase); err != nil {
		t.Skipf("the file system of %s refuses a write at 5 GiB: %v", dir, err)
	}
	if allocatedBytes(t, p) > 1<<20 {
		t.Skipf("the file system of %s does not keep sparse files", dir)
	}
}

// copySparse copies a native file of base bigBase without its hole: the
// header pages and everything from the base on. It is how the test takes
// the image of a writer that is still open.
func copySparse(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.Create(dst)
	must(t, err)
	defer out.Close()
	for _, r := range [][2]int64{{0, nativeBase}, {bigBase, -1}} {
		if _, err := in.Seek(r[0], io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if _, err := out.Seek(r[0], io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var rd io.Reader = in
		if r[1] >= 0 {
			rd = io.LimitReader(in, r[1]-r[0])
		}
		if _, err := io.Copy(out, rd); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := in.Stat()
	must(t, err)
	must(t, out.Truncate(fi.Size()))
}

// nativeOffsetsAt reads the current meta's tree of the native file at path
// with positioned reads (the file is mostly a hole, never read whole) and
// returns the file's base and every offset the tree names: root, parts,
// segments, the free record and every slot's bucket.
func nativeOffsetsAt(t *testing.T, path string) (base uint64, offs []uint64) {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	fi, err := f.Stat()
	must(t, err)
	size := fi.Size()
	hb := make([]byte, nativeBase)
	_, err = f.ReadAt(hb, 0)
	must(t, err)
	s, err := decodeNativeSuper(path, hb, size)
	must(t, err)
	ma, errA := decodeNativeMeta(path, hb[nativeMetaAOff:], nativeMetaAOff, &s, size)
	mb, errB := decodeNativeMeta(path, hb[nativeMetaBOff:], nativeMetaBOff, &s, size)
	m, _, _, ok := chooseNativeMeta(ma, errA, mb, errB)
	if !ok {
		t.Fatalf("%s: no valid meta: %v, %v", path, errA, errB)
	}
	read := func(off, n uint64) []byte {
		b := make([]byte, n)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			t.Fatalf("read %d bytes at %d: %v", n, off, err)
		}
		return b
	}
	parts, err := decodeNativeRoot(path, read(m.rootOff, m.rootLen), &m, s.base, nil)
	must(t, err)
	offs = append(offs, m.rootOff, m.freeOff)
	var children [nativeSegsPerPart]nativeChild
	var es [nativeSlotsPerSeg]nativeEntry
	for pi, pc := range parts {
		offs = append(offs, pc.off)
		used := nativeSegsInPart(m.next, uint64(pi))
		must(t, decodeNativePart(path, read(pc.off, nativePageSize), int64(pc.off), pc.sum, used, s.base, m.dataEnd, &children))
		for _, sc := range children[:used] {
			offs = append(offs, sc.off)
			must(t, decodeNativeSegment(path, read(sc.off, nativePageSize), int64(sc.off), sc.sum, s.base, m.dataEnd, &es))
			for _, e := range es {
				if e != 0 {
					offs = append(offs, e.off())
				}
			}
		}
	}
	return s.base, offs
}

// checkAbove4GiB fails unless the file at path keeps the test base and
// every offset its tree names lies above 4 GiB, and unless the file is
// still sparse.
func checkAbove4GiB(t *testing.T, path, when string) {
	t.Helper()
	base, offs := nativeOffsetsAt(t, path)
	if base != bigBase {
		t.Fatalf("%s: base %d, want %d", when, base, uint64(bigBase))
	}
	buckets := 0
	for _, off := range offs {
		if off < 1<<32 {
			t.Fatalf("%s: offset %#x below 4 GiB", when, off)
		}
		buckets++
	}
	if buckets < 100 {
		t.Fatalf("%s: only %d offsets in the tree", when, buckets)
	}
	if a := allocatedBytes(t, path); a > 256<<20 {
		t.Fatalf("%s: %d bytes allocated: the hole was written", when, a)
	}
}

// nativeChurn runs ops seeded overwrites and deletes on tab and the model.
func nativeChurn(t *testing.T, tab *Table, m *mdl.Model, kind Kind, rng *rand.Rand, keys int64, ops int) {
	t.Helper()
	for range ops {
		key := rng.Int63n(keys)
		if rng.Intn(5) == 0 {
			must(t, tab.Delete(etf.Int(key)))
			m.Delete(etf.Int(key))
			continue
		}
		size := rng.Intn(90)
		if rng.Intn(100) == 0 {
			size = 3000 + rng.Intn(9000) // a bucket in a block of its own
		}
		obj := etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(randBytes(rng, size))}
		must(t, tab.Insert(obj))
		m.Insert(obj)
	}
}

// TestNativeBeyond4GiB (docs/format-native.md §15.4): a native table
// whose every block lies above 4 GiB, in a sparse file of a test-only
// base, holds its data after Close, after a reopen, after the recovery of
// a writer's image taken while it was open, and after full repairs of a
// clean file and of such an image; Check is clean each time and the base
// survives every rebuild.
func TestNativeBeyond4GiB(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("a 5 GiB file does not fit a 32-bit address space, which the repair maps it into")
	}
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			requireSparse(t, dir)
			rng := rand.New(rand.NewSource(seed))
			const keys = 3000
			path := filepath.Join(dir, "big.dets")
			tab, m := fillNative(t, path, kind, rng, keys, 4000)
			must(t, tab.Close())
			// The repair's builder moves the table above the test base.
			p := paramsFor(path, Options{}, nil)
			p.nativeBase = bigBase
			if _, err := repairTable(p); err != nil {
				t.Fatalf("repair to base %d: %v", uint64(bigBase), err)
			}
			checkAbove4GiB(t, path, "after the move")

			tab = openT(t, path, Options{})
			checkModel(t, tab, m, keys)
			nativeChurn(t, tab, m, kind, rng, keys, 3000) // grows, allocates, frees
			must(t, tab.Close())
			checkAbove4GiB(t, path, "after Close")

			tab = openT(t, path, Options{})
			checkModel(t, tab, m, keys)
			mustCheck(t, tab)
			nativeChurn(t, tab, m, kind, rng, keys, 400)
			must(t, tab.Sync())
			nativeChurn(t, tab, m, kind, rng, keys, 300) // in the log only
			recovered := filepath.Join(dir, "recovered.dets")
			repaired := filepath.Join(dir, "repaired.dets")
			copySparse(t, path, recovered)
			copySparse(t, path, repaired)
			must(t, tab.Close())
			checkAbove4GiB(t, path, "after the second Close")

			// A writer's image: AutoRepair recovers it from the log.
			tab = openT(t, recovered, Options{Repair: AutoRepair})
			if _, ok, err := tab.Recovery(); err != nil || !ok {
				t.Fatalf("open of the image: recovery %v, %v", ok, err)
			}
			checkModel(t, tab, m, keys)
			mustCheck(t, tab)
			must(t, tab.Close())
			checkAbove4GiB(t, recovered, "after recovery")

			// The same image, fully repaired.
			tab = openT(t, repaired, Options{Repair: ForceRepair})
			if tab.nat.meta.verifiedGen != 1 {
				t.Fatalf("ForceRepair of the image: verifiedGen %d, want a full repair", tab.nat.meta.verifiedGen)
			}
			checkModel(t, tab, m, keys)
			mustCheck(t, tab)
			must(t, tab.Close())
			checkAbove4GiB(t, repaired, "after ForceRepair of the image")

			// And the closed file, fully repaired.
			st, err := Repair(path, Options{}, nil)
			must(t, err)
			if st.ObjectsDropped != 0 {
				t.Fatalf("repair of the closed file: %+v", st)
			}
			checkAbove4GiB(t, path, "after Repair")
			tab = openT(t, path, Options{})
			checkModel(t, tab, m, keys)
			mustCheck(t, tab)
			if _, err := os.Stat(tmpPath(path)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("PATH.TMP left: %v", err)
			}
		})
	}
}
