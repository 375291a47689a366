package dets

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// nativeInspectImages builds a native set table of n objects (with a
// growth past 512 slots when n is large enough) and returns its file as a
// killed writer leaves it (synced at half, then more inserts) and as Close
// leaves it.
func nativeInspectImages(t *testing.T, n int) (dirty, closed []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.dets")
	tab, err := Open(path, Options{Format: Native})
	must(t, err)
	for i := range n {
		must(t, tab.Insert(etf.Tuple{etf.Int(i), etf.Binary(bytes.Repeat([]byte{'v'}, i%40))}))
		if i == n/2 {
			must(t, tab.Sync())
		}
	}
	dirty, err = os.ReadFile(path)
	must(t, err)
	must(t, tab.Close())
	closed, err = os.ReadFile(path)
	must(t, err)
	return dirty, closed
}

// failedRow reports whether an AnnotateBucket label says the bytes stop
// making sense there. Content labels quote the (redacted) data, which may
// spell any word, so only the prefixes are matched.
func failedRow(label string) bool {
	return strings.HasPrefix(label, "rest of the bucket") || strings.HasPrefix(label, "not a term") ||
		strings.HasPrefix(label, "hxh: ") && label != "hxh: checksum ok"
}

// TestNativeImage: the inspection of a closed and of a killed writer's
// native file finds every object of the tree through Slot and
// AnnotateBucket, names the structures RegionOf is asked about, and
// reports the log.
func TestNativeImage(t *testing.T) {
	const n = 1500
	dirty, closed := nativeInspectImages(t, n)
	if !IsNativeHeader(closed) || IsNativeHeader(closed[:19]) || IsNativeHeader(make([]byte, 64)) {
		t.Fatal("IsNativeHeader")
	}
	im, err := NewNativeImage("t.dets", bytes.NewReader(closed), int64(len(closed)))
	must(t, err)
	m := nativeCurrentMeta(t, closed)
	var current, objects bool
	for _, f := range im.Fields() {
		switch {
		case strings.HasPrefix(f.Name, "meta ") && f.Note == "valid, current":
			current = f.Offset == nativeMetaAOff && m.gen%2 == 1 || f.Offset == nativeMetaBOff && m.gen%2 == 0
		case f.Name == "  objects" && f.Value == n:
			objects = true
		}
	}
	if !current || !objects {
		t.Fatalf("fields: current meta named %v, objects %v:\n%+v", current, objects, im.Fields())
	}
	parts, segs, err := im.Tree()
	must(t, err)
	if len(parts) != 1 || len(segs) != int(m.next/nativeSlotsPerSeg) || len(segs) < 2 {
		t.Fatalf("tree: %d parts, %d segments for next %d", len(parts), len(segs), m.next)
	}
	seen := 0
	for slot := range int64(m.next) {
		e, err := im.Slot(slot)
		must(t, err)
		if e.Size == 0 {
			continue
		}
		rows := im.AnnotateBucket(e.Ptr, e.Size)
		if len(rows) == 0 || rows[0].Label != "hxh: checksum ok" {
			t.Fatalf("slot %d: %v", slot, rows)
		}
		for _, r := range rows {
			if r.Label == "oxh: checksum ok" {
				seen++
			}
			if failedRow(r.Label) {
				t.Fatalf("slot %d: %s", slot, r.Label)
			}
		}
		if r := im.RegionOf(e.Ptr + 40); r.Name != "bucket" || r.Index != slot {
			t.Fatalf("slot %d's bucket at %d: region %v", slot, e.Ptr, r)
		}
	}
	if seen != n {
		t.Fatalf("the buckets hold %d object records, want %d", seen, n)
	}
	if _, err := im.Slot(int64(m.next)); !errors.Is(err, ErrNoSuchSlot) {
		t.Fatalf("slot past next: %v", err)
	}
	for _, c := range []struct {
		off  int64
		name string
	}{{0, "superblock"}, {nativeMetaBOff + 7, "meta B"}, {segs[1].Addr + 9, "segment"}, {parts[0].Addr, "part"},
		{int64(m.rootOff), "root"}, {int64(m.freeOff) + 1, "free record"}} {
		if r := im.RegionOf(c.off); r.Name != c.name {
			t.Errorf("offset %d: %v, want %s", c.off, r, c.name)
		}
	}
	fr, err := im.Free()
	must(t, err)
	if fr.At != int64(m.freeOff) || fr.Len != int64(m.freeLen) {
		t.Errorf("free record %+v", fr)
	}
	ls, err := im.Log()
	must(t, err)
	if !ls.Closed || ls.Records != 0 {
		t.Errorf("closed file's log: %+v", ls)
	}
	if rows := im.HexRows(segs[0].Addr, 16); len(rows) != 2 || !strings.HasPrefix(rows[0].Label, "slot 0:") {
		t.Errorf("segment rows %+v", rows)
	}

	// The killed writer's file: its log holds the inserts after the Sync,
	// and the buckets they wrote are found through it.
	im, err = NewNativeImage("t.dets", bytes.NewReader(dirty), int64(len(dirty)))
	must(t, err)
	ls, err = im.Log()
	must(t, err)
	if ls.Closed || ls.Puts < n/2-1 || ls.Records < ls.Puts || ls.LastSeq-ls.FirstSeq+1 < uint64(ls.Records) {
		t.Fatalf("killed writer's log: %+v", ls)
	}
	lg, err := im.log(&im.metas[im.cur])
	must(t, err)
	last := lg.recs[len(lg.recs)-1]
	for i := len(lg.recs) - 1; last.typ != recPut; i-- {
		last = lg.recs[i]
	}
	if r := im.RegionOf(int64(nativeEntry(last.entry).off())); r.Name != "bucket" || r.Index != int64(last.slot) {
		t.Errorf("the last PUT's bucket: %v, want slot %d", r, last.slot)
	}
}

