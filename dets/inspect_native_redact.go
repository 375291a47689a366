package dets

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
)

// Redaction of a native file: the rules of Image.Redact (inspect_redact.go)
// on native's layout (docs/format-native.md §3, §13.4).
//
// Kept byte for byte: the header pages (superblock, metas, log heads), the
// current tree (root, parts, segments), the free record and the log blocks
// of the current epoch, and in every bucket that the tree or a log PUT
// names the bucket header and each object record's length. Replaced: the
// content bytes of every object, as otp9's are. An object record whose
// checksum held gets the checksum of its redacted bytes, one whose
// checksum failed keeps its old one, which fails too: the copy keeps the
// damage, and `dets check --redacted` gives it the original's verdict.
// The bucket header's checksum covers the header only, so it stays valid;
// a log PUT of revision 2 binds its whole bucket (bsum), so each whose
// bucket held gets the sum of the redacted bucket and a new record
// checksum (revision 1 bound the header and needs neither). Zeroed:
// everything else,
// including old buckets, trees and logs that only the fallback meta or
// nothing names.

// maxNativeRedact bounds the file a redaction holds in memory (the file,
// its copy and a byte a byte of bookkeeping), as otp9's images are.
const maxNativeRedact int64 = 1<<31 - 1

// Redact returns the bytes of a redacted copy of the file (see above). The
// file is not changed. A file over 2 GiB is refused with ErrCannotRedact.
func (im *NativeImage) Redact() ([]byte, RedactStats, error) {
	if im.size > maxNativeRedact {
		return nil, RedactStats{}, fmt.Errorf("%w: %s is %d bytes; a copy is redacted in memory, up to %d", ErrCannotRedact, im.path, im.size, maxNativeRedact)
	}
	src := make([]byte, im.size)
	if _, err := im.r.ReadAt(src, 0); err != nil && err != io.EOF {
		return nil, RedactStats{}, err
	}
	keyPos := int64(1)
	if im.superErr == nil {
		keyPos = int64(im.super.keyPos)
	}
	r, err := newRedactor(src, keyPos)
	if err != nil {
		return nil, RedactStats{}, err
	}
	r.keep(0, nativeBase)
	var resum []int64  // object records whose checksum held
	var rebind []int64 // log PUTs whose bucket held (revision 2)
	if m, err := im.current(); err == nil {
		r.keep(int64(m.rootOff), int64(m.rootLen))
		r.keep(int64(m.freeOff), int64(m.freeLen))
		parts, segs, _ := im.Tree()
		for _, p := range parts {
			if p.Bad == "" {
				r.keep(p.Addr, nativePageSize)
			}
		}
		var entries []nativeEntry
		im.eachSegment(m, segs, func(s Pointer, es *[nativeSlotsPerSeg]nativeEntry, err error) bool {
			if err != nil {
				return true // its buckets are reached only through it: zeroed
			}
			r.keep(s.Addr, nativePageSize)
			for _, e := range es {
				if e != 0 {
					entries = append(entries, e)
				}
			}
			return true
		})
		lg, _ := im.log(m)
		for _, b := range lg.blocks {
			r.keep(int64(b), nativeLogBlockSize)
		}
		if im.super.revision >= nativeRevisionSessions {
			rebind = r.heldPuts(m.gen, append([]uint64{nativeLogHead(m.gen)}, lg.blocks...))
		}
		for _, rec := range lg.recs {
			if rec.typ == recPut {
				entries = append(entries, nativeEntry(rec.entry))
			}
		}
		for _, e := range entries {
			if e.off() >= uint64(im.size) || r.anyCovered(int64(e.off()), 1) {
				continue // named twice (a log PUT of a cell the tree names), or past the end
			}
			got, err := r.nativeBucket(int64(e.off()), int64(min(e.room(), uint64(im.size)-e.off())))
			if err != nil {
				return nil, RedactStats{}, err
			}
			resum = append(resum, got...)
		}
	}
	r.zeroRest()
	for _, off := range resum {
		l, v := binary.Uvarint(r.out[off+8:])
		le.PutUint64(r.out[off:], xxhash.Sum64(r.out[off+8:off+8+int64(v)+int64(l)]))
	}
	for _, off := range rebind {
		rec, _ := decodeNativeLogRec("", r.out[off:], off)
		rec.bsum = nativeBucketSum(nativeRevisionSessions, r.bucketBytes(r.out, nativeEntry(rec.entry)))
		rec.encode(r.out[off:])
	}
	return r.out, r.stats, nil
}

// heldPuts returns the offsets of the PUT records of epoch gen in the log
// pages at pages (the head page, then the blocks) whose bsum holds over
// the bucket they name, in the source.
func (r *redactor) heldPuts(gen uint64, pages []uint64) []int64 {
	var offs []int64
	for i, page := range pages {
		slots := nativeBlockRecords
		if i == 0 {
			slots = nativeHeadRecords
		}
		for j := range slots {
			off := int64(page) + nativeLogHeader + int64(j)*nativeLogRecord
			if off+nativeLogRecord > int64(len(r.src)) {
				break
			}
			rec, err := decodeNativeLogRec("", r.src[off:], off)
			if err != nil || rec.typ != recPut || rec.epoch != gen {
				continue
			}
			if b := r.bucketBytes(r.src, nativeEntry(rec.entry)); b != nil && nativeBucketSum(nativeRevisionSessions, b) == rec.bsum {
				offs = append(offs, off)
			}
		}
	}
	return offs
}

// bucketBytes is the bucket that e names in img, as far as its header's
// size says, or nil when its header does not pass or it runs past img.
func (r *redactor) bucketBytes(img []byte, e nativeEntry) []byte {
	off, room := e.off(), e.room()
	if room == 0 || off >= uint64(len(img)) {
		return nil
	}
	b := img[off:min(off+room, uint64(len(img)))]
	h, err := decodeNativeBucketHeader("", b, int64(off), room)
	if err != nil || h.size > uint64(len(b)) {
		return nil
	}
	return b[:h.size]
}

// nativeBucket redacts the bucket in the cell or block of room bytes at
// ptr: the header is kept, then each record that frames (its length fits
// the bucket) keeps its checksum and length and has its object redacted.
// It returns the offsets of the records whose checksum held, to be
// recomputed over the redacted bytes; the first record that does not frame
// ends the bucket, and the rest is left to be zeroed.
func (r *redactor) nativeBucket(ptr, room int64) ([]int64, error) {
	b := r.src[ptr : ptr+room]
	if len(b) < nativeBucketHeader {
		return nil, nil
	}
	r.keep(ptr, nativeBucketHeader)
	end := int64(len(b))
	if h, err := decodeNativeBucketHeader("", b, ptr, uint64(room)); err == nil {
		end = int64(h.size)
	}
	var resum []int64
	for pos := int64(nativeBucketHeader); pos+nativeMinObjectRecord <= end; {
		l, v := binary.Uvarint(b[pos+8 : min(end, pos+8+binary.MaxVarintLen64)])
		if v <= 0 || l == 0 || l > uint64(end-pos-8-int64(v)) {
			break
		}
		n := 8 + int64(v) + int64(l)
		if le.Uint64(b[pos:]) == xxhash.Sum64(b[pos+8:pos+n]) {
			resum = append(resum, ptr+pos)
		}
		r.keep(ptr+pos, 8+int64(v))
		if err := r.object(ptr+pos+8+int64(v), int64(l)); err != nil {
			return nil, err
		}
		pos += n
	}
	r.stats.Buckets++
	return resum, nil
}
