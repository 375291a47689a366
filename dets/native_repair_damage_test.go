package dets

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/godets/godets/etf"
	mdl "github.com/godets/godets/internal/model"
)

// The damage tests of docs/format-native.md §15.6 with exact expectations:
// native objects check on their own, so the tests know which objects a
// damage touched and assert that repair drops exactly those.

// nativeRecord is one object record of a native file, as the tree names it.
type nativeRecord struct {
	off, etfOff, end uint64 // record start, ETF start, record end
	key              int64
	obj              etf.Term
	bucket           uint64 // the bucket's offset
}

// nativeRecords walks the tree of the file's current meta with the codecs
// (not the repair's scan) and returns every object record in slot order.
func nativeRecords(t *testing.T, data []byte) []nativeRecord {
	t.Helper()
	size := int64(len(data))
	s, err := decodeNativeSuper("", data, size)
	must(t, err)
	ma, errA := decodeNativeMeta("", data[nativeMetaAOff:], nativeMetaAOff, &s, size)
	mb, errB := decodeNativeMeta("", data[nativeMetaBOff:], nativeMetaBOff, &s, size)
	m, _, _, ok := chooseNativeMeta(ma, errA, mb, errB)
	if !ok {
		t.Fatal("no valid meta")
	}
	parts, err := decodeNativeRoot("", data[m.rootOff:m.rootOff+m.rootLen], &m, s.base, nil)
	must(t, err)
	var out []nativeRecord
	var children [nativeSegsPerPart]nativeChild
	var es [nativeSlotsPerSeg]nativeEntry
	for pi, pc := range parts {
		used := nativeSegsInPart(m.next, uint64(pi))
		must(t, decodeNativePart("", data[pc.off:pc.off+nativePageSize], int64(pc.off), pc.sum, used, s.base, m.dataEnd, &children))
		for _, sc := range children[:used] {
			must(t, decodeNativeSegment("", data[sc.off:sc.off+nativePageSize], int64(sc.off), sc.sum, s.base, m.dataEnd, &es))
			for _, e := range es {
				if e == 0 {
					continue
				}
				b := data[e.off() : e.off()+e.room()]
				_, err := walkNativeBucket("", b, int64(e.off()), e.room(), int(s.keyPos), func(recOff int64, enc, kenc []byte) error {
					v, err := etf.Decode(enc)
					if err != nil {
						return err
					}
					etfOff := uint64(recOff) + 8 + uint64(uvarintLen(uint64(len(enc))))
					out = append(out, nativeRecord{off: uint64(recOff), etfOff: etfOff, end: etfOff + uint64(len(enc)),
						key: int64(v.(etf.Tuple)[0].(etf.Int)), obj: v, bucket: e.off()})
					return nil
				})
				must(t, err)
			}
		}
	}
	return out
}

// recordsModel groups records by key, in file order within each key (a
// duplicate_bag model appends every record it is given).
func recordsModel(recs []nativeRecord, skip map[int]bool) *mdl.Model {
	m := mdl.New(mdl.DuplicateBag, 1)
	for i, r := range recs {
		if !skip[i] {
			m.Insert(r.obj)
		}
	}
	return m
}

// repairedFile builds a native table of kind with a seeded workload of
// inserts and overwrites (no deletes, so that the raw scan's one gap, an
// emptied slot, cannot arise), closes it and returns its path.
func repairedFile(t *testing.T, kind Kind, rng *rand.Rand, keys int64, ops int) string {
	t.Helper()
	path := tmpFile(t, "d.dets")
	tab := openT(t, path, Options{Kind: kind, Format: Native})
	for range ops {
		key := rng.Int63n(keys)
		size := rng.Intn(80)
		if rng.Intn(300) == 0 {
			size = 2100 + rng.Intn(3000)
		}
		must(t, tab.Insert(etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(randBytes(rng, size))}))
		if rng.Intn(500) == 0 {
			must(t, tab.Sync())
		}
	}
	must(t, tab.Close())
	return path
}

