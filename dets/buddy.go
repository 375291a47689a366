package dets

import (
	"fmt"
	"slices"
)

// buddy is the in-memory buddy allocator of docs/format-otp9.md §8. Class p (1..32) holds free
// blocks of 2^(p-1) bytes; each class is a strictly ascending slice of block
// addresses, so "lowest address" is the first element.
//
// Base: OTP resets the base to 1336 whenever it reads free lists from a file,
// whatever FlBase says. We keep FlBase when it is non-zero (the base that laid
// out the blocks, so buddy parity is right) and use 1336 otherwise. Both give
// valid files: a wrong base only prevents some merges.
type buddy struct {
	base int64
	free [maxBuddyClass + 1][]uint32 // index = class; free[0] unused
	// read is what parseFreeLists read: every block as address<<8|class,
	// sorted by address, for the free-space guard (freeguard.go).
	read []uint64
}

// newBuddy returns an allocator owning one 2 GiB block at base.
func newBuddy(base int64) *buddy {
	b := &buddy{base: base}
	b.free[maxBuddyClass] = []uint32{uint32(base)}
	return b
}

func blockSize(class int) int64 { return 1 << (class - 1) }

// popShiftMax is the longest free list whose first block alloc takes by
// moving the rest down (a short copy, no allocation later); a longer list
// gives up its front slot instead, so that a long run of allocations
// stays linear.
const popShiftMax = 64

// alloc returns the address of a block of at least size bytes: the lowest
// address in the smallest class that has one, split down to the wanted
// class. It fails with ErrFileTooLarge when the block would end beyond the
// otp9 limit, leaving the allocator unchanged.
func (b *buddy) alloc(size int64) (int64, error) {
	want := buddyClass(size)
	if want > maxBuddyClass {
		return 0, ErrFileTooLarge
	}
	p := want
	for p <= maxBuddyClass && len(b.free[p]) == 0 {
		p++
	}
	if p > maxBuddyClass {
		return 0, ErrFileTooLarge
	}
	l := b.free[p]
	a := int64(l[0])
	if a+blockSize(want) > allocLimit {
		return 0, ErrFileTooLarge
	}
	if len(l) <= popShiftMax {
		// Keep the array's front: a growing file takes and refills
		// the same short lists at every split and free, and l[1:]
		// would use up their capacity, to be allocated again.
		copy(l, l[1:])
		b.free[p] = l[:len(l)-1]
	} else {
		b.free[p] = l[1:]
	}
	for p > want {
		p--
		b.insert(p, a+blockSize(p))
	}
	return a, nil
}

// release frees the block of the given class at a, merging it with its buddy
// as long as the buddy is free in the same class.
func (b *buddy) release(a int64, class int) {
	for class < maxBuddyClass {
		sz := blockSize(class)
		var bud int64
		if (a-b.base)&sz == 0 {
			bud = a + sz
		} else {
			bud = a - sz
		}
		if !b.remove(class, bud) {
			break
		}
		a = min(a, bud)
		class++
	}
	b.insert(class, a)
}

// freeBlock releases a block that holds size bytes.
func (b *buddy) freeBlock(a, size int64) { b.release(a, buddyClass(size)) }

func (b *buddy) insert(class int, a int64) {
	l := b.free[class]
	i, _ := slices.BinarySearch(l, uint32(a))
	b.free[class] = slices.Insert(l, i, uint32(a))
}

func (b *buddy) remove(class int, a int64) bool {
	if a < 0 || a > 1<<32-1 {
		return false
	}
	l := b.free[class]
	i, ok := slices.BinarySearch(l, uint32(a))
	if !ok {
		return false
	}
	b.free[class] = slices.Delete(l, i, i+1)
	return true
}

// freeBlocks calls fn for every free block in address order within class,
// classes ascending.
func (b *buddy) each(fn func(class int, a int64)) {
	for c := 1; c <= maxBuddyClass; c++ {
		for _, a := range b.free[c] {
			fn(c, int64(a))
		}
	}
}

func (b *buddy) clone() *buddy {
	n := &buddy{base: b.base}
	for c := range b.free {
		n.free[c] = slices.Clone(b.free[c])
	}
	return n
}

// appendFreeLists serializes the free lists as §8.4 records followed by the
// terminator (not the trailer).
func (b *buddy) appendFreeLists(dst []byte) []byte {
	for c := 1; c <= maxBuddyClass; c++ {
		l := b.free[c]
		for len(l) > 0 {
			n := min(len(l), maxFreeAddrs)
			dst = be.AppendUint32(dst, uint32(12+4*n))
			dst = be.AppendUint32(dst, statusFree)
			dst = be.AppendUint32(dst, uint32(c))
			for _, a := range l[:n] {
				dst = be.AppendUint32(dst, a)
			}
			l = l[n:]
		}
	}
	dst = be.AppendUint32(dst, 12)
	dst = be.AppendUint32(dst, statusFree)
	return be.AppendUint32(dst, endFree)
}