// TestNativeImageDamage: the inspection of a damaged native file says
// what fails and never panics: a short file is ErrImageTooShort, a
// damaged superblock stops at the fields, a damaged object is named in
// its bucket's rows, and seeded random damage anywhere gets answers.
// Seeded: -seed or GODETS_SEED.
func TestNativeImageDamage(t *testing.T) {
	_, closed := nativeInspectImages(t, 700)
	if _, err := NewNativeImage("t.dets", bytes.NewReader(closed[:nativeBase-1]), nativeBase-1); !errors.Is(err, ErrImageTooShort) {
		t.Fatalf("short: %v", err)
	}
	bad := bytes.Clone(closed)
	bad[nsOffMinSlots] ^= 1
	im, err := NewNativeImage("t.dets", bytes.NewReader(bad), int64(len(bad)))
	must(t, err)
	if fs := im.Fields(); !strings.Contains(fs[len(fs)-1].Note, "superblock") || !strings.Contains(fs[len(fs)-1].Note, "checksum mismatch") {
		t.Errorf("damaged superblock: %+v", fs[len(fs)-1])
	}
	if _, _, err := im.Tree(); err == nil {
		t.Error("Tree of a file without a superblock")
	}

	im, err = NewNativeImage("t.dets", bytes.NewReader(closed), int64(len(closed)))
	must(t, err)
	var e SlotEntry
	for slot := int64(0); e.Size == 0; slot++ {
		e, err = im.Slot(slot)
		must(t, err)
	}
	bad = bytes.Clone(closed)
	bad[e.Ptr+nativeBucketHeader+12] ^= 0x10 // inside the first object's ETF
	im, err = NewNativeImage("t.dets", bytes.NewReader(bad), int64(len(bad)))
	must(t, err)
	rows := im.AnnotateBucket(e.Ptr, e.Size)
	if len(rows) < 8 || !strings.Contains(rows[7].Label, "checksum mismatch") {
		t.Fatalf("damaged object: %+v", rows)
	}

	seed := testutil.Seed(t)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	for range 200 {
		img := bytes.Clone(closed)
		for range 1 + r.IntN(8) {
			img[r.IntN(len(img))] ^= byte(1 + r.IntN(255))
		}
		if r.IntN(4) == 0 {
			img = img[:nativeBase+r.IntN(len(img)-nativeBase)]
		}
		im, err := NewNativeImage("t.dets", bytes.NewReader(img), int64(len(img)))
		must(t, err)
		im.Fields()
		im.Tree()
		im.Free()
		im.Log()
		for range 4 {
			off := r.Int64N(int64(len(img)))
			if reg := im.RegionOf(off); off < reg.Start || off >= reg.End {
				t.Fatalf("offset %d: region %v", off, reg)
			}
			at := off // the rows cover the bytes asked for, in order
			for _, row := range im.HexRows(off, 64) {
				if row.Offset != at || len(row.Bytes) == 0 {
					t.Fatalf("HexRows(%d): row at %d, want %d", off, row.Offset, at)
				}
				at += int64(len(row.Bytes))
			}
			if want := min(off+64, int64(len(img))); at != want {
				t.Fatalf("HexRows(%d) ends at %d, want %d", off, at, want)
			}
			if e, err := im.Slot(r.Int64N(1024)); err == nil && e.Size > 0 {
				for _, row := range im.AnnotateBucket(e.Ptr, e.Size) {
					if row.Offset < e.Ptr || row.Offset+int64(len(row.Bytes)) > e.Ptr+e.Size {
						t.Fatalf("bucket [%d, +%d): row at %d, %d bytes", e.Ptr, e.Size, row.Offset, len(row.Bytes))
					}
				}
			}
		}
	}
}