// TestNativeRepairDropsExactlyTouched: random bytes written inside the ETF
// of chosen objects (their lengths, version bytes and tuple tags left
// whole) make repair drop exactly
// those objects and keep every other one, also the other objects of their
// buckets; the dropped count is the touched count.
func TestNativeRepairDropsExactlyTouched(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			const keys = 3000
			path := repairedFile(t, kind, rng, keys, 5000)
			data := readFileT(t, path)
			orig := bytes.Clone(data)
			recs := nativeRecords(t, data)
			touched := map[int]bool{}
			for i, r := range recs {
				if rng.Intn(20) != 0 {
					continue
				}
				n := 1 + rng.Intn(4)
				for range n {
					// Past the version byte and the tuple tag: two adjacent
					// damaged records are told apart by the second's.
					at := r.etfOff + 2 + uint64(rng.Int63n(int64(r.end-r.etfOff-2)))
					data[at] ^= byte(1 + rng.Intn(255))
				}
				// Two changes of one byte can cancel out.
				touched[i] = !bytes.Equal(data[r.etfOff:r.end], orig[r.etfOff:r.end])
			}
			for i, hit := range touched {
				if !hit {
					delete(touched, i)
				}
			}
			must(t, os.WriteFile(path, data, 0o644))
			st, err := Repair(path, Options{}, nil)
			must(t, err)
			if st.ObjectsDropped != int64(len(touched)) || st.ObjectsChecksumFailed != int64(len(touched)) ||
				st.ObjectsFound != int64(len(recs)-len(touched)) {
				t.Fatalf("stats %+v: want %d dropped (checksum), %d found", st, len(touched), len(recs)-len(touched))
			}
			checkRepaired(t, path, recordsModel(recs, touched), keys, 0)
		})
	}
}

// TestNativeRepairResyncsDamagedLength: a damaged length makes the record
// fail; repair finds the next record by its checksum and keeps it.
func TestNativeRepairResyncsDamagedLength(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	const keys = 600
	path := repairedFile(t, Bag, rng, keys, 3000)
	must(t, Repair1(path)) // cells with zero tails, buckets of several records
	data := readFileT(t, path)
	recs := nativeRecords(t, data)
	touched := map[int]bool{}
	for i, r := range recs {
		// A record that is not its bucket's last, and whose successor is
		// untouched: its length byte gets a larger value.
		if i+1 >= len(recs) || recs[i+1].bucket != r.bucket || touched[i-1] || rng.Intn(10) != 0 {
			continue
		}
		touched[i] = true
		data[r.off+8] ^= 0x40
	}
	must(t, os.WriteFile(path, data, 0o644))
	st, err := Repair(path, Options{}, nil)
	must(t, err)
	if st.ObjectsDropped != int64(len(touched)) {
		t.Fatalf("stats %+v: want %d dropped", st, len(touched))
	}
	checkRepaired(t, path, recordsModel(recs, touched), keys, 0)
}

// Repair1 repairs path with default options.
func Repair1(path string) error {
	_, err := Repair(path, Options{}, nil)
	return err
}

// TestNativeRepairDamagedHeader: a bucket whose header fails is read by
// its records' framing; every object is kept.
func TestNativeRepairDamagedHeader(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	const keys = 2000
	path := repairedFile(t, DuplicateBag, rng, keys, 3000)
	must(t, Repair1(path))
	data := readFileT(t, path)
	recs := nativeRecords(t, data)
	hit := map[uint64]bool{}
	for _, r := range recs {
		if !hit[r.bucket] && rng.Intn(8) == 0 {
			hit[r.bucket] = true
			data[r.bucket+uint64(rng.Intn(nativeBucketHeader))] ^= byte(1 + rng.Intn(255))
		}
	}
	must(t, os.WriteFile(path, data, 0o644))
	st, err := Repair(path, Options{}, nil)
	must(t, err)
	if st.ObjectsDropped != 0 || st.ObjectsFound != int64(len(recs)) {
		t.Fatalf("stats %+v: want all %d objects, none dropped (%d headers damaged)", st, len(recs), len(hit))
	}
	checkRepaired(t, path, recordsModel(recs, nil), keys, 0)
}

// TestNativeRepairRawScan: a damaged segment, a damaged root, and both
// metas lost: the raw scan finds every object, and the authority rule
// keeps each key's newest version although older buckets of the same
// slots are still in free space.
func TestNativeRepairRawScan(t *testing.T) { checkRawScanRepair(t, testSeed(t)) }

