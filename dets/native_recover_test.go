package dets

import (
	"bytes"
	"errors"
	"fmt"
	mdl "github.com/godets/godets/internal/model"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

// nativeKilled runs a seeded workload on a native table of kind and
// returns a copy of its file taken while the table was still open with
// unsynced writes (what a kill -9 leaves: every written byte, no Close),
// the model of the acknowledged state at that moment, and the key range.
func nativeKilled(t *testing.T, rng *rand.Rand, kind Kind, rounds, opsPerRound int) (string, *mdl.Model, int64) {
	t.Helper()
	return nativeKilledAfter(t, rng, kind, rounds, opsPerRound, nil)
}

// nativeKilledAfter is nativeKilled with a last write of its own (last,
// if not nil) after the random ones.
func nativeKilledAfter(t *testing.T, rng *rand.Rand, kind Kind, rounds, opsPerRound int, last func(*Table, *mdl.Model)) (string, *mdl.Model, int64) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.dets")
	tab := openT(t, path, Options{Kind: kind, Format: Native})
	m := newModel(kind)
	const keys = 600
	for round := range rounds {
		for range opsPerRound {
			nativeRandomOp(t, rng, tab, kind, m, keys)
		}
		if round < rounds-1 {
			if round%2 == 0 {
				must(t, tab.Sync())
			} else {
				must(t, tab.Close())
				tab = openT(t, path, Options{Format: Native})
			}
		}
	}
	if last != nil {
		last(tab, m)
	}
	killed := filepath.Join(dir, "killed.dets")
	must(t, os.WriteFile(killed, readFileT(t, path), 0o644))
	must(t, tab.Close())
	return killed, m, keys
}

// nativeRandomOp applies one random insert, delete or object delete to
// tab and to the model m.
func nativeRandomOp(t *testing.T, rng *rand.Rand, tab *Table, kind Kind, m *mdl.Model, keys int64) {
	t.Helper()
	key := rng.Int63n(keys)
	switch r := rng.Intn(10); {
	case r < 7:
		size := rng.Intn(40)
		if rng.Intn(50) == 0 {
			size = 2000 + rng.Intn(3000)
		}
		obj := etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(make([]byte, size))}
		must(t, tab.Insert(obj))
		m.Insert(obj)
	case r < 9:
		must(t, tab.Delete(etf.Int(key)))
		m.Delete(etf.Int(key))
	default:
		objs := m.Lookup(etf.Int(key))
		if len(objs) == 0 {
			return
		}
		obj := objs[rng.Intn(len(objs))]
		must(t, tab.DeleteObject(obj))
		m.DeleteObject(obj)
	}
}

// nativeCurrentMeta decodes the meta an open of the file would use.
func nativeCurrentMeta(t *testing.T, img []byte) nativeMeta {
	t.Helper()
	s, err := decodeNativeSuper("", img, int64(len(img)))
	must(t, err)
	ma, errA := decodeNativeMeta("", img[nativeMetaAOff:], nativeMetaAOff, &s, int64(len(img)))
	mb, errB := decodeNativeMeta("", img[nativeMetaBOff:], nativeMetaBOff, &s, int64(len(img)))
	m, _, _, ok := chooseNativeMeta(ma, errA, mb, errB)
	if !ok {
		t.Fatalf("no valid meta: %v, %v", errA, errB)
	}
	return m
}