// parseFreeLists reads the free-list records in area (the bytes from
// FreelistsPointer up to the trailer) into a new allocator with the given
// base. It accepts what OTP's reader accepts, plus these checks: classes in
// ascending order, each in 1..32, the terminator ending exactly at the
// trailer, and no two free blocks overlapping or lying below 1336. The
// returned string is empty on success and says what is wrong otherwise; off
// is the offset within area of the problem.
func parseFreeLists(area []byte, base int64) (*buddy, int, string) {
	b := &buddy{base: base}
	// One backing array holds every address: each class gets a capped
	// window of it, so a later insert reallocates instead of overwriting
	// the next class.
	store := make([]uint32, 0, len(area)/4)
	off := 0
	last := 0
	for {
		if len(area)-off < 12 {
			return nil, off, "free lists end without a terminator"
		}
		size := int(be.Uint32(area[off:]))
		status := be.Uint32(area[off+4:])
		pos := be.Uint32(area[off+8:])
		if status != statusFree {
			return nil, off, fmt.Sprintf("record status %#x is not FREE", status)
		}
		if pos == endFree {
			if off+12 != len(area) {
				return nil, off, fmt.Sprintf("%d bytes after the terminator", len(area)-off-12)
			}
			break
		}
		if pos < 1 || pos > maxBuddyClass {
			return nil, off, fmt.Sprintf("class %d out of range", pos)
		}
		if int(pos) < last {
			return nil, off, fmt.Sprintf("class %d after class %d", pos, last)
		}
		if size < 12 || (size-12)%4 != 0 || size > len(area)-off {
			return nil, off, fmt.Sprintf("bad record size %d", size)
		}
		c := int(pos)
		prev := int64(-1)
		if c == last && len(b.free[c]) > 0 {
			prev = int64(b.free[c][len(b.free[c])-1])
		}
		if c != last {
			store = store[len(store):] // a new class starts its window here
		}
		for i := off + 12; i < off+size; i += 4 {
			a := int64(be.Uint32(area[i:]))
			if a <= prev {
				return nil, i, fmt.Sprintf("class %d addresses not ascending (%d after %d)", c, a, prev)
			}
			if a < baseAddr {
				return nil, i, fmt.Sprintf("free block %d below the buddy area", a)
			}
			store = append(store, uint32(a))
			prev = a
		}
		b.free[c] = store[:len(store):len(store)]
		last = c
		off += size
	}
	b.read = b.sortedBlocks()
	if blk, ok := firstOverlap(b.read); !ok {
		return nil, 0, fmt.Sprintf("free blocks overlap at %d", blk)
	}
	return b, 0, ""
}

type block struct {
	addr, size int64
	what       string
}

// blocks returns every free block sorted by address.
func (b *buddy) blocks() []block {
	var out []block
	b.each(func(c int, a int64) { out = append(out, block{a, blockSize(c), "free"}) })
	slices.SortFunc(out, func(x, y block) int { return cmpInt64(x.addr, y.addr) })
	return out
}

// sortedBlocks returns every free block as address<<8|class, sorted by
// address.
func (b *buddy) sortedBlocks() []uint64 {
	n := 0
	for c := range b.free {
		n += len(b.free[c])
	}
	all := make([]uint64, 0, n)
	for c := 1; c <= maxBuddyClass; c++ {
		for _, a := range b.free[c] {
			all = append(all, uint64(a)<<8|uint64(c))
		}
	}
	slices.Sort(all)
	return all
}

// firstOverlap finds a free block that overlaps the one before it in
// all, sorted by address (sortedBlocks).
func firstOverlap(all []uint64) (int64, bool) {
	for i := 1; i < len(all); i++ {
		prev, cur := int64(all[i-1]>>8), int64(all[i]>>8)
		if prev+blockSize(int(all[i-1]&0xff)) > cur {
			return cur, false
		}
	}
	return 0, true
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// allocBelow is alloc restricted to blocks that start below limit: the
// lowest such block of the smallest class that has one, split down.
func (b *buddy) allocBelow(size, limit int64) (int64, bool) {
	want := buddyClass(size)
	for p := want; p <= maxBuddyClass; p++ {
		if len(b.free[p]) == 0 || int64(b.free[p][0]) >= limit {
			continue
		}
		a := int64(b.free[p][0])
		b.free[p] = b.free[p][1:]
		for p > want {
			p--
			b.insert(p, a+blockSize(p))
		}
		return a, true
	}
	return 0, false
}

// topRunStart returns where the highest run of free blocks starts: the run
// that reaches allocLimit, so that nothing at or above the result is
// allocated. ok is false when no free block reaches allocLimit.
func (b *buddy) topRunStart() (int64, bool) {
	end := int64(0)
	for c := 1; c <= maxBuddyClass; c++ {
		if l := b.free[c]; len(l) > 0 {
			end = max(end, int64(l[len(l)-1])+blockSize(c))
		}
	}
	if end < allocLimit {
		return 0, false
	}
	for {
		found := false
		for c := 1; c <= maxBuddyClass && !found; c++ {
			a := end - blockSize(c)
			if _, ok := slices.BinarySearch(b.free[c], uint32(max(a, 0))); ok && a >= 0 {
				end, found = a, true
			}
		}
		if !found {
			return end, true
		}
	}
}
