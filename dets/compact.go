package dets

// Tail compaction at save.
//
// Copy-on-write (writeGroups) allocates a bucket's new block before it frees
// the old one, where OTP rewrites a bucket in place while its size class
// holds. That leaves holes below the end of the data that OTP's files do not
// have: about 1% more file for a table built by single inserts. So before
// save writes the free lists, it moves the block at the top of the data (a
// bucket, or a segment or part of the slot table) into the lowest free
// block of its class (or a larger one) that lies lower, as long as one
// does, and then ends the data at the new top:
//
//	before   |....|hole|....|....|top|            end of data
//	after    |....|top |....|....|                end of data
//
// A move is writeGroups' own sequence on unchanged bytes: write the copy,
// mark the old block FREE, repoint the slot. A crash between the first two
// writes leaves two ACTIVE copies of one bucket; a repair of a set or a bag
// makes one object of each pair, but a duplicate_bag keeps both, so
// duplicate_bag tables are not compacted. For the others a crash at any
// step leaves a file that repair completes with the same objects, and the
// save's fsync orders every move before the closed header. Each save makes
// at most as many moves as buckets were freed since the previous save, so
// a save repays the holes its own writes made and never more: a session
// that inserts one object moves at most one bucket.
//
// The top bucket is found from the free lists: everything from the start of
// the highest run of free blocks up to the 2 GiB limit is free, so the
// allocated block ending there is the top one. Its class is not recorded
// anywhere, so each class is tried; a candidate counts only if its header
// says ACTIVE with a size of that class and the slot of its first key points
// exactly at it, which no bytes inside another bucket or a segment can fake.

// compactTail moves top blocks down (see above) and lowers t.fileEnd to
// the end of the data that is left. It runs in save, on a dirty table.
func (t *Table) compactTail() error {
	budget := t.freedSinceSave
	defer func() { t.freedSinceSave = 0 }()
	if t.kind == DuplicateBag || t.tune.noTailCompaction {
		return nil
	}
	for budget > 0 {
		end, ok := t.bud.topRunStart()
		if !ok {
			return nil
		}
		top, found, err := t.topBucket(end)
		if err != nil {
			return err
		}
		if !found {
			moved, err := t.moveTopTable(end)
			if err != nil || !moved {
				return err
			}
			budget--
			continue
		}
		ptr, ok := t.bud.allocBelow(top.e.size, top.e.ptr)
		if !ok {
			return t.lowerEnd(top.e.ptr + top.e.size)
		}
		if err := t.vetFileFree(ptr, blockSize(buddyClass(top.e.size))); err != nil {
			return err
		}
		if err := t.moveBucket(top, ptr); err != nil {
			return err
		}
		budget--
	}
	if end, ok := t.bud.topRunStart(); ok {
		return t.lowerEnd(end) // out of budget: nothing lies above the top block
	}
	return nil
}

// moveTopTable handles a top block that is not a bucket, ending at end: a
// segment or a part (both 2048 bytes, without a status word) is copied
// lower and its pointer (in its part, or in the header's part table)
// repointed; repair reads neither. When it cannot move, the data ends at
// end.
func (t *Table) moveTopTable(end int64) (moved bool, err error) {
	a := end - segmentSize
	ptrOff := int64(-1)
	var repoint func(int64)
	for s, sa := range t.segs {
		if int64(sa) == a {
			ptrOff = int64(t.parts[s/segsPerPart]) + 4*int64(s%segsPerPart)
			repoint = func(na int64) { t.segs[s] = na }
			break
		}
	}
	for p, pa := range t.parts {
		if ptrOff < 0 && pa != 0 && int64(pa) == a {
			ptrOff = partTableOff + 4*int64(p)
			repoint = func(na int64) { t.parts[p] = uint32(na) }
		}
	}
	ptr, ok := int64(0), false
	if ptrOff >= 0 {
		ptr, ok = t.bud.allocBelow(segmentSize, a)
	}
	if !ok {
		return false, t.lowerEnd(end)
	}
	if err := t.vetFileFree(ptr, segmentSize); err != nil {
		return false, err
	}
	var b [segmentSize]byte
	if err := t.readAt(b[:], a); err != nil {
		t.bud.freeBlock(ptr, segmentSize) // nothing written: the free lists stay exact
		return false, t.ioErr("segment", a, err)
	}
	if err := t.writeAt(b[:], ptr); err != nil {
		return false, err
	}
	var pb [4]byte
	be.PutUint32(pb[:], uint32(ptr))
	if err := t.writeAt(pb[:], ptrOff); err != nil {
		return false, err
	}
	repoint(ptr)
	t.bud.freeBlock(a, segmentSize)
	if f := t.tune.blockMoved; f != nil {
		f()
	}
	return true, nil
}

