package dets

// nativeEmptyImage returns the bytes of a new, empty native table with
// superblock s: the header pages, meta A of generation 1 (meta B stays
// zero, so invalid, until the first checkpoint), empty log head pages, and
// in the buddy area the root, the parts and the segments of s.minSlots
// empty slots and the free record (§3). With the default 512 slots that
// is 36,864 bytes. The table is closed properly: no record in its log
// head passes (§11.1).
func nativeEmptyImage(s *nativeSuper) ([]byte, nativeMeta, error) {
	a := newNativeAlloc("", s.base)
	next := s.minSlots
	nSegs := next / nativeSlotsPerSeg
	nParts := (nSegs + nativeSegsPerPart - 1) / nativeSegsPerPart
	m := nativeMeta{fileID: s.fileID, gen: 1, next: next, m: next, rootLen: nativeRootLen(next)}
	var err error
	alloc := func(k int) uint64 {
		off, e := a.allocBlock(k)
		if err == nil {
			err = e
		}
		return off
	}
	m.rootOff = alloc(blockClassFor(m.rootLen))
	parts := make([]nativeChild, nParts)
	segs := make([]uint64, nSegs)
	for p := range parts {
		parts[p].off = alloc(nativeMinBuddyClass)
	}
	for i := range segs {
		segs[i] = alloc(nativeMinBuddyClass)
	}
	m.freeOff = alloc(nativeMinBuddyClass)
	if err != nil {
		return nil, m, err
	}
	m.dataEnd = a.dataEnd()
	img := make([]byte, m.dataEnd)
	s.encode(img[nativeSuperOff:])
	var empty [nativeSlotsPerSeg]nativeEntry
	for i, off := range segs {
		sum := encodeNativeSegment(img[off:], &empty)
		p := i / nativeSegsPerPart
		o := parts[p].off + 16*uint64(i%nativeSegsPerPart)
		le.PutUint64(img[o:], off)
		le.PutUint64(img[o+8:], sum)
	}
	for p := range parts {
		parts[p].sum = nativeNodeSum(img[parts[p].off : parts[p].off+nativePageSize])
	}
	m.rootSum = encodeNativeRoot(img[m.rootOff:], parts)
	rec, err := a.encodeFree(nil, m.dataEnd)
	if err != nil {
		return nil, m, err
	}
	if uint64(len(rec)) > nativePageSize {
		return nil, m, corrupt("", "freelist", int64(m.freeOff), "free record of a new table is %d bytes", len(rec))
	}
	copy(img[m.freeOff:], rec)
	m.freeLen, m.freeSum = uint64(len(rec)), nativeNodeSum(rec)
	m.encode(img[nativeMetaAOff:])
	return img, m, nil
}