// TestNativeRecover: a native file left by a killed writer opens with
// AutoRepair (recovery, §11.2) and with ForceRepair (the full repair) in
// exactly the acknowledged state; the recovery is checkpointed with the
// recovery flag, closed properly from then on, and writable. Seeded: rerun with -seed.
func TestNativeRecover(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		for _, mode := range []RepairMode{AutoRepair, ForceRepair} {
			t.Run(kind.String()+"/"+mode.String(), func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed))
				killed, m, keys := nativeKilled(t, rng, kind, 3, 400)
				before := readFileT(t, killed)
				if _, err := Open(killed, Options{}); !errors.Is(err, ErrNeedsRepair) {
					t.Fatalf("NoRepair on the killed file: %v, want ErrNeedsRepair", err)
				}
				if !bytes.Equal(readFileT(t, killed), before) {
					t.Fatal("a refused open changed the file")
				}
				tab, err := Open(killed, Options{Repair: mode})
				if err != nil {
					t.Fatalf("%s open of the killed file: %v", mode, err)
				}
				t.Cleanup(func() { tab.Close() })
				st, ok, err := tab.Recovery()
				must(t, err)
				if mode == ForceRepair {
					// The full repair, which applies the log itself
					// (TestNativeForceRepairNotClosed).
					if ok || tab.nat.meta.verifiedGen != 1 {
						t.Fatalf("ForceRepair: Recovery() ok %v, verifiedGen %d; want the full repair", ok, tab.nat.meta.verifiedGen)
					}
					checkModel(t, tab, m, keys)
					must(t, mustCheckErr(tab))
					return
				}
				if !ok || st.Replayed == 0 || st.Replayed != st.Records || st.GroupsCut != 0 || st.Slots == 0 || st.Verified == 0 || st.Verified > st.Slots {
					t.Fatalf("Recovery() = %+v, %v: want every record replayed, at most one verification a slot", st, ok)
				}
				info, err := tab.Info()
				must(t, err)
				if !info.Clean {
					t.Fatal("recovered table not clean")
				}
				checkModel(t, tab, m, keys)
				must(t, mustCheckErr(tab))
				must(t, tab.Close())
				after := readFileT(t, killed)
				if meta := nativeCurrentMeta(t, after); meta.flags&metaFlagRecovery == 0 {
					// Close wrote nothing: the recovery's own meta is current.
					t.Fatalf("current meta flags %#x, want the recovery flag", meta.flags)
				}
				checkRecoveryPending(t, before, after)
				// Closed properly now: NoRepair opens it, and it takes writes.
				tab = openT(t, killed, Options{})
				if _, ok, _ := tab.Recovery(); ok {
					t.Fatal("a clean open reports a recovery")
				}
				checkModel(t, tab, m, keys)
				for range 200 {
					nativeRandomOp(t, rng, tab, kind, m, keys)
				}
				must(t, tab.Close())
				tab = openT(t, killed, Options{})
				checkModel(t, tab, m, keys)
				must(t, tab.Close())
			})
		}
	}
}

// mustCheckErr runs Check.
func mustCheckErr(tab *Table) error { return tab.Check() }

// nativeTestLog reads the log of the current meta's epoch from img, with
// the file offset of each record.
func nativeTestLog(t *testing.T, img []byte) (nativeLog, []uint64, nativeMeta) {
	t.Helper()
	s, err := decodeNativeSuper("", img, int64(len(img)))
	must(t, err)
	m := nativeCurrentMeta(t, img)
	read := func(off uint64, n int) ([]byte, error) { return img[off : off+uint64(n)], nil }
	lg, err := readNativeLog("", read, s.revision, s.fileID, m.gen, m.seq, s.base, uint64(len(img)))
	must(t, err)
	offs := make([]uint64, len(lg.recs))
	for i := range offs {
		page, j := nativeLogHead(m.gen), uint64(i)
		if j >= nativeHeadRecords-1 {
			j -= nativeHeadRecords - 1
			page, j = lg.blocks[j/(nativeBlockRecords-1)], j%(nativeBlockRecords-1)
		}
		offs[i] = page + nativeLogHeader + j*nativeLogRecord
	}
	return lg, offs, m
}

