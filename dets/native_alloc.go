package dets

import (
	"fmt"
	"math/bits"
	"slices"
)

// nativeAlloc is the native allocator (docs/format-native.md §7): a buddy
// system of blocks of 2^12 .. 2^59 bytes aligned from base, and runs, 64
// KiB buddy blocks cut into equal cells for buckets of at most 2048 bytes.
//
// Every block and cell is in one of four states: live (named by the tree
// or the log), free, pending (freed since the last checkpoint: the current
// meta or its log may still name it) or quarantined (freed by the last
// checkpoint: the fallback meta may still name it). Only free space is
// allocated. The engine drives the states through a checkpoint (§10.3):
//
//	allocate the new nodes and the free record's block   (steps 1, 2)
//	checkpoint()      quarantine -> free, pending -> quarantine
//	encodeFree(...)   the record of that state           (step 2)
//	fsync, write the meta                                 (steps 3, 4)
//	Sync only: fsync, then releaseQuarantine()            (step 5)
//
// The engine must not allocate between checkpoint() and the fsync of step
// 3: the old quarantine is free from then on, but only for writes that
// follow an fsync after the meta that made it free.
//
// The file's end is not a separate state: the whole buddy area is one free
// block of 2^59 bytes at base to start with, and dataEnd is the end of the
// highest block that is not free.
type nativeAlloc struct {
	path string // for messages
	base uint64
	free [nativeMaxBuddyClass + 1][]uint64 // free blocks of 2^k bytes, ascending
	pend []nativeBlock                     // pending blocks
	quar []nativeBlock                     // quarantined blocks
	held map[uint64]uint8                  // the pending and quarantined blocks: offset -> k
	runs map[uint64]*nativeRun             // runs with a cell that is not live
	open [nativeCellClasses + 1][]uint64   // per class, ascending runs with a free cell
	// spare holds run records that allocCell dropped when their last
	// cell went, for its next new run: a build or a long session fills
	// one run after another, and a record each (800 bytes) was the
	// repair's main garbage (6 MB at 3M objects, enough at 5 GB to push
	// its heap past 64 MiB).
	spare []*nativeRun
}

// nativeBlock is a buddy block of 2^k bytes at off.
type nativeBlock struct {
	off uint64
	k   uint8
}

func (b nativeBlock) end() uint64 { return b.off + 1<<b.k }

// nativeRun is the state of one run's cells; a cell in none of the three
// sets is live. Runs whose cells are all live are not kept (§7.4).
type nativeRun struct {
	class            uint8
	cells            uint16
	free, pend, quar [nativeRunWords]uint64 // bit i: cell i
}

// nativeRunWords is the bitmap size of the class with the most cells (32 B).
const nativeRunWords = nativeRunSize / 32 / 64

func (r *nativeRun) words() int { return (int(r.cells) + 63) / 64 }

