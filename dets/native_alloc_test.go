package dets

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// allocModel is the reference the allocator is checked against: which
// allocations are live, pending or quarantined, and a bitmap of the
// 16-byte granules they cover.
type allocModel struct {
	base       uint64
	live       []nativeEntry
	pend, quar []nativeEntry
	used       []uint64 // bit g: granule base+16g is in an allocation not yet free
}

func (m *allocModel) mark(e nativeEntry, on bool) (overlap bool) {
	first := (e.off() - m.base) / 16
	for g := first; g < first+e.room()/16; g++ {
		w, bit := g/64, uint64(1)<<(g%64)
		for w >= uint64(len(m.used)) {
			m.used = append(m.used, 0)
		}
		if on {
			overlap = overlap || m.used[w]&bit != 0
			m.used[w] |= bit
		} else {
			m.used[w] &^= bit
		}
	}
	return overlap
}

// allocDump is the allocator's whole state in a canonical text form.
func allocDump(a *nativeAlloc) string {
	var sb strings.Builder
	for k, l := range a.free {
		if len(l) > 0 {
			fmt.Fprintf(&sb, "free %d: %x\n", k, l)
		}
	}
	for _, s := range []struct {
		name string
		l    []nativeBlock
	}{{"pend", a.pend}, {"quar", a.quar}} {
		l := slices.SortedFunc(slices.Values(s.l), func(x, y nativeBlock) int { return cmp.Compare(x.off, y.off) })
		fmt.Fprintf(&sb, "%s %v\n", s.name, l)
	}
	for _, off := range slices.Sorted(func(yield func(uint64) bool) {
		for off := range a.runs {
			if !yield(off) {
				return
			}
		}
	}) {
		r := a.runs[off]
		fmt.Fprintf(&sb, "run %x c%d f%x p%x q%x\n", off, r.class, r.free[:r.words()], r.pend[:r.words()], r.quar[:r.words()])
	}
	for c, l := range a.open {
		if len(l) > 0 {
			fmt.Fprintf(&sb, "open %d: %x\n", c, l)
		}
	}
	return sb.String()
}

// TestNativeAllocModel runs seeded random alloc, release, checkpoint and
// Sync sequences against allocModel: no allocation overlaps a live,
// pending or quarantined one; every entry is valid where the allocator
// says the data ends; a release of space that is not live is refused and
// changes nothing; the free record of every checkpoint decodes to the
// same state and encodes to the same bytes, and the decoded allocator
// carries on; and freeing everything returns the allocator to its empty
// state (no leak, every freed byte reusable, all merged). Seeded: -seed.
func TestNativeAllocModel(t *testing.T) {
	seed := uint64(testSeed(t))
	rounds, steps := 8, 2500
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		base := uint64(nativeBase)
		if round%3 == 2 {
			base = 5 << 30 // a base above 4 GiB, as §15.4's test uses
		}
		what := func(step int) string { return fmt.Sprintf("seed %d round %d step %d", seed, round, step) }
		a := newNativeAlloc("f", base)
		empty := allocDump(a)
		m := &allocModel{base: base}
		size := func() uint64 {
			switch x := r.IntN(100); {
			case x < 80:
				return 42 + r.Uint64N(2048-42+1)
			case x < 97:
				return 2049 + r.Uint64N(30000)
			default:
				return 1 + r.Uint64N(600000)
			}
		}
		for step := range steps {
			switch x := r.IntN(100); {
			case x < 50 || len(m.live) == 0:
				sz := size()
				e, err := a.alloc(sz)
				if err != nil {
					t.Fatalf("%s: alloc %d: %v", what(step), sz, err)
				}
				if e.room() < sz || !e.validIn(base, a.dataEnd()) {
					t.Fatalf("%s: alloc %d gave %v (data end %#x)", what(step), sz, e, a.dataEnd())
				}
				if m.mark(e, true) {
					t.Fatalf("%s: alloc %d gave %v, which overlaps space not yet free", what(step), sz, e)
				}
				m.live = append(m.live, e)
			case x < 85:
				i := r.IntN(len(m.live))
				e := m.live[i]
				if err := a.release(e); err != nil {
					t.Fatalf("%s: release %v: %v", what(step), e, err)
				}
				m.live[i] = m.live[len(m.live)-1]
				m.live = m.live[:len(m.live)-1]
				m.pend = append(m.pend, e)
			case x < 87:
				// A second release of pending or quarantined space.
				l := append(slices.Clone(m.pend), m.quar...)
				if len(l) == 0 {
					continue
				}
				e := l[r.IntN(len(l))]
				before := allocDump(a)
				if err := a.release(e); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: double release of %v: %v", what(step), e, err)
				}
				if allocDump(a) != before {
					t.Fatalf("%s: a refused release changed the allocator", what(step))
				}
			case x < 96:
				// The checkpoint allocates its free record's block from
				// the bound first, as the engine will (§10.3 step 2).
				bound := a.freeRecordBound()
				k := blockClassFor(bound)
				off, err := a.allocBlock(k)
				must(t, err)
				rb := nativeBlockEntry(off, k)
				if m.mark(rb, true) {
					t.Fatalf("%s: the free record's block %v overlaps space not yet free", what(step), rb)
				}
				m.live = append(m.live, rb)
				must(t, a.checkpoint())
				if sz := a.freeRecordSize(a.dataEnd()); sz > bound {
					t.Fatalf("%s: free record of %d bytes, bound %d", what(step), sz, bound)
				}
				for _, e := range m.quar {
					m.mark(e, false)
				}
				m.quar, m.pend = m.pend, nil
				a = freeRoundTrip(t, what(step), a)
			default: // Sync: the second fsync releases the quarantine
				must(t, a.releaseQuarantine())
				for _, e := range m.quar {
					m.mark(e, false)
				}
				m.quar = nil
			}
		}
		for _, e := range m.live {
			must(t, a.release(e))
		}
		must(t, a.checkpoint())
		must(t, a.checkpoint())
		if got := allocDump(a); got != empty || a.dataEnd() != base {
			t.Fatalf("seed %d round %d: after freeing everything the allocator is not empty:\n%s", seed, round, got)
		}
	}
}