// TestNativeRecoverCut: when the bucket a slot's last PUT names fails its
// check (a write lost to a power loss, or damage), recovery cuts the log
// before that PUT's group and gives the state before it (§11.2 step 3):
// every key reads exactly what the same file reads when its log ends
// before that group (its records zeroed, nothing damaged), and the keys
// outside the group's slots read the model's objects. It compared only
// counts outside the cut slots and nothing inside them, so a recovery
// that emptied the cut slots passed.
func TestNativeRecoverCut(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			// The last write goes to a key the table holds, so that the
			// cut slot has objects to give back.
			killed, m, keys := nativeKilledAfter(t, rng, kind, 2, 300, func(tab *Table, m *mdl.Model) {
				for k := range int64(600) {
					if len(m.Lookup(etf.Int(k))) > 0 {
						obj := etf.Tuple{etf.Int(k), etf.Int(7), etf.Binary("last")}
						must(t, tab.Insert(obj))
						m.Insert(obj)
						return
					}
				}
				t.Fatal("the workload left the table empty")
			})
			img := readFileT(t, killed)
			lg, offs, _ := nativeTestLog(t, img)
			last := lg.recs[len(lg.recs)-1]
			if last.typ != recPut {
				t.Skipf("seed %d: the workload ended in a record of type %d", seed, last.typ)
			}
			group := nativeGroupStart(lg.recs, len(lg.recs)-1)
			cutSlots := map[uint64]bool{}
			for _, r := range lg.recs[group:] {
				if r.typ == recGrow {
					t.Skipf("seed %d: the cut group is a growth step", seed)
				}
				cutSlots[r.slot] = true
			}

			// The state before the group: the same file with the group's
			// records zeroed, so that its log ends before them.
			prefix := slices.Clone(img)
			for _, off := range offs[group:] {
				clear(prefix[off : off+nativeLogRecord])
			}
			prefixPath := filepath.Join(t.TempDir(), "prefix.dets")
			must(t, os.WriteFile(prefixPath, prefix, 0o644))
			want, err := Open(prefixPath, Options{Repair: AutoRepair})
			if err != nil {
				t.Fatalf("AutoRepair with the log cut before the last group: %v", err)
			}
			t.Cleanup(func() { want.Close() })
			if st, _, _ := want.Recovery(); st.GroupsCut != 0 || st.Replayed != group {
				t.Fatalf("prefix image: Recovery() = %+v, want %d records replayed", st, group)
			}

			e := nativeEntry(last.entry)
			img[e.off()+nativeBucketHeader+3] ^= 0x40 // inside the first object
			must(t, os.WriteFile(killed, img, 0o644))
			tab, err := Open(killed, Options{Repair: AutoRepair})
			if err != nil {
				t.Fatalf("AutoRepair with a damaged last bucket: %v", err)
			}
			t.Cleanup(func() { tab.Close() })
			st, _, _ := tab.Recovery()
			if st.GroupsCut != 1 || st.Replayed != st.Records-1 {
				t.Fatalf("Recovery() = %+v: want the last group cut", st)
			}
			inCut := 0
			for key := range keys {
				got, err := tab.Lookup(etf.Int(key))
				must(t, err)
				before, err := want.Lookup(etf.Int(key))
				must(t, err)
				if fmt.Sprint(got) != fmt.Sprint(before) {
					t.Fatalf("Lookup(%d) = %v, the state before the cut group holds %v", key, got, before)
				}
				if cutSlots[tab.slotFor(tab.hashKey(etf.Int(key)))] {
					inCut += len(before)
					continue
				}
				if exp := m.Lookup(etf.Int(key)); fmt.Sprint(got) != fmt.Sprint(exp) {
					t.Fatalf("Lookup(%d) = %v outside the cut slots, the model holds %v", key, got, exp)
				}
			}
			if inCut == 0 {
				t.Fatalf("the cut group's slots held nothing before it: the test shows nothing")
			}
			t.Logf("%d objects in the cut group's slots, as before it", inCut)
			ia, err := tab.Info()
			must(t, err)
			ib, err := want.Info()
			must(t, err)
			if ia.Size != ib.Size || ia.NoKeys != ib.NoKeys {
				t.Fatalf("%d objects and %d keys, the state before the group %d and %d", ia.Size, ia.NoKeys, ib.Size, ib.NoKeys)
			}
			must(t, tab.Check())
		})
	}
}