// TestNativeRepairRawScanStaleCopies pins seeds whose files hold stale
// buckets overlapped by later cells: one outranked in its own (level,
// slot), one superseded by the two halves of its split. Their failing and
// misplaced records are not drops (nothing is lost).
func TestNativeRepairRawScanStaleCopies(t *testing.T) {
	for _, seed := range []int64{8281734268476509271, 1528930726485561047} {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) { checkRawScanRepair(t, seed) })
	}
}

func checkRawScanRepair(t *testing.T, seed int64) {
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		for _, what := range []string{"segment", "root", "metas"} {
			t.Run(kind.String()+"/"+what, func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed))
				const keys = 1500
				path := repairedFile(t, kind, rng, keys, 4000)
				data := readFileT(t, path)
				recs := nativeRecords(t, data)
				m := readNativeMetaT(t, path)
				opts := Options{}
				switch what {
				case "segment", "root":
					rootB := data[m.rootOff : m.rootOff+m.rootLen]
					target := m.rootOff
					if what == "segment" {
						part := le.Uint64(rootB)
						target = le.Uint64(data[part:]) // part 0, segment 0
					}
					data[target+uint64(rng.Intn(16))] ^= 0x10
				case "metas":
					clear(data[nativeMetaAOff : nativeMetaAOff+2*nativePageSize])
				}
				must(t, os.WriteFile(path, data, 0o644))
				st, err := Repair(path, opts, nil)
				must(t, err)
				wantNodes := int64(1)
				if what == "metas" {
					wantNodes = 0
				}
				// Ambiguous counts the stale records left in cell tails
				// whose keys a newer bucket speaks for: dropped, rightly.
				if st.NodesDamaged != wantNodes || st.ObjectsDropped != 0 {
					t.Fatalf("stats %+v: want %d damaged nodes, nothing dropped", st, wantNodes)
				}
				t.Logf("stats %+v", st)
				checkRepaired(t, path, recordsModel(recs, nil), keys, 0)
			})
		}
	}
}

// TestNativeDamageEveryBit flips every bit of the superblock, of both
// metas, of the free record and of a log head page, one at a time, then
// opens the file and repairs it: each gives a typed error or a table that
// holds exactly what it should, never a panic; a refused file stays
// byte-identical.
func TestNativeDamageEveryBit(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	base := tmpFile(t, "base.dets")
	tab := openT(t, base, Options{Kind: Set, Format: Native})
	snap := []*mdl.Model{}
	model := newModel(Set)
	const keys = 400
	for i := range 300 {
		obj := tup(etf.Int(int64(i%keys)), etf.Binary(randBytes(rng, rng.Intn(20))))
		must(t, tab.Insert(obj))
		model.Insert(obj)
		if i == 150 {
			must(t, tab.Close())
			tab = openT(t, base, Options{})
		}
	}
	must(t, tab.Sync())
	// An epoch of 40 single-record groups: snapshot j is the state after
	// j of them.
	snap = append(snap, model.Clone())
	for range 40 {
		obj := tup(etf.Int(rng.Int63n(keys)), etf.Binary(randBytes(rng, rng.Intn(20))))
		must(t, tab.Insert(obj))
		model.Insert(obj)
		snap = append(snap, model.Clone())
	}
	open := readFileT(t, base) // the writer killed here: the log holds 40 records
	gen := tab.nat.meta.gen
	prefix := survivingPrefixes(t, base, open, tab.nat)
	must(t, tab.Close())
	closed := readFileT(t, base)
	m := readNativeMetaT(t, base)
	// Every bit in the soak mode (GODETS_SOAK=1: about five minutes),
	// every 17th by default, every 41st with -short: the bits between
	// are the same kind of damage.
	step := 17
	switch {
	case os.Getenv("GODETS_SOAK") == "1":
		step = 1
	case testing.Short():
		step = 41
	}
	type region struct {
		name     string
		img      []byte
		off, len uint64
		want     func(bit int) *mdl.Model // the state a repair must give
	}
	final := snap[len(snap)-1]
	head := nativeLogHead(gen)
	regions := []region{
		{"superblock", closed, 0, nativeSuperSize, func(int) *mdl.Model { return final }},
		{"meta A", closed, nativeMetaAOff, nativeMetaSize, func(int) *mdl.Model { return final }},
		{"meta B", closed, nativeMetaBOff, nativeMetaSize, func(int) *mdl.Model { return final }},
		{"free record", closed, m.freeOff, m.freeLen, func(int) *mdl.Model { return final }},
		{"log head", open, head, nativeLogHeader + 42*nativeLogRecord, func(bit int) *mdl.Model {
			b := bit / 8
			if b < nativeLogHeader {
				return snap[0]
			}
			return snap[prefix[min((b-nativeLogHeader)/nativeLogRecord, 40)]]
		}},
	}
	const path = "/t.dets"
	for _, r := range regions {
		for bit := 0; bit < int(r.len)*8; bit += step {
			// In memory: thousands of repairs, whose fsyncs would
			// dominate; a new one each time, as it keeps every write.
			mem := newMemFS()
			img := slices.Clone(r.img)
			img[r.off+uint64(bit/8)] ^= 1 << (bit % 8)
			mem.put(path, img)
			// Open decides by the rules of §11.5 (the open path's own
			// tests check which state it gives); here: no panic, and a
			// refusal leaves the file as it was.
			if tab, err := Open(path, Options{FS: mem, Repair: NoRepair, ReadOnly: true}); err == nil {
				tab.Close()
			} else if !bytes.Equal(mem.get(path), img) {
				t.Fatalf("%s bit %d: a refused open changed the file: %v", r.name, bit, err)
			}
			for _, opts := range []Options{{FS: mem}, {FS: mem, Kind: Set, KeyPos: 1}} {
				mem.put(path, img)
				st, err := Repair(path, opts, nil)
				if err != nil {
					var ce *CorruptionError
					if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotDETS) && !errors.Is(err, ErrUnsupportedVersion) && !errors.As(err, &ce) {
						t.Fatalf("%s bit %d: untyped error %v", r.name, bit, err)
					}
					if !bytes.Equal(mem.get(path), img) {
						t.Fatalf("%s bit %d: a failed repair changed the file: %v", r.name, bit, err)
					}
					if r.name != "superblock" {
						t.Fatalf("%s bit %d: repair failed: %v", r.name, bit, err)
					}
					continue
				}
				tab, err := Open(path, Options{FS: mem, Repair: NoRepair})
				if err != nil {
					t.Fatalf("%s bit %d: repaired file does not open: %v (%+v)", r.name, bit, err, st)
				}
				checkModelQuiet(t, tab, r.want(bit), keys, r.name, bit)
				must(t, tab.Close())
			}
			if names := mem.names(); len(names) != 1 {
				t.Fatalf("%s bit %d: files left: %v", r.name, bit, names)
			}
		}
	}
}

