package dets

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

// TestNativeRawScanBucketInsideStale: a stale bucket header that survives
// in free space with a newer bucket written inside its range (a header in
// a cell's unwritten tail from an earlier life of the run, whose size
// reaches into the next cell) neither hides the newer bucket from the raw
// scan nor counts the newer bucket's records as drops. The header goes
// into the 48 free bytes before a live cell bucket N, sized to cover N,
// with the start of a record after it; the stale bucket is an older copy
// of another live bucket's slot, or of a slot no bucket speaks for (one
// a delete emptied). Then a segment over N's slot is damaged, or both
// metas are lost, and the repair must keep every object, none dropped.
func TestNativeRawScanBucketInsideStale(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	// One object a slot makes a bucket of 520 bytes in a cell of 576 (a
	// tail of 56 bytes); 400 keys in 512 slots (no growth), each written
	// once, so the record of a key alone in its slot occurs once.
	const keys = 400
	path := tmpFile(t, "inside.dets")
	tab := openT(t, path, Options{Kind: Set, Format: Native})
	for i := range int64(keys) {
		must(t, tab.Insert(etf.Tuple{etf.Int(1000 + i), etf.Binary(randBytes(rng, 465))}))
	}
	must(t, tab.Close())
	img := readFileT(t, path)
	recs := nativeRecords(t, img)
	s, err := decodeNativeSuper("", img, int64(len(img)))
	must(t, err)
	m := readNativeMetaT(t, path)

	type bucket struct {
		off uint64
		h   nativeBucketHead
	}
	var live []bucket
	for _, r := range recs {
		if len(live) == 0 || live[len(live)-1].off != r.bucket {
			h, err := decodeNativeBucketHeader("", img[r.bucket:], int64(r.bucket), uint64(len(img))-r.bucket)
			must(t, err)
			live = append(live, bucket{r.bucket, h})
		}
	}
	// Every header the raw scan's probe can find, live or stale.
	var headers []bucket
	for at := s.base; at+nativeBucketHeader <= uint64(len(img)); at += nativeCellAlign {
		if h, err := decodeNativeBucketHeader("", img[at:], int64(at), uint64(len(img))-at); err == nil {
			headers = append(headers, bucket{at, h})
		}
	}
	// N: a live cell bucket, not its run's first cell, with 48 bytes
	// before it that no header's range covers (free space), and an object
	// found nowhere else in the file.
	const gap = 48
	ni := slices.IndexFunc(live, func(b bucket) bool {
		if b.h.size > nativeMaxCell || (b.off-s.base)%nativeRunSize < gap {
			return false
		}
		if slices.ContainsFunc(headers, func(o bucket) bool { return o.off < b.off-gap && o.off+o.h.size > b.off-gap }) {
			return false
		}
		return slices.ContainsFunc(recs, func(r nativeRecord) bool {
			return r.bucket == b.off && bytes.Count(img, img[r.off:r.end]) == 1
		})
	})
	if ni < 0 {
		t.Fatalf("no live cell bucket with %d free bytes before it and an object of its own", gap)
	}
	n := live[ni]
	related := func(a nativeBucketHead, level uint8, slot uint32) bool {
		lo := min(a.level, level)
		return uint64(a.slot)&(1<<lo-1) == uint64(slot)&(1<<lo-1)
	}
	// L: a live bucket of other keys than N's.
	l := live[slices.IndexFunc(live, func(b bucket) bool { return !related(b.h, n.h.level, n.h.slot) })]
	// A slot no bucket in the file speaks for.
	empty := uint32(0)
	for slices.ContainsFunc(headers, func(o bucket) bool { return related(o.h, n.h.level, empty) }) {
		empty++
	}

	for _, of := range []string{"older copy", "empty slot"} {
		for _, what := range []string{"segment", "metas"} {
			t.Run(of+"/"+what, func(t *testing.T) {
				data := bytes.Clone(img)
				sh := nativeBucketHead{seq: 1, slot: l.h.slot, level: l.h.level, size: gap + n.h.size}
				if of == "empty slot" {
					sh.slot, sh.level = empty, n.h.level
				}
				stale := make([]byte, gap)
				sh.encode(stale)
				copy(stale[nativeBucketHeader:], img[l.off+nativeBucketHeader:]) // the start of L's first record
				copy(data[n.off-gap:], stale)
				switch what {
				case "segment":
					seg := uint64(n.h.slot) / nativeSlotsPerSeg
					part := le.Uint64(data[m.rootOff+16*(seg/nativeSegsPerPart):])
					segOff := le.Uint64(data[part+16*(seg%nativeSegsPerPart):])
					data[segOff+uint64(rng.Intn(16))] ^= 0x10
				case "metas":
					clear(data[nativeMetaAOff : nativeMetaAOff+2*nativePageSize])
				}
				p := filepath.Join(t.TempDir(), "f.dets")
				must(t, os.WriteFile(p, data, 0o644))
				st, err := Repair(p, Options{}, nil)
				must(t, err)
				if st.ObjectsFound != int64(len(recs)) || st.ObjectsDropped != 0 {
					t.Fatalf("N at %d (slot %d, %d bytes), stale header at %d (slot %d): stats %+v, want all %d objects, none dropped",
						n.off, n.h.slot, n.h.size, n.off-gap, sh.slot, st, len(recs))
				}
				checkRepaired(t, p, recordsModel(recs, nil), 1000+keys, 0)
			})
		}
	}
}