// TestNativeRedact: the redacted copy of a killed writer's native file
// keeps the superblock, metas, tree and free record byte for byte and the
// log record for record, redacts the buckets the log names as well as the
// tree's, gives every object record a checksum that holds over its new
// bytes, and each log PUT a bsum that holds over its redacted bucket (the
// only log bytes that change), so the copy's log binds its buckets as the
// original's does.
func TestNativeRedact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	tab, err := Open(path, Options{Format: Native, Kind: Bag})
	must(t, err)
	for i := range 900 {
		must(t, tab.Insert(etf.Tuple{etf.Int(i % 300), etf.Binary("hush-" + strings.Repeat("x", i%30))}))
		if i == 500 {
			must(t, tab.Sync())
		}
	}
	dirty, err := os.ReadFile(path)
	must(t, err)
	must(t, tab.Close())
	im, err := NewNativeImage("t.dets", bytes.NewReader(dirty), int64(len(dirty)))
	must(t, err)
	red, st, err := im.Redact()
	must(t, err)
	if bytes.Contains(red, []byte("hush-")) || !bytes.Contains(dirty, []byte("hush-")) {
		t.Fatal("the copy holds a value text (or the original none)")
	}
	if st.Objects == 0 || st.ZeroedBytes == 0 {
		t.Errorf("stats %+v", st)
	}
	same := func(what string, off, n int64) {
		t.Helper()
		if !bytes.Equal(red[off:off+n], dirty[off:off+n]) {
			t.Errorf("%s [%d, +%d) changed", what, off, n)
		}
	}
	same("superblock and metas", 0, nativeLogHeadOff)
	m := &im.metas[im.cur]
	same("root", int64(m.rootOff), int64(m.rootLen))
	same("free record", int64(m.freeOff), int64(m.freeLen))
	parts, segs, err := im.Tree()
	must(t, err)
	for _, p := range parts {
		same("part", p.Addr, nativePageSize)
	}
	for _, s := range segs {
		same("segment", s.Addr, nativePageSize)
	}
	lg, err := im.log(m)
	must(t, err)
	if len(lg.blocks) == 0 {
		t.Fatal("the log has no block past its head: the test proves less")
	}
	cim, err := NewNativeImage("copy", bytes.NewReader(red), int64(len(red)))
	must(t, err)
	clg, err := cim.log(&cim.metas[cim.cur])
	must(t, err)
	rebound := 0
	if !slices.Equal(clg.blocks, lg.blocks) || len(clg.recs) != len(lg.recs) {
		t.Fatalf("the copy's log: %d records in blocks %v; the original's %d in %v", len(clg.recs), clg.blocks, len(lg.recs), lg.blocks)
	}
	for i, r := range clg.recs {
		want := lg.recs[i]
		want.bsum = r.bsum
		if r != want {
			t.Fatalf("log record %d: %+v, was %+v", i, r, lg.recs[i])
		}
		// A PUT whose cell a later write of the epoch reused holds over
		// neither bucket; every other one over both.
		holds := func(img []byte, r nativeLogRec) bool {
			b := img[nativeEntry(r.entry).off():]
			h, err := decodeNativeBucketHeader("", b, 0, nativeEntry(r.entry).room())
			return err == nil && nativeBucketSum(nativeRevision, b[:h.size]) == r.bsum
		}
		if r.typ == recPut && holds(dirty, lg.recs[i]) {
			rebound++
			if !holds(red, r) {
				t.Fatalf("log record %d's bsum does not hold over its redacted bucket", i)
			}
		}
	}
	if rebound == 0 {
		t.Fatal("no log PUT's bucket held: the test proves less")
	}
	records := 0
	for _, r := range lg.recs {
		if r.typ != recPut {
			continue
		}
		e := nativeEntry(r.entry)
		for _, row := range cim.AnnotateBucket(int64(e.off()), int64(e.room())) {
			if strings.HasPrefix(row.Label, "oxh") {
				records++
				if row.Label != "oxh: checksum ok" {
					t.Fatalf("the log's bucket at %d: %s", e.off(), row.Label)
				}
			}
			if failedRow(row.Label) {
				t.Fatalf("the log's bucket at %d: %s", e.off(), row.Label)
			}
		}
	}
	if records == 0 {
		t.Fatal("no object record in the buckets the log names")
	}
}