// freeRoundTrip encodes a's free record, decodes it, and checks that the
// decoded allocator has a's state and encodes to the same bytes; it returns
// the decoded one, so that the run goes on with it.
func freeRoundTrip(t *testing.T, what string, a *nativeAlloc) *nativeAlloc {
	t.Helper()
	end := a.dataEnd()
	rec, err := a.encodeFree(nil, end)
	must(t, err)
	if n := a.freeRecordSize(end); n != uint64(len(rec)) {
		t.Fatalf("%s: freeRecordSize %d, record %d bytes", what, n, len(rec))
	}
	b, err := decodeNativeFree("f", rec, 0, xxhash.Sum64(rec), a.base, end)
	if err != nil {
		t.Fatalf("%s: the free record does not decode: %v", what, err)
	}
	if da, db := allocDump(a), allocDump(b); da != db {
		t.Fatalf("%s: decoded state differs\nencoded:\n%s\ndecoded:\n%s", what, da, db)
	}
	again, err := b.encodeFree(nil, end)
	must(t, err)
	if !bytes.Equal(again, rec) {
		t.Fatalf("%s: the decoded state encodes to other bytes", what)
	}
	return b
}

func TestNativeAllocRules(t *testing.T) {
	a := newNativeAlloc("f", nativeBase)
	e1, err := a.alloc(100)
	must(t, err)
	if e1.cellClass() != cellClassFor(100) || e1.off() != nativeBase {
		t.Fatalf("first cell %v", e1)
	}
	e2, _ := a.alloc(100)
	if e2.off() != nativeBase+112 {
		t.Fatalf("second cell %v: not the next cell of the run", e2)
	}
	must(t, a.release(e1))
	if e3, _ := a.alloc(100); e3 == e1 {
		t.Fatal("a pending cell was reused in its epoch")
	}
	must(t, a.checkpoint())
	if e4, _ := a.alloc(100); e4 == e1 {
		t.Fatal("a quarantined cell was reused before the quarantine was released")
	}
	must(t, a.releaseQuarantine())
	if e5, _ := a.alloc(100); e5 != e1 {
		t.Fatalf("the lowest free cell %v was not reused: got %v", e1, e5)
	}
	b, _ := a.alloc(5000)
	if b.blockClass() != 13 || (b.off()-nativeBase)%8192 != 0 {
		t.Fatalf("5000 bytes: %v", b)
	}
	for _, bad := range []nativeEntry{
		nativeBlockEntry(nativeBase+1<<20, 12),               // free space
		nativeBlockEntry(nativeBase+4096, 12),                // inside a run
		nativeBlockEntry(nativeBase+8192+16, 13),             // misaligned
		nativeCellEntry(nativeBase+16, cellClassFor(100)),    // off the cell grid
		nativeCellEntry(nativeBase+1<<20, cellClassFor(100)), // a cell in free space
		nativeCellEntry(nativeBase, cellClassFor(200)),       // a cell of another class
		0,
	} {
		before := allocDump(a)
		if err := a.release(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("release %v: %v", bad, err)
		}
		if allocDump(a) != before {
			t.Errorf("release %v changed the allocator", bad)
		}
	}
	if _, err := a.alloc(1<<59 + 1); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("alloc past 2^59: %v", err)
	}
}