// full is the bitmap of all the run's cells, word i.
func (r *nativeRun) full(i int) uint64 {
	n := int(r.cells) - 64*i
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

func (r *nativeRun) hasAny(set *[nativeRunWords]uint64) bool {
	for _, w := range set {
		if w != 0 {
			return true
		}
	}
	return false
}

func (r *nativeRun) allFree() bool {
	for i := range r.words() {
		if r.free[i] != r.full(i) {
			return false
		}
	}
	return true
}

// nativeFullError: an allocation would end past nativeMaxOffset.
type nativeFullError struct{ size uint64 }

func (e nativeFullError) Error() string {
	return fmt.Sprintf("dets: no space for %d bytes: native files end at 2^60 bytes", e.size)
}

// Is reports that the error is an ErrFileTooLarge.
func (nativeFullError) Is(target error) bool { return target == ErrFileTooLarge }

// newNativeAlloc returns the allocator of an empty buddy area at base.
func newNativeAlloc(path string, base uint64) *nativeAlloc {
	a := &nativeAlloc{path: path, base: base, runs: map[uint64]*nativeRun{}, held: map[uint64]uint8{}}
	a.free[nativeMaxBuddyClass] = []uint64{base}
	return a
}

// alloc allocates room for a bucket of size bytes (§7.2): the smallest cell
// class that holds it, or a buddy block above 2048 bytes. It returns the
// slot entry naming the allocation.
func (a *nativeAlloc) alloc(size uint64) (nativeEntry, error) {
	if c := cellClassFor(size); c != 0 {
		off, err := a.allocCell(c)
		return nativeCellEntry(off, c), err
	}
	k := blockClassFor(size)
	if k == 0 {
		return 0, nativeFullError{size}
	}
	off, err := a.allocBlock(k)
	return nativeBlockEntry(off, k), err
}

// allocBlock returns the lowest free block of the smallest class >= k
// that has one, split down to 2^k bytes.
func (a *nativeAlloc) allocBlock(k int) (uint64, error) {
	j := k
	for j <= nativeMaxBuddyClass && len(a.free[j]) == 0 {
		j++
	}
	if j > nativeMaxBuddyClass || a.free[j][0]+1<<k > nativeMaxOffset {
		return 0, nativeFullError{1 << k}
	}
	l := a.free[j]
	off := l[0]
	if len(l) <= popShiftMax { // keep the slice's front, as buddy.alloc does
		a.free[j] = slices.Delete(l, 0, 1)
	} else {
		a.free[j] = l[1:]
	}
	for j > k {
		j--
		a.insertFree(j, off+1<<j)
	}
	return off, nil
}

// allocCell returns the lowest free cell of class c in the lowest run that
// has one, or the first cell of a new run.
func (a *nativeAlloc) allocCell(c int) (uint64, error) {
	if len(a.open[c]) == 0 {
		off, err := a.allocBlock(nativeRunClass)
		if err != nil {
			return 0, err
		}
		var r *nativeRun
		if n := len(a.spare); n > 0 {
			r, a.spare = a.spare[n-1], a.spare[:n-1]
			*r = nativeRun{}
		} else {
			r = new(nativeRun)
		}
		r.class, r.cells = uint8(c), uint16(cellsInRun(c))
		for i := range r.words() {
			r.free[i] = r.full(i)
		}
		a.runs[off] = r
		a.open[c] = insertSorted(a.open[c], off)
	}
	run := a.open[c][0]
	r := a.runs[run]
	for i := range r.words() {
		if w := r.free[i]; w != 0 {
			b := bits.TrailingZeros64(w)
			r.free[i] &^= 1 << b
			if !r.hasAny(&r.free) {
				if l := a.open[c]; len(l) <= popShiftMax { // keep the front, as allocBlock does
					a.open[c] = slices.Delete(l, 0, 1)
				} else {
					a.open[c] = l[1:]
				}
				if !r.hasAny(&r.pend) && !r.hasAny(&r.quar) {
					delete(a.runs, run)
					if len(a.spare) < nativeCellClasses {
						a.spare = append(a.spare, r)
					}
				}
			}
			return run + uint64(64*i+b)*cellSize(c), nil
		}
	}
	return 0, corrupt(a.path, "layout", int64(run), "run listed with a free cell has none")
}

// release frees the cell or block that entry e names: it becomes pending.
// A release of space that is not live (free, pending, quarantined, or a
// cell of a run of another class) is refused with a *CorruptionError, and
// the allocator is left unchanged.
func (a *nativeAlloc) release(e nativeEntry) error {
	off := e.off()
	if k := e.blockClass(); k != 0 {
		if off < a.base || (off-a.base)%(1<<k) != 0 {
			return corrupt(a.path, "layout", int64(off), "release of a misaligned %s", e)
		}
		if a.overlapsFree(off, k) || a.overlapsRun(off, k) || a.overlapsHeld(off, k) {
			return corrupt(a.path, "layout", int64(off), "release of %s, which is not allocated", e)
		}
		a.pend = append(a.pend, nativeBlock{off, uint8(k)})
		a.held[off] = uint8(k)
		return nil
	}
	c := e.cellClass()
	if c == 0 || off < a.base {
		return corrupt(a.path, "layout", int64(off), "release of %s", e)
	}
	run := a.base + (off-a.base)&^(nativeRunSize-1)
	i := (off - run) / cellSize(c)
	if (off-run)%cellSize(c) != 0 || i >= uint64(cellsInRun(c)) {
		return corrupt(a.path, "layout", int64(off), "release of %s off its run's grid", e)
	}
	r := a.runs[run]
	if r == nil {
		// A run whose cells were all live: make it known.
		if a.overlapsFree(run, nativeRunClass) {
			return corrupt(a.path, "layout", int64(off), "release of %s in free space", e)
		}
		r = &nativeRun{class: uint8(c), cells: uint16(cellsInRun(c))}
		a.runs[run] = r
	}
	w, bit := i/64, uint64(1)<<(i%64)
	if int(r.class) != c || (r.free[w]|r.pend[w]|r.quar[w])&bit != 0 {
		if !r.hasAny(&r.free) && !r.hasAny(&r.pend) && !r.hasAny(&r.quar) {
			delete(a.runs, run)
		}
		return corrupt(a.path, "layout", int64(off), "release of %s, which is not allocated", e)
	}
	r.pend[w] |= bit
	return nil
}

// reuse frees the cell that entry e names at once, where release would
// make it pending: the cell was written in this epoch and superseded in a
// group that is complete (§7.3), so neither meta nor the replay of a log
// needs its bytes. A run whose cells all become free stays a run until
// the checkpoint, so that no entry of the epoch's log comes to name
// space of another shape. What release refuses, reuse refuses.
func (a *nativeAlloc) reuse(e nativeEntry) error {
	if e.cellClass() == 0 {
		return a.release(e)
	}
	if err := a.release(e); err != nil {
		return err
	}
	off := e.off()
	run := a.base + (off-a.base)&^(nativeRunSize-1)
	r := a.runs[run]
	i := (off - run) / cellSize(int(r.class))
	w, bit := i/64, uint64(1)<<(i%64)
	hadFree := r.hasAny(&r.free)
	r.pend[w] &^= bit
	r.free[w] |= bit
	if !hadFree {
		a.open[r.class] = insertSorted(a.open[r.class], run)
	}
	return nil
}

// checkpoint makes the quarantine free and the pending space quarantined
// (§7.3; see nativeAlloc for when the engine calls it). A run whose cells
// reuse made all free goes back to the buddy, as the free record wants.
func (a *nativeAlloc) checkpoint() error {
	if err := a.releaseQuarantine(); err != nil {
		return err
	}
	a.quar, a.pend = a.pend, a.quar[:0]
	for run, r := range a.runs {
		r.quar, r.pend = r.pend, [nativeRunWords]uint64{}
		if r.allFree() {
			delete(a.runs, run)
			a.open[r.class] = deleteSorted(a.open[r.class], run)
			a.insertFree(nativeRunClass, run)
		}
	}
	return nil
}

// releaseQuarantine makes the quarantined space free: a Sync's second fsync
// made the meta that freed it durable (§7.3). A run whose cells are then
// all free goes back to the buddy.
func (a *nativeAlloc) releaseQuarantine() error {
	for _, q := range a.quar {
		if a.overlapsFree(q.off, int(q.k)) {
			return corrupt(a.path, "layout", int64(q.off), "quarantined block 2^%d is also free", q.k)
		}
		delete(a.held, q.off)
		a.insertFree(int(q.k), q.off)
	}
	a.quar = a.quar[:0]
	for run, r := range a.runs {
		if !r.hasAny(&r.quar) {
			continue
		}
		hadFree := r.hasAny(&r.free)
		for i := range r.quar {
			r.free[i] |= r.quar[i]
			r.quar[i] = 0
		}
		switch {
		case r.allFree():
			delete(a.runs, run)
			if hadFree {
				a.open[r.class] = deleteSorted(a.open[r.class], run)
			}
			a.insertFree(nativeRunClass, run)
		case !hadFree:
			a.open[r.class] = insertSorted(a.open[r.class], run)
		}
	}
	return nil
}

// insertFree adds a free block of 2^k bytes at off, merged with its buddy
// as long as the buddy is free too.
func (a *nativeAlloc) insertFree(k int, off uint64) {
	for k < nativeMaxBuddyClass {
		bud := a.base + ((off - a.base) ^ (1 << k)) // flip bit k of the offset from base
		l := a.free[k]
		i, ok := slices.BinarySearch(l, bud)
		if !ok {
			break
		}
		a.free[k] = slices.Delete(l, i, i+1)
		off = min(off, bud)
		k++
	}
	a.free[k] = insertSorted(a.free[k], off)
}

// overlapsFree reports whether any free block overlaps [off, off+2^k).
func (a *nativeAlloc) overlapsFree(off uint64, k int) bool {
	rel := off - a.base
	for j := k; j <= nativeMaxBuddyClass; j++ { // blocks that contain it
		if _, ok := slices.BinarySearch(a.free[j], a.base+rel&^(1<<j-1)); ok {
			return true
		}
	}
	for j := nativeMinBuddyClass; j < k; j++ { // blocks inside it
		i, _ := slices.BinarySearch(a.free[j], off)
		if i < len(a.free[j]) && a.free[j][i] < off+1<<k {
			return true
		}
	}
	return false
}

// overlapsHeld reports whether a pending or quarantined block overlaps
// [off, off+2^k). Buddy blocks overlap only by nesting, so it looks up the
// blocks that would contain it and the 4 KiB positions inside it.
func (a *nativeAlloc) overlapsHeld(off uint64, k int) bool {
	if len(a.held) == 0 {
		return false
	}
	rel := off - a.base
	for j := k; j <= nativeMaxBuddyClass; j++ {
		at := a.base + rel&^(1<<j-1)
		if hk, ok := a.held[at]; ok && off < at+1<<hk {
			return true
		}
	}
	if k > nativeMinBuddyClass+6 { // more than 64 positions: look at each held block
		for h := range a.held {
			if h >= off && h < off+1<<k {
				return true
			}
		}
		return false
	}
	for p := off + 1<<nativeMinBuddyClass; p < off+1<<k; p += 1 << nativeMinBuddyClass {
		if _, ok := a.held[p]; ok {
			return true
		}
	}
	return false
}

// overlapsRun reports whether a known run overlaps the block [off, off+2^k).
func (a *nativeAlloc) overlapsRun(off uint64, k int) bool {
	if k <= nativeRunClass {
		return a.runs[a.base+(off-a.base)&^(nativeRunSize-1)] != nil
	}
	for run := range a.runs {
		if run >= off && run < off+1<<k {
			return true
		}
	}
	return false
}

// dataEnd is the end of the highest block that is not free: the file
// needs no byte beyond it. Free blocks above it tile [dataEnd, base+2^59)
// in ascending sizes, which this peels off from the top.
func (a *nativeAlloc) dataEnd() uint64 {
	end := a.base + 1<<nativeMaxBuddyClass
	for end > a.base {
		rel := end - a.base
		k := min(bits.TrailingZeros64(rel), nativeMaxBuddyClass)
		found := false
		for ; k >= nativeMinBuddyClass; k-- {
			if _, ok := slices.BinarySearch(a.free[k], end-1<<k); ok {
				end -= 1 << k
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return end
}

func insertSorted(l []uint64, v uint64) []uint64 {
	i, _ := slices.BinarySearch(l, v)
	return slices.Insert(l, i, v)
}

func deleteSorted(l []uint64, v uint64) []uint64 {
	if i, ok := slices.BinarySearch(l, v); ok {
		return slices.Delete(l, i, i+1)
	}
	return l
}
