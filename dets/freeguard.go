package dets

import (
	"fmt"
	"slices"
)

// An otp9 file's free lists lie outside the header's MD5 (docs/format-otp9.md
// §8.4): a damaged or hostile list can name a block that still holds a
// bucket, a segment or a part. OTP trusts the list, writes its next bucket
// over that block, and a key silently vanishes. godets checks in two
// places, each paid once for what it covers:
//
//   - at open, no free block may overlap a part or segment (a sweep over
//     the sorted addresses, cheap next to reading the parts): such a file
//     is treated as one with malformed free lists, a repair decision;
//   - when a block is handed out whose range the file's free lists named
//     (fileFree), before anything is written into it, no live bucket may
//     lie in it: a 16-byte-grid scan of the block for ACTIVE status words
//     and a probe of the few larger blocks that could contain it. A word is
//     a live bucket only when its first key's slot names that address, as
//     in repair's slotReferences. Space this process freed is not checked:
//     the allocator's blocks are disjoint, so only the file's word is in
//     doubt.
//
// A live bucket found there stops the table (errInconsistent): nothing has
// been written over it, Close leaves the file marked not closed, and the
// repair the next open asks for finds every bucket.

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
	for _, p := range t.parts {
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
func (t *Table) vetFileFree(a, blockLen int64) error {
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
				if err := t.liveBucketIn(lo+int64(off), a, blockLen, hb); err != nil {
					return err
				}
			}
		}
	}
	// A larger live bucket containing the block starts at the block's
	// address rounded down to its own size; only classes the header counts
	// can hold one.
	for c := buddyClass(blockLen) + 1; c <= maxBuddyClass; c++ {
		size := blockSize(c)
		if i := counterIndex(size); i < 0 || t.h.counters[i] == 0 {
			continue
		}
		x := base + (a-base)&^(size-1)
		if x == a || x < base || x+bucketHeaderSize > t.fileEnd {
			continue
		}
		if err := t.readAt(hb, x); err != nil {
			return t.ioErr("bucket", x, err)
		}
		if be.Uint32(hb[4:]) == statusActive {
			if err := t.liveBucketIn(x, a, blockLen, hb); err != nil {
				return err
			}
		}
	}
	return nil
}

// liveBucketIn returns an error when the ACTIVE header at x is a live
// bucket (its first key's slot names x) reaching into [a, a+blockLen).
// Anything that does not parse as a bucket is not one: the scan only
// looks for buckets a slot still names. hb is room for the header.
func (t *Table) liveBucketIn(x, a, blockLen int64, hb []byte) error {
	if err := t.readAt(hb, x); err != nil {
		return t.ioErr("bucket", x, err)
	}
	size := int64(be.Uint32(hb))
	if size <= bucketHeaderSize || x+size > t.fileEnd || x+blockSize(buddyClass(size)) <= a || x >= a+blockLen {
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