// TestNativeFreeRefusals: each malformed free record, with its checksum
// right, is refused.
func TestNativeFreeRefusals(t *testing.T) {
	const base, end = nativeBase, nativeBase + 4*nativeRunSize
	good := hx(t, goldenFree)
	words := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint64(b, v)
		}
		return b
	}
	rec := func(nb, nq, nr uint64, body ...uint64) []byte {
		return append(hx(t, "z8 474e4631 00000000"), words(append([]uint64{nb, nq, nr}, body...)...)...)
	}
	run := uint64(1<<8 | 55)
	cases := map[string][]byte{
		"short":                   good[:32],
		"odd length":              append(bytes.Clone(good), 0),
		"magic":                   func() []byte { b := bytes.Clone(good); b[9] = 'X'; return b }(),
		"reserved":                func() []byte { b := bytes.Clone(good); b[3] = 1; return b }(),
		"count past the record":   rec(3, 0, 0, 0x10c, 0x20c),
		"huge count":              rec(1<<62, 0, 0, 0x10c),
		"class 11":                rec(1, 0, 0, 0x10b),
		"class 60":                rec(1, 0, 0, 0x13c),
		"misaligned block":        rec(1, 0, 0, 0x10d),
		"block past data end":     rec(1, 0, 0, 0x40<<8|12),
		"big block past data end": rec(1, 0, 0, 19),
		"blocks not ascending":    rec(2, 0, 0, 0x20c, 0x10c),
		"blocks overlap":          rec(2, 0, 0, 0x00d, 0x10c),
		"free overlaps quar":      rec(1, 1, 0, 0x00d, 0x10c),
		"free overlaps run":       rec(1, 0, 1, 0x10<<8|12, run, 1, 6, 8),
		"run class 0":             rec(0, 0, 1, 1<<8, 1, 6, 8),
		"run class 56":            rec(0, 0, 1, 1<<8|56, 1, 6, 8),
		"run past data end":       rec(0, 0, 1, 4<<8|55, 1, 6, 8),
		"runs not ascending":      rec(0, 0, 2, 2<<8|55, 1, 6, 8, run, 1, 6, 8),
		"same run twice":          rec(0, 0, 2, run, 1, 6, 8, run, 1, 6, 8),
		"bitmap words":            rec(0, 0, 1, run, 2, 6, 0, 8, 0),
		"bits past the cells":     rec(0, 0, 1, run, 1, 1<<32, 0),
		"free and quarantined":    rec(0, 0, 1, run, 1, 6, 4),
		"run with no cell free":   rec(0, 0, 1, run, 1, 0, 0),
		"run entirely free":       rec(0, 0, 1, run, 1, 1<<32-1, 0),
		"bytes after the runs":    append(bytes.Clone(good), make([]byte, 8)...),
		"block word past 2^60":    rec(1, 0, 0, 3<<60|0x10<<8|16),
		"run word past 2^56":      rec(0, 0, 1, 1<<56|run, 1, 6, 8),
		"run entry cut":           rec(0, 0, 1, run),
	}
	for name, b := range cases {
		if _, err := decodeNativeFree("f", b, 0x9000, xxhash.Sum64(b), base, end); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if _, err := decodeNativeFree("f", good, 0x9000, xxhash.Sum64(good), base, end); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeNativeFree("f", good, 0x9000, xxhash.Sum64(good)^1, base, end); !errors.Is(err, ErrCorrupt) {
		t.Fatal("a wrong freeSum is accepted")
	}
}

// TestNativeAllocReusesRunRecords: filling one run after another, as a
// repair's build or a long write session does, reuses the record of the
// run that just filled up for the next one instead of allocating one
// (800 bytes) a run, which was the repair's main garbage.
func TestNativeAllocReusesRunRecords(t *testing.T) {
	a := newNativeAlloc("t", nativeBase)
	c := cellClassFor(160)
	per := cellsInRun(c)
	fill := func(runs int) {
		for range runs * per {
			if _, err := a.allocCell(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(4) // the map and the lists reach their sizes
	const runs = 64
	allocs := testing.AllocsPerRun(1, func() { fill(runs) })
	if allocs >= runs/2 {
		t.Fatalf("%d runs filled with %.0f allocations: a run record each", runs, allocs)
	}
	t.Logf("%d runs filled with %.0f allocations", runs, allocs)
}
