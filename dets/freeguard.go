package dets

import (
	"errors"
	"fmt"
	"slices"
)

// An otp9 file's free lists lie outside the header's MD5 (docs/format-otp9.md
// §8.4): a damaged or hostile list can name a block that still holds a
// bucket, a segment or a part. OTP trusts the list, writes its next bucket
// over that block (or cuts it off the end of the file at its next save),
// and a key silently vanishes. godets checks:
//
//   - at open, that no free block overlaps a part or segment (a sweep over
//     their addresses, cheap next to reading the parts): such a file is
//     treated as one with malformed free lists, a repair decision;
//   - before it writes into a block that lies in space the file's lists
//     called free (fileFree), or cuts such space off the end of the data
//     (lowerEnd), that no live bucket lies there: a 16-byte-grid scan of
//     the range for ACTIVE status words, and a probe, for each size class
//     the header counts, of the one address where a bucket of that class
//     reaching into the range would start. A word is a live bucket only
//     when its first key's slot names that address (repair's slotRefs
//     asks the same of every entry at once; here one entry is read).
//
// The check is paid each time such space is handed out, a read of about
// as many bytes as the write that follows; space beyond the file's data
// end at open is never checked (the allocator's blocks are disjoint, so
// only the file's word is in doubt). A live bucket found stops the table
// (errInconsistent): nothing has been written over it, Close leaves the
// file marked not closed, and the repair the next open asks for finds
// every bucket.

// fileFree is the free space a closed file's lists named below its data
// end: the blocks as address<<8|class, sorted by address (buddy.read),
// and that end. Blocks above it held nothing the file had.
type fileFree struct {
	blocks []uint64
	end    int64
}

// newFileFree keeps the blocks of all (sorted by address) that start
// below end.
func newFileFree(all []uint64, end int64) fileFree {
	n, _ := slices.BinarySearch(all, uint64(end)<<8)
	if n == 0 {
		return fileFree{}
	}
	return fileFree{blocks: all[:n:n], end: end}
}

// overlaps reports whether [lo, hi) meets one of the blocks below the end.
func (f *fileFree) overlaps(lo, hi int64) bool {
	if len(f.blocks) == 0 || lo >= f.end {
		return false
	}
	// The last block starting below hi is the only one that can reach lo:
	// the blocks are disjoint.
	i, _ := slices.BinarySearch(f.blocks, uint64(hi)<<8)
	if i == 0 {
		return false
	}
	blk := f.blocks[i-1]
	return int64(blk>>8)+blockSize(int(blk&0xff)) > lo
}

// freeOverlapsTables returns a message naming the first part or segment a
// free block overlaps, or "" when none does.
func (t *Table) freeOverlapsTables() string {
	if len(t.fileFree.blocks) == 0 {
		return ""
	}
	nparts := (len(t.segs) + segsPerPart - 1) / segsPerPart
	for _, p := range t.parts[:nparts] { // a pointer past them may be stale
		if p != 0 && t.fileFree.overlaps(int64(p), int64(p)+partSize) {
			return fmt.Sprintf("a free block overlaps the segment-array part at %d", p)
		}
	}
	for _, a := range t.segs {
		if t.fileFree.overlaps(a, a+segmentSize) {
			return fmt.Sprintf("a free block overlaps the segment at %d", a)
		}
	}
	return ""
}

// guardScanChunk is how much of a block one read of vetFileFree takes
// into a buffer of readBufs, whose last bytes hold bucket headers.
const guardScanChunk = (headReadSize - 2*bucketHeaderSize) / scanStep * scanStep

// vetFileFree checks a block of blockLen bytes at a that the allocator
// handed out, before anything is written into it: when the file's free
// lists named its range, no live bucket may lie in it or contain it.
//
// On another error (a failed read) nothing was written into the block, so
// it goes back to the allocator, as for any read error between two writes.
func (t *Table) vetFileFree(a, blockLen int64) error {
	err := t.vetRange(a, blockLen, true)
	if err != nil && !errors.Is(err, errInconsistent) {
		t.bud.freeBlock(a, blockLen)
	}
	return err
}