// lowerEnd ends the data at end if that is lower. The bytes past it (moved
// blocks and old free lists) are cut off by the save, so where the file's
// free lists said they were free, they are checked for a live bucket first
// (vetFileFree).
func (t *Table) lowerEnd(end int64) error {
	if end < t.fileEnd {
		if err := t.vetRange(end, t.fileEnd-end, false); err != nil {
			return err
		}
		t.fileEnd = end
	}
	if t.size > t.fileEnd {
		t.extended = true
	}
	return nil
}

type topBucket struct {
	slot uint64
	e    slotEntry
}

// topWindow is how much below the top one read takes, so that the usual
// candidates (blocks up to 4 KiB) cost one read together.
const topWindow = 4096

// topBucket identifies the allocated block that ends at end, if it is a live
// bucket; found is false for a segment or part (or anything else).
func (t *Table) topBucket(end int64) (topBucket, bool, error) {
	var wbuf [topWindow]byte
	wStart := max(end-topWindow, baseAddr)
	win := wbuf[:max(min(end, t.fileEnd)-wStart, 0)]
	if err := t.readAt(win, wStart); err != nil {
		return topBucket{}, false, t.ioErr("bucket", wStart, err)
	}
	// at returns the n bytes at a, from the window when it holds them.
	at := func(a, n int64) ([]byte, error) {
		if a >= wStart && a+n <= wStart+int64(len(win)) {
			return win[a-wStart : a-wStart+n], nil
		}
		if int64(cap(t.rbuf)) < n {
			t.rbuf = make([]byte, n)
		}
		b := t.rbuf[:n]
		if err := t.readAt(b, a); err != nil {
			return nil, t.ioErr("bucket", a, err)
		}
		return b, nil
	}
	for c := buddyClass(bucketHeaderSize + 5); c <= maxBuddyClass; c++ {
		a := end - blockSize(c)
		if a < baseAddr {
			break
		}
		if a+bucketHeaderSize > t.fileEnd {
			continue
		}
		hdr, err := at(a, bucketHeaderSize)
		if err != nil {
			return topBucket{}, false, err
		}
		size, st := int64(be.Uint32(hdr)), be.Uint32(hdr[4:])
		if st != statusActive || size < bucketHeaderSize+5 || buddyClass(size) != c || a+size > t.fileEnd {
			continue
		}
		b, err := at(a, size)
		if err != nil {
			return topBucket{}, false, err
		}
		gs, _, berr := t.parseBucket(b[bucketHeaderSize:], nil, nil)
		if berr != nil || len(gs) == 0 {
			continue
		}
		hv, err := t.hashGroup(&gs[0])
		if err != nil {
			continue
		}
		slot := t.slotFor(hv)
		e, err := t.entry(slot)
		if err != nil {
			return topBucket{}, false, err
		}
		if e == (slotEntry{size, a}) {
			return topBucket{slot, e}, true, nil
		}
	}
	return topBucket{}, false, nil
}

// moveBucket copies the top bucket to the block at ptr, already allocated,
// marks the old block FREE and repoints the slot (writeGroups' order).
func (t *Table) moveBucket(top topBucket, ptr int64) error {
	size := top.e.size
	if int64(cap(t.wbuf)) < size {
		t.wbuf = make([]byte, size)
	}
	b := t.wbuf[:size]
	if err := t.readAt(b, top.e.ptr); err != nil {
		t.bud.freeBlock(ptr, size) // nothing written: the free lists stay exact
		return t.ioErr("bucket", top.e.ptr, err)
	}
	if err := t.writeBucket(b, ptr); err != nil {
		return err
	}
	t.h.counters[counterIndex(size)]++
	if err := t.freeBucket(top.e); err != nil {
		return err
	}
	if f := t.tune.blockMoved; f != nil {
		f()
	}
	return t.setEntry(top.slot, slotEntry{top.e.size, ptr})
}
