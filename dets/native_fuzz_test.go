package dets

import (
	"bytes"
	"cmp"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/godets/godets/etf"
)

// FuzzNativeFreeRecord: arbitrary bytes as a free record (with a matching
// checksum, so that the parser itself is what the fuzzer reaches) over a
// buddy area of endPages pages. The parser must not panic; a record it
// accepts must name only disjoint extents inside the area, encode back to
// the same bytes, and give an allocator that works.
func FuzzNativeFreeRecord(f *testing.F) {
	f.Add(hx(f, goldenFree), uint16(64))
	f.Add(hx(f, "z8 474e4631 00000000 z24"), uint16(4))
	a := newNativeAlloc("", nativeBase)
	var es []nativeEntry
	for _, sz := range []uint64{50, 50, 300, 5000, 2048, 70000, 50} {
		e, _ := a.alloc(sz)
		es = append(es, e)
	}
	for _, e := range es[1:5] {
		a.release(e)
	}
	a.checkpoint()
	a.release(es[5])
	a.checkpoint()
	end := a.dataEnd()
	rec, _ := a.encodeFree(nil, end)
	f.Add(rec, uint16((end-nativeBase)/nativePageSize))
	f.Fuzz(func(t *testing.T, rec []byte, endPages uint16) {
		base := uint64(nativeBase)
		end := base + nativePageSize*uint64(endPages)
		a, err := decodeNativeFree("f", rec, 0x9000, xxhash.Sum64(rec), base, end)
		if err != nil {
			return
		}
		var ext []nativeBlock // runs as 2^16 blocks
		for k, l := range a.free {
			for _, off := range l {
				if off < end {
					ext = append(ext, nativeBlock{off, uint8(k)})
				}
			}
		}
		ext = append(ext, a.quar...)
		for off := range a.runs {
			ext = append(ext, nativeBlock{off, nativeRunClass})
		}
		slices.SortFunc(ext, func(x, y nativeBlock) int { return cmp.Compare(x.off, y.off) })
		for i, x := range ext {
			if x.off < base || x.end() > end || (i > 0 && x.off < ext[i-1].end()) {
				t.Fatalf("accepted a record with extent %#x+2^%d (base %#x, end %#x)", x.off, x.k, base, end)
			}
		}
		again, err := a.encodeFree(nil, end)
		if err != nil || !bytes.Equal(again, rec) {
			t.Fatalf("accepted record re-encodes differently (%v)", err)
		}
		// The allocator must go on working from that state.
		var got []nativeEntry
		for _, sz := range []uint64{40, 700, 2048, 4096, 9000} {
			e, err := a.alloc(sz)
			if err != nil {
				t.Fatalf("alloc %d: %v", sz, err)
			}
			got = append(got, e)
		}
		for _, e := range got {
			if err := a.release(e); err != nil {
				t.Fatalf("release %v: %v", e, err)
			}
		}
		if err := a.checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := a.checkpoint(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzNativeObject: arbitrary bytes as an object record, and as a bucket
// in a cell or block of room bytes. Decoding must not panic; an accepted
// record must be exactly what appendNativeObject writes for its ETF.
func FuzzNativeObject(f *testing.F) {
	enc, _ := etf.Encode(etf.Tuple{etf.Atom("a"), etf.Int(1)})
	rec := appendNativeObject(nil, enc, 0)
	f.Add(rec, uint16(64), uint8(1))
	f.Add(appendNativeObject(nil, []byte{131, 97, 1}, 0), uint16(64), uint8(1))
	h := nativeBucketHead{seq: 1, slot: uint32(nativeKeyHash(keySpan(enc, 1)) & 511), level: 9, size: uint64(32 + len(rec))}
	b := make([]byte, 32)
	h.encode(b)
	f.Add(append(b, rec...), uint16(64), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, room uint16, keyPos uint8) {
		if e, n, err := decodeNativeObject("f", data, 0); err == nil {
			if n > len(data) || !bytes.Equal(appendNativeObject(nil, e, 0), data[:n]) {
				t.Fatalf("accepted record of %d bytes is not its own encoding", n)
			}
			nativeObjectKey(e, int(keyPos))
		}
		hd, err := walkNativeBucket("f", data, 0, uint64(room), int(keyPos), func(_ int64, e, k []byte) error {
			if len(k) == 0 || len(k) > len(e) {
				t.Fatalf("key of %d bytes in an object of %d", len(k), len(e))
			}
			return nil
		})
		if err == nil && (hd.size > uint64(len(data)) || hd.size > uint64(room)) {
			t.Fatalf("accepted a bucket of %d bytes in %d read, room %d", hd.size, len(data), room)
		}
	})
}

// FuzzNativeLog: arbitrary bytes as the head page and one block of an
// epoch's log (§15.6). Reading must not panic, and what it returns must be
// a log: consecutive seqs from the meta's, the epoch's records only, no
// LINK, and a last record that ends its group.
func FuzzNativeLog(f *testing.F) {
	l := newTestLog(3, 10, 1)
	for i := range 70 {
		l.put(putRec(uint64(i), i%3 == 2))
	}
	head := l.img[nativeLogHead(3) : nativeLogHead(3)+nativePageSize]
	blk := l.img[l.writtenBlock[0] : l.writtenBlock[0]+512]
	f.Add(bytes.Clone(head), bytes.Clone(blk))
	f.Add(make([]byte, 64), []byte{})
	f.Fuzz(func(t *testing.T, head, blk []byte) {
		const gen, metaSeq = 3, 10
		lb := &testLog{img: make([]byte, testLogBase+2*nativeLogBlockSize), fileID: 77, gen: gen}
		copy(lb.img[nativeLogHead(gen):nativeLogHead(gen)+nativePageSize], head)
		copy(lb.img[testLogBase+nativeLogBlockSize:], blk)
		lg, err := readNativeLog("f", lb.read, nativeRevision, lb.fileID, gen, metaSeq, testLogBase, uint64(len(lb.img)))
		if err != nil {
			t.Fatal(err)
		}
		prev := uint64(metaSeq)
		for i, r := range lg.recs {
			if r.epoch != gen || r.seq <= prev || r.typ == recLink {
				t.Fatalf("record %d: %+v after seq %d", i, r, prev)
			}
			prev = r.seq
		}
		if n := len(lg.recs); n > 0 && !lg.recs[n-1].endsGroup() {
			t.Fatal("the log ends inside a group")
		}
		for _, b := range lg.blocks {
			if b < testLogBase || (b-testLogBase)%nativeLogBlockSize != 0 || b+nativeLogBlockSize > uint64(len(lb.img)) {
				t.Fatalf("block %#x outside the file", b)
			}
		}
	})
}