// vetRange checks [a, a+n) for a live bucket: for a block handed out
// (block), one whose block overlaps it, since the two blocks would later
// be given out twice; for data cut off the end, one whose bytes reach
// into it (the last bucket's block may run past the data's end).
func (t *Table) vetRange(a, blockLen int64, block bool) error {
	if !t.fileFree.overlaps(a, a+blockLen) {
		return nil
	}
	hp := readBufs.Get().(*[headReadSize]byte)
	defer readBufs.Put(hp)
	hb := hp[headReadSize-bucketHeaderSize:]
	base := t.bud.base
	end := min(a+blockLen, t.fileEnd, t.fileFree.end)
	// Buckets that start inside the block lie on the base's 16-byte grid.
	g := a + ((base-a)%scanStep+scanStep)%scanStep
	if g+bucketHeaderSize <= end {
		for lo := g; lo+bucketHeaderSize <= end; lo += guardScanChunk {
			buf := hp[:min(guardScanChunk, end-lo)]
			if err := t.readAt(buf, lo); err != nil {
				return t.ioErr("bucket", lo, err)
			}
			for off := 0; off+bucketHeaderSize <= len(buf); off += scanStep {
				if be.Uint32(buf[off+4:]) != statusActive {
					continue
				}
				if err := t.liveBucketIn(lo+int64(off), a, blockLen, block, hb); err != nil {
					return err
				}
			}
		}
	}
	// A live bucket that starts before the block and reaches into it
	// starts at the block's address rounded down to its own size, for
	// the base it was laid out from: this table's, or 1336 where OTP
	// reset it. Only the classes the header counts can hold one.
	bases, nb := [2]int64{base, baseAddr}, 1
	if base != baseAddr {
		nb = 2
	}
	for c := 1; c <= maxBuddyClass; c++ {
		size := blockSize(c)
		if i := counterIndex(size); i < 0 || t.h.counters[i] == 0 {
			continue
		}
		for _, b := range bases[:nb] {
			x := b + (a-b)&^(size-1)
			if a < b || x >= a || x+bucketHeaderSize > t.fileEnd {
				continue
			}
			if err := t.readAt(hb, x); err != nil {
				return t.ioErr("bucket", x, err)
			}
			if be.Uint32(hb[4:]) == statusActive {
				if err := t.liveBucketIn(x, a, blockLen, block, hb); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// liveBucketIn returns an error when the ACTIVE header at x is a live
// bucket (its first key's slot names x) reaching into [a, a+blockLen).
// Anything that does not parse as a bucket is not one: the scan only
// looks for buckets a slot still names. hb is room for the header.
func (t *Table) liveBucketIn(x, a, blockLen int64, block bool, hb []byte) error {
	if err := t.readAt(hb, x); err != nil {
		return t.ioErr("bucket", x, err)
	}
	size := int64(be.Uint32(hb))
	if size <= bucketHeaderSize || x+size > t.fileEnd || x >= a+blockLen {
		return nil
	}
	if reach := size; (block && x+blockSize(buddyClass(reach)) <= a) || (!block && x+reach <= a) {
		return nil
	}
	body := make([]byte, size)
	if err := t.readAt(body, x); err != nil {
		return t.ioErr("bucket", x, err)
	}
	gs, _, perr := t.parseBucket(body[bucketHeaderSize:], nil, nil)
	if perr != nil || len(gs) == 0 {
		return nil
	}
	h, err := t.hashGroup(&gs[0])
	if err != nil {
		return nil
	}
	slot := t.slotFor(h)
	e, err := t.entry(slot)
	if err != nil || e.ptr != x {
		return nil
	}
	return fmt.Errorf("%w: %w", errInconsistent,
		corrupt(t.path, "freelist", a, "the free lists give %d bytes here that the live bucket of slot %d at %d uses; the file needs a repair", blockLen, slot, x))
}
