package dets

// The placement rules of the repair writer's chunked layout (tableWriter,
// docs/repair.md §6), which the writer and layoutSize share: layoutSize
// replays the writer's layout over bucket sizes alone, so that Convert
// can check otp9's size limit before it writes anything.

// dataEnd is where a chunked layout's data ends, pos, and the free blocks
// below it. Space is taken only at the end, each piece aligned to its own
// size: a chunk, or a block of a chunk or more.
type dataEnd struct {
	pos  int64
	free buddy
}

// alignUp rounds p up to a multiple of align from the buddy base.
func alignUp(p, align int64) int64 { return baseAddr + (p-baseAddr+align-1)/align*align }

// startData makes the data start at start rounded up to a chunk; the gap
// is free.
func (d *dataEnd) startData(start, chunk int64) {
	d.free.base = baseAddr
	d.pos = alignUp(start, chunk)
	d.freeRange(start, d.pos)
}

// take reserves n bytes at the end from a multiple of align and frees the
// gap it skips, which is below align: a block larger than the one before
// it leaves one. The caller checks the end against allocLimit.
func (d *dataEnd) take(n, align int64) int64 {
	a := alignUp(d.pos, align)
	d.freeRange(d.pos, a)
	d.pos = a + n
	return a
}

// chunkFull reports whether a class chunk of which used bytes are taken
// has no room for another block.
func chunkFull(used, block, chunk int64) bool { return used+block > chunk }

// endChunk settles, once every block is placed, the class chunk at at
// whose blocks end at used: the chunk at the end of the data is cut
// short, another's unused tail is freed.
func (d *dataEnd) endChunk(at, used, chunk int64) {
	if at+chunk == d.pos {
		d.pos = used
	} else {
		d.freeRange(used, at+chunk)
	}
}

// freeTail frees everything from the end of the data up to 2 GiB, as a
// closed file's free lists say.
func (d *dataEnd) freeTail() { d.freeRange(d.pos, baseAddr+1<<31) }

// freeRange adds [a, b) to the free lists as maximal aligned buddy blocks.
func (d *dataEnd) freeRange(a, b int64) { freeRangeTo(&d.free, a, b) }

// layoutSize is the size of the file that a tableWriter with one placer
// writes for buckets of the given sizes in slot order (0: an empty slot),
// after segments that end at start: its layout replayed with the rules it
// places by, then its free lists and trailer. plan says that planExact
// tries the planned layout (an index of fewer than planMaxEntries entries
// in memory, from an old file of at most planMaxBytes); chunk is the
// chunk size (chunkFor of the old file's size).
func layoutSize(start int64, sizes []uint32, plan bool, chunk int64) int64 {
	if plan {
		// planExact's sizing pass, then its choice of plan.
		var cs classSizes
		for _, s := range sizes {
			if s == 0 {
				continue
			}
			if int64(s) > allocLimit {
				plan = false // the sizing pass fails: chunked
				break
			}
			cs.add(int64(s))
		}
		if plan {
			if pl, ok := bestPlan(start, &cs); ok {
				return pl.fileEnd
			}
		}
	}
	// placer.addBucket, flushChunks and finish, unplanned.
	var d dataEnd
	d.startData(start, chunk)
	var open [maxBuddyClass + 1]struct{ at, used int64 } // used 0: none open
	for _, s := range sizes {
		if s == 0 {
			continue
		}
		block := pow2ceil(int64(s))
		if block >= chunk {
			d.take(block, block)
			continue
		}
		ch := &open[buddyClass(int64(s))]
		if ch.used != 0 && chunkFull(ch.used-ch.at, block, chunk) {
			ch.used = 0
		}
		if ch.used == 0 {
			ch.at = d.take(chunk, chunk)
			ch.used = ch.at
		}
		ch.used += block
	}
	for c := maxBuddyClass; c >= 1; c-- {
		if ch := open[c]; ch.used != 0 {
			d.endChunk(ch.at, ch.used, chunk)
		}
	}
	d.freeTail()
	return d.pos + int64(len(d.free.appendFreeLists(nil))) + trailerSize
}
