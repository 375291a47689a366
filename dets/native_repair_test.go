package dets

import (
	"errors"
	mdl "github.com/godets/godets/internal/model"
	"math/rand"
	"os"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

// fillNative writes a seeded workload of inserts, overwrites and deletes
// into a new native table of kind at path and returns the model of what it
// holds; the table is left open.
func fillNative(t *testing.T, path string, kind Kind, rng *rand.Rand, keys int64, ops int) (*Table, *mdl.Model) {
	t.Helper()
	return fillNativeOpts(t, path, Options{Kind: kind, Format: Native}, rng, keys, ops)
}

// fillNativeOpts is fillNative with the table opened with opts.
func fillNativeOpts(t *testing.T, path string, opts Options, rng *rand.Rand, keys int64, ops int) (*Table, *mdl.Model) {
	t.Helper()
	tab := openT(t, path, opts)
	m := newModel(opts.Kind)
	for range ops {
		key := rng.Int63n(keys)
		switch r := rng.Intn(10); {
		case r < 8:
			size := rng.Intn(60)
			if rng.Intn(200) == 0 {
				size = 2100 + rng.Intn(5000) // a bucket in a buddy block
			}
			obj := etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(randBytes(rng, size))}
			must(t, tab.Insert(obj))
			m.Insert(obj)
		default:
			must(t, tab.Delete(etf.Int(key)))
			m.Delete(etf.Int(key))
		}
	}
	return tab, m
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// checkRepaired opens the repaired file and compares it with the model; it
// also checks the new file's meta: generation 1, verified at 1, and a seq
// above minSeq.
func checkRepaired(t *testing.T, path string, m *mdl.Model, keys int64, minSeq uint64) {
	t.Helper()
	tab := openT(t, path, Options{Repair: NoRepair})
	checkModel(t, tab, m, keys)
	nm := tab.nat.meta
	if nm.gen != 1 || nm.verifiedGen != 1 || nm.seq <= minSeq {
		t.Fatalf("repaired meta: gen %d, verified %d, seq %d; want 1, 1, above %d", nm.gen, nm.verifiedGen, nm.seq, minSeq)
	}
	mustCheck(t, tab)
	must(t, tab.Close())
}

// TestNativeRepairKeepsAll: a full repair of a sound native file, of each
// kind, keeps every object, drops nothing, and writes a file that opens
// closed, with sequence numbers above the old file's.
func TestNativeRepairKeepsAll(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "r.dets")
			const keys = 4000
			tab, m := fillNative(t, path, kind, rng, keys, 6000)
			must(t, tab.Close())
			oldSeq := readNativeMetaT(t, path).seq
			var last RepairProgress
			st, err := Repair(path, Options{}, func(p RepairProgress) {
				if p.BytesScanned < last.BytesScanned || (p.Phase == last.Phase && p.Objects < last.Objects) {
					t.Errorf("progress went backwards: %+v after %+v", p, last)
				}
				last = p
			})
			must(t, err)
			if last.Phase != "write" || last.BytesScanned != last.BytesTotal || last.Objects != st.Objects {
				t.Errorf("last progress report %+v; stats %+v", last, st)
			}
			objects := 0
			for o := range m.ByKey() {
				objects += len(o)
			}
			if st.ObjectsFound != int64(objects) || st.ObjectsDropped != 0 || st.Objects != int64(objects) || st.NodesDamaged != 0 {
				t.Fatalf("stats %+v, want %d objects found and kept, none dropped", st, objects)
			}
			checkRepaired(t, path, m, keys, oldSeq)
			if _, err := os.Stat(tmpPath(path)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("PATH.TMP left behind: %v", err)
			}
		})
	}
}

// readNativeMetaT returns the current meta of the native file at path.
func readNativeMetaT(t *testing.T, path string) nativeMeta {
	t.Helper()
	data := readFileT(t, path)
	s, err := decodeNativeSuper(path, data, int64(len(data)))
	must(t, err)
	ma, errA := decodeNativeMeta(path, data[nativeMetaAOff:], nativeMetaAOff, &s, int64(len(data)))
	mb, errB := decodeNativeMeta(path, data[nativeMetaBOff:], nativeMetaBOff, &s, int64(len(data)))
	m, _, _, ok := chooseNativeMeta(ma, errA, mb, errB)
	if !ok {
		t.Fatalf("%s: no valid meta", path)
	}
	return m
}

// TestNativeForceRepairOpen: Open with ForceRepair rebuilds a clean native
// file and opens the result; read-only it is refused and the file is left
// byte-identical.
func TestNativeForceRepairOpen(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	path := tmpFile(t, "f.dets")
	tab, m := fillNative(t, path, Set, rng, 1000, 1500)
	must(t, tab.Close())
	before := readFileT(t, path)
	if _, err := Open(path, Options{ReadOnly: true, Repair: ForceRepair}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only ForceRepair: %v, want ErrReadOnly", err)
	}
	if !slices.Equal(before, readFileT(t, path)) {
		t.Fatal("a refused forced repair changed the file")
	}
	oldSeq := readNativeMetaT(t, path).seq
	tab = openT(t, path, Options{Repair: ForceRepair})
	checkModel(t, tab, m, 1000)
	if tab.nat.meta.gen != 1 || tab.nat.meta.verifiedGen != 1 {
		t.Fatalf("ForceRepair left meta gen %d verified %d", tab.nat.meta.gen, tab.nat.meta.verifiedGen)
	}
	must(t, tab.Insert(tup(etf.Int(5000), bin("after"))))
	m.Insert(tup(etf.Int(5000), bin("after")))
	must(t, tab.Close())
	tab = openT(t, path, Options{Repair: NoRepair})
	checkModel(t, tab, m, 5001)
	if tab.nat.meta.seq <= oldSeq {
		t.Fatalf("seq %d after ForceRepair, not above the old %d", tab.nat.meta.seq, oldSeq)
	}
	must(t, tab.Close())
}

// TestNativeRepairKilledWriter: a copy of the file taken while the writer
// is still open (its acknowledged writes in the log, no checkpoint since
// the last Sync) repairs to every acknowledged write: the repair applies
// the log as recovery would before it walks the tree.
func TestNativeRepairKilledWriter(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "k.dets")
			const keys = 1500
			tab, m := fillNative(t, path, kind, rng, keys, 2000)
			must(t, tab.Sync())
			for range 300 {
				key := rng.Int63n(keys)
				if rng.Intn(4) == 0 {
					must(t, tab.Delete(etf.Int(key)))
					m.Delete(etf.Int(key))
					continue
				}
				obj := etf.Tuple{etf.Int(key), etf.Int(7), etf.Binary(randBytes(rng, rng.Intn(30)))}
				must(t, tab.Insert(obj))
				m.Insert(obj)
			}
			killed := tmpFile(t, "killed.dets")
			must(t, os.WriteFile(killed, readFileT(t, path), 0o644))
			must(t, tab.Close())
			st, err := Repair(killed, Options{}, nil)
			must(t, err)
			if st.ObjectsDropped != 0 {
				t.Fatalf("stats %+v: dropped objects of an undamaged file", st)
			}
			checkRepaired(t, killed, m, keys, 0)
		})
	}
}