// TestNativeRecoverFallback: where the log cannot be trusted, recovery
// gives way to the full repair (§11.3), which replays what of the log it
// can verify; with only the free record damaged that is every write.
func TestNativeRecoverFallback(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	killed, model, keys := nativeKilled(t, rng, Bag, 2, 200)
	img := readFileT(t, killed)
	lg, offs, m := nativeTestLog(t, img)
	cases := map[string]func(b []byte){
		"free record fails its checksum": func(b []byte) { b[m.freeOff+16] ^= 1 },
		"a PUT names the live root": func(b []byte) {
			i := slices.IndexFunc(lg.recs, func(r nativeLogRec) bool { return r.typ == recPut })
			r := lg.recs[i]
			r.entry = uint64(nativeBlockEntry(m.rootOff, nativeMinBuddyClass))
			r.encode(b[offs[i]:])
		},
		"a record contradicts the shape": func(b []byte) {
			// A record that is its slot's only one in the log, so that
			// moving it past next leaves no earlier PUT of that slot to
			// become the last and fail its check, which would cut the
			// log before the damage (seed 7632724332328582731 did: the
			// record was a PUT whose slot's earlier bucket had been
			// reused). Past next wherever it sits: after every GROW.
			count := map[uint64]int{}
			past := m.next
			for _, g := range lg.recs {
				switch g.typ {
				case recPut, recEmpty:
					count[g.slot]++
				case recGrow:
					past = max(past, g.slot)
				}
			}
			i := slices.IndexFunc(lg.recs, func(r nativeLogRec) bool {
				return (r.typ == recPut || r.typ == recEmpty) && count[r.slot] == 1
			})
			if i < 0 {
				t.Fatal("no slot has a single record in the log")
			}
			r := lg.recs[i]
			r.typ, r.entry, r.bsum, r.slot = recEmpty, 0, 0, past
			r.encode(b[offs[i]:])
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			b := bytes.Clone(img)
			damage(b)
			p := filepath.Join(t.TempDir(), "f.dets")
			must(t, os.WriteFile(p, b, 0o644))
			for _, mode := range []RepairMode{AutoRepair, ForceRepair} {
				must(t, os.WriteFile(p, b, 0o644))
				tab, err := Open(p, Options{Repair: mode})
				if err != nil {
					t.Fatalf("%s: %v, want the full repair", mode, err)
				}
				if _, ok, _ := tab.Recovery(); ok {
					t.Errorf("%s: a recovery, not the full repair", mode)
				}
				if name == "free record fails its checksum" {
					checkModel(t, tab, model, keys) // the log is whole: every write kept
				}
				must(t, tab.Check())
				must(t, tab.Close())
			}
		})
	}
}

// checkRecoveryPending checks §11.2 step 5 on the free record the
// recovery's checkpoint wrote: every log block of the recovered epoch,
// every cell a PUT named that no slot kept, and every entry a replayed
// slot replaced are quarantined (the checkpoint did not write there, and
// nothing may until the next fsync); every kept cell is live.
func checkRecoveryPending(t *testing.T, before, after []byte) {
	t.Helper()
	lg, _, _ := nativeTestLog(t, before)
	old := nativeCurrentMeta(t, before)
	s, err := decodeNativeSuper("", after, int64(len(after)))
	must(t, err)
	m := nativeCurrentMeta(t, after)
	a, err := decodeNativeFree("", after[m.freeOff:m.freeOff+m.freeLen], int64(m.freeOff), m.freeSum, s.base, m.dataEnd)
	must(t, err)
	kept := map[uint64]nativeEntry{}
	for _, r := range lg.recs {
		if r.typ == recPut || r.typ == recEmpty {
			kept[r.slot] = nativeEntry(r.entry)
		}
	}
	isKept := map[nativeEntry]bool{}
	for _, e := range kept {
		isKept[e] = true
	}
	var want []nativeEntry
	for _, blk := range lg.blocks {
		want = append(want, nativeBlockEntry(blk, nativeLogBlockClass))
	}
	for _, r := range lg.recs {
		if e := nativeEntry(r.entry); r.typ == recPut && !isKept[e] {
			want = append(want, e)
		}
	}
	for slot := range kept {
		if e := nativeOldEntry(t, before, &old, slot); e != 0 {
			want = append(want, e)
		}
	}
	for _, e := range want {
		if !nativeQuarantined(a, e) {
			t.Fatalf("%v, which the recovered epoch named, is not quarantined in the recovery's free record", e)
		}
	}
	for e := range isKept {
		if e != 0 && a.available(e) {
			t.Fatalf("kept bucket %v is free or quarantined in the recovery's free record", e)
		}
	}
}