// survivingPrefixes reads the log of the killed writer's image (40
// single-record groups) and returns, for each k, how many records a
// replay that must stop before record k keeps: the longest prefix j <= k
// in which every slot's last PUT names a cell that no later record of the
// log reused (§7.3: the epoch reuses a cell it wrote once a record
// supersedes its bucket, so the older bucket is gone from the file).
func survivingPrefixes(t *testing.T, path string, img []byte, nat *nativeState) []int {
	t.Helper()
	lg := imageLog(t, path, img, nat)
	if len(lg.recs) != 40 {
		t.Fatalf("log of %d records, want 40", len(lg.recs))
	}
	prefix := make([]int, len(lg.recs)+1)
	shorter := 0
	for k := range prefix {
		j := k
		for ; j > 0; j-- {
			last := map[uint64]int{}
			for i, r := range lg.recs[:j] {
				last[r.slot] = i
			}
			whole := true
			for _, i := range last {
				whole = whole && (lg.recs[i].typ != recPut || !reusedLater(lg.recs, i))
			}
			if whole {
				break
			}
		}
		prefix[k] = j
		if j < k {
			shorter++
		}
	}
	t.Logf("log damage at %d of 41 record positions replays a shorter prefix: a cell of the one before was reused", shorter)
	return prefix
}

// checkModelQuiet is checkModel with the damaged region in the message.
func checkModelQuiet(t *testing.T, tab *Table, m *mdl.Model, keys int64, name string, bit int) {
	t.Helper()
	for key := range keys {
		got, err := tab.Lookup(etf.Int(key))
		if err != nil {
			t.Fatalf("%s bit %d: Lookup(%d): %v", name, bit, key, err)
		}
		want := m.Lookup(etf.Int(key))
		if len(got) != len(want) || (len(got) == 1 && etf.CompareExact(got[0], want[0]) != 0) {
			t.Fatalf("%s bit %d: Lookup(%d) = %v, want %v", name, bit, key, got, want)
		}
	}
}
