package dets

import "slices"

// The allocator operations recovery needs (docs/format-native.md §11.2
// step 5): the epoch's writes took space from meta g's free record, and
// recovery takes the same space again before it marks the epoch's cells
// and blocks pending.

// dissolveDeadRuns turns every run that holds no live cell into a plain
// 64 KiB block: free when none of its cells is quarantined, quarantined
// (all of it) otherwise. After a Sync such a run went back to the buddy
// and an epoch's write may have carved it anew, for another cell class or
// as blocks; as a block, take and available find that space.
func (a *nativeAlloc) dissolveDeadRuns() {
	for run, r := range a.runs {
		dead := true
		for i := range r.words() {
			dead = dead && (r.free[i]|r.quar[i]|r.pend[i]) == r.full(i)
		}
		if !dead || r.hasAny(&r.pend) {
			continue
		}
		delete(a.runs, run)
		a.open[r.class] = deleteSorted(a.open[r.class], run)
		if r.hasAny(&r.quar) {
			a.quar = append(a.quar, nativeBlock{run, nativeRunClass})
			a.held[run] = nativeRunClass
		} else {
			a.insertFree(nativeRunClass, run)
		}
	}
}

// take makes the cell or block e names live again. It must lie in space
// that is free or quarantined (available); anything else is a
// *CorruptionError, after which the allocator must be dropped.
func (a *nativeAlloc) take(e nativeEntry) error {
	off := e.off()
	if k := e.blockClass(); k != 0 {
		_, err := a.takeBlock(off, k)
		return err
	}
	c := e.cellClass()
	if c == 0 || off < a.base {
		return corrupt(a.path, "log", int64(off), "recovery of %s, which names no cell or block", e)
	}
	run := a.base + (off-a.base)&^(nativeRunSize-1)
	i := (off - run) / cellSize(c)
	if (off-run)%cellSize(c) != 0 || i >= uint64(cellsInRun(c)) {
		return corrupt(a.path, "log", int64(off), "recovery of %s off its run's grid", e)
	}
	w, bit := i/64, uint64(1)<<(i%64)
	r := a.runs[run]
	if r != nil && (int(r.class) != c || (r.free[w]|r.quar[w])&bit == 0) {
		return corrupt(a.path, "log", int64(off), "recovery of %s, which the last checkpoint did not leave free", e)
	}
	if r == nil {
		quar, err := a.takeBlock(run, nativeRunClass)
		if err != nil {
			return err
		}
		// A new run: its other cells keep the state of the block it was.
		r = &nativeRun{class: uint8(c), cells: uint16(cellsInRun(c))}
		for j := range r.words() {
			if quar {
				r.quar[j] = r.full(j)
			} else {
				r.free[j] = r.full(j)
			}
		}
		a.runs[run] = r
		if !quar {
			a.open[c] = insertSorted(a.open[c], run)
		}
	}
	if r.free[w]&bit != 0 {
		r.free[w] &^= bit
		if !r.hasAny(&r.free) {
			a.open[c] = deleteSorted(a.open[c], run)
		}
	} else {
		r.quar[w] &^= bit
	}
	if !r.hasAny(&r.free) && !r.hasAny(&r.pend) && !r.hasAny(&r.quar) {
		delete(a.runs, run)
	}
	return nil
}

// takeBlock makes the block of 2^k bytes at off live, splitting the free
// or quarantined block that contains it; the pieces left over keep that
// block's state. It reports whether the block was quarantined.
func (a *nativeAlloc) takeBlock(off uint64, k int) (bool, error) {
	if off < a.base || (off-a.base)%(1<<k) != 0 {
		return false, corrupt(a.path, "log", int64(off), "recovery of a misaligned block 2^%d", k)
	}
	rel := off - a.base
	for j := k; j <= nativeMaxBuddyClass; j++ {
		at := a.base + rel&^(1<<j-1)
		quar := false
		if i, ok := slices.BinarySearch(a.free[j], at); ok {
			a.free[j] = slices.Delete(a.free[j], i, i+1)
		} else if hk, ok := a.held[at]; ok && int(hk) == j && a.isQuarantined(at) {
			delete(a.held, at)
			a.quar = slices.DeleteFunc(a.quar, func(b nativeBlock) bool { return b.off == at })
			quar = true
		} else {
			continue
		}
		// Split down to 2^k: each step leaves the half without off.
		for j > k {
			j--
			other := at + 1<<j
			if off >= other {
				other, at = at, other
			}
			if quar {
				a.quar = append(a.quar, nativeBlock{other, uint8(j)})
				a.held[other] = uint8(j)
			} else {
				a.free[j] = insertSorted(a.free[j], other)
			}
		}
		return quar, nil
	}
	// Not inside one block: the epoch may have allocated the merge of
	// blocks a Sync released (coveredFree). A run carved from such a
	// merge counts as quarantined if any part of it was.
	if k > nativeMinBuddyClass && a.coveredFree(off, k) {
		q1, err := a.takeBlock(off, k-1)
		if err != nil {
			return false, err
		}
		q2, err := a.takeBlock(off+1<<(k-1), k-1)
		return q1 || q2, err
	}
	return false, corrupt(a.path, "log", int64(off), "recovery of block 2^%d, which the last checkpoint did not leave free", k)
}

// isQuarantined reports whether the held block at off is quarantined
// rather than pending.
func (a *nativeAlloc) isQuarantined(off uint64) bool {
	for _, b := range a.quar {
		if b.off == off {
			return true
		}
	}
	return false
}