// nativeQuarantined reports whether e lies in quarantined space of a.
func nativeQuarantined(a *nativeAlloc, e nativeEntry) bool {
	if c := e.cellClass(); c != 0 {
		run := a.base + (e.off()-a.base)&^(nativeRunSize-1)
		if r := a.runs[run]; r != nil {
			i := (e.off() - run) / cellSize(c)
			return r.quar[i/64]&(1<<(i%64)) != 0
		}
		return !a.overlapsFree(run, nativeRunClass) && a.overlapsHeld(run, nativeRunClass)
	}
	k := e.blockClass()
	return !a.overlapsFree(e.off(), k) && !a.overlapsRun(e.off(), k) && a.coveredFree(e.off(), k)
}

// nativeOldEntry is slot's entry in meta m's tree of the file img.
func nativeOldEntry(t *testing.T, img []byte, m *nativeMeta, slot uint64) nativeEntry {
	t.Helper()
	root := img[m.rootOff : m.rootOff+m.rootLen]
	seg := slot / nativeSlotsPerSeg
	part := le.Uint64(root[16*(seg/nativeSegsPerPart):])
	segOff := le.Uint64(img[part+16*(seg%nativeSegsPerPart):])
	return nativeEntry(le.Uint64(img[segOff+8*(slot%nativeSlotsPerSeg):]))
}

// TestNativeRecoverGrowth: an epoch whose log holds growth steps (a GROW
// record and the split's PUTs, one group each) recovers to the grown
// table, its new segments written by the recovery's checkpoint.
func TestNativeRecoverGrowth(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, DuplicateBag} {
		rng := rand.New(rand.NewSource(seed))
		dir := t.TempDir()
		path := filepath.Join(dir, "live.dets")
		// A pending budget above what the epoch writes: no checkpoint of
		// its own may end the epoch before the growth steps.
		tab := openT(t, path, withTuning(Options{Kind: kind, Format: Native}, func(tn *tuning) { tn.nativeBudgetPending = 8 << 20 }))
		m := newModel(kind)
		for i := range 1500 {
			obj := etf.Tuple{etf.Int(int64(i)), etf.Int(rng.Intn(3)), etf.Binary(make([]byte, rng.Intn(30)))}
			must(t, tab.Insert(obj))
			m.Insert(obj)
		}
		must(t, tab.Sync())
		for range 2500 { // past 2,048 keys: growth steps in this epoch
			nativeRandomOp(t, rng, tab, kind, m, 4000)
		}
		for i := 1500; i < 3000; i++ {
			obj := etf.Tuple{etf.Int(int64(i)), etf.Int(0), bin("g")}
			must(t, tab.Insert(obj))
			m.Insert(obj)
		}
		grown, err := tab.Info()
		must(t, err)
		killed := filepath.Join(dir, "killed.dets")
		must(t, os.WriteFile(killed, readFileT(t, path), 0o644))
		must(t, tab.Close())
		rec, err := Open(killed, Options{Repair: AutoRepair})
		if err != nil {
			t.Fatalf("%s: AutoRepair of a killed file with growth in its log: %v", kind, err)
		}
		t.Cleanup(func() { rec.Close() })
		st, _, _ := rec.Recovery()
		info, err := rec.Info()
		must(t, err)
		if st.Grown == 0 || info.NoSlots != grown.NoSlots {
			t.Fatalf("%s: Recovery() = %+v, %v slots; the writer had %v", kind, st, info.NoSlots, grown.NoSlots)
		}
		checkModel(t, rec, m, 4000)
		must(t, rec.Check())
		must(t, rec.Close())
		checkModel(t, openT(t, killed, Options{}), m, 4000)
	}
}
