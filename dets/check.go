package dets

import (
	"errors"
	"fmt"
	"slices"

	"github.com/godets/godets/etf"
)

// maxCheckProblems bounds how many problems Check reports.
const maxCheckProblems = 20

// Check verifies the table's structure against the file and returns nil or
// an error matching ErrCorrupt that lists the problems found (joined
// *CorruptionErrors). It reads every bucket and checks:
//
//   - every object decodes, is a tuple with KeyPos elements, and its key
//     hashes to the slot it is in;
//   - keys in a bucket are strictly ascending by etf.CompareExact, a set has
//     one object per key, a bag no identical objects under one key;
//   - the header's object and key counts and the size-class counters equal
//     the real ones;
//   - parts, segments, buckets and free blocks tile the buddy area from 1336
//     without gaps or overlaps, and data lies inside the file;
//   - on a clean file, the header and free lists on disk equal the state in
//     memory.
//
// On a native file it checks the superblock, both metas, every tree node's
// checksum, every bucket header and level, every object record on its own,
// the allocator's tiling of the buddy area and the free record
// (docs/format-native.md §13.2); CheckReport lists each damaged object.
//
// Check does not modify the table.
func (t *Table) Check() error {
	r, err := t.CheckReport()
	if err != nil {
		return err
	}
	return r.Err()
}

type checker struct {
	t        *Table
	problems []error
	// structural skips what the keys' and values' bytes decide (see
	// CheckStructure in inspect_check.go).
	structural bool
	report     CheckReport
}

func (c *checker) add(section string, off int64, format string, args ...any) {
	if len(c.problems) < maxCheckProblems {
		c.problems = append(c.problems, corrupt(c.t.path, section, off, format, args...))
	}
}

func (c *checker) run() {
	t := c.t
	if t.lay.tag == tagNative {
		c.runNative()
		return
	}
	var blocks []block
	for p := range numParts {
		if t.parts[p] != 0 && p < (len(t.segs)+segsPerPart-1)/segsPerPart {
			blocks = append(blocks, block{int64(t.parts[p]), partSize, "part"})
		}
	}
	for _, s := range t.segs {
		blocks = append(blocks, block{s, segmentSize, "segment"})
	}
	var counters [numCounters]uint32
	var objects, keys uint64
	for slot := uint64(0); slot < t.h.next; slot++ {
		e, err := t.entry(slot)
		if err != nil {
			c.add("segment", 0, "slot %d: %v", slot, err)
			return
		}
		if e.size == 0 {
			if e.ptr != 0 {
				c.add("segment", 0, "slot %d: empty entry with pointer %d", slot, e.ptr)
			}
			continue
		}
		gs, err := c.groups(slot, e)
		if err != nil {
			c.problems = append(c.problems, err)
			continue
		}
		if len(gs) == 0 {
			c.add("bucket", e.ptr, "slot %d: empty bucket", slot)
		}
		blocks = append(blocks, block{e.ptr, pow2ceil(e.size), fmt.Sprintf("bucket of slot %d", slot)})
		if i := counterIndex(e.size); i >= 0 {
			counters[i]++
		} else {
			c.add("bucket", e.ptr, "slot %d: bucket size %d", slot, e.size)
		}
		for gi, g := range gs {
			// A key too deep to decode (c.groups) cannot be hashed or
			// ordered here; the rest of its checks still apply.
			if g.key == nil {
			} else if s := t.slotFor(t.hashKey(g.key)); s != slot && !c.structural {
				c.add("object", e.ptr, "key %v in slot %d hashes to slot %d", g.key, slot, s)
			}
			if gi > 0 && gs[gi-1].key != nil && g.key != nil && etf.CompareExact(gs[gi-1].key, g.key) >= 0 && !c.structural {
				c.add("bucket", e.ptr, "slot %d: keys %v and %v out of order", slot, gs[gi-1].key, g.key)
			}
			if t.kind == Set && len(g.objs) != 1 {
				c.add("bucket", e.ptr, "slot %d: set key %v has %d objects", slot, g.key, len(g.objs))
			}
			if t.kind == Bag && !c.structural {
				for i := range g.objs {
					for j := i + 1; j < len(g.objs); j++ {
						if sameObject(&g.objs[i], &g.objs[j]) {
							c.add("bucket", e.ptr, "slot %d: bag key %v holds an object twice", slot, g.key)
						}
					}
				}
			}
			keys++
			objects += uint64(len(g.objs))
		}
	}
	c.report.Objects = int64(objects)
	if objects != t.h.noObjects || keys != t.h.noKeys {
		c.add("header", offNoObjects, "header counts %d objects and %d keys, the buckets hold %d and %d", t.h.noObjects, t.h.noKeys, objects, keys)
	}
	if counters != t.h.counters {
		c.add("header", offCounters, "size-class counters %v, buckets give %v", t.h.counters, counters)
	}
	c.checkTiling(blocks)
	if !t.dirty {
		c.checkDisk()
	}
}

// groups reads the bucket of slot (entry e) as readGroups does, except
// that it keeps a sound object nested too deep to decode (which OTP
// writes): such an object's term stays nil, and its group's key too when
// the key is that deep; each is listed in the report.
func (c *checker) groups(slot uint64, e slotEntry) ([]group, error) {
	t := c.t
	body, err := t.readBucket(slot, e)
	if err != nil {
		return nil, err
	}
	own := make([]byte, len(body))
	copy(own, body)
	gs, be := parseRaw(t.kind, t.keyPos, own)
	if be != nil {
		return nil, objectError(t.path, e.ptr+int64(be.off), slot, be)
	}
	for i := range gs {
		g := &gs[i]
		// A key too deep to decode makes each of its objects so too.
		_, kerr := g.keyTerm(t.keyPos)
		deepKey := kerr != nil && errors.Is(kerr, etf.ErrTooDeep)
		if kerr != nil && !deepKey {
			return nil, objectError(t.path, e.ptr, slot, &bucketError{off: 0, reason: kerr.Error(), cause: kerr})
		}
		for j := range g.objs {
			var err error
			if t.kind == Set {
				err = etf.Validate(g.objs[j].enc) // parseRaw let a deep one pass
			} else {
				_, err = g.objs[j].decoded()
			}
			if err != nil && !c.deep(e.ptr, deepKey, err) {
				return nil, objectError(t.path, e.ptr, slot, undecodable(0, err))
			}
		}
	}
	return gs, nil
}

// deep lists, for the bucket at off, an object (or with key, a key) too
// deep to decode, and reports whether err says that it is.
func (c *checker) deep(off int64, key bool, err error) bool {
	if !errors.Is(err, etf.ErrTooDeep) {
		return false
	}
	c.report.DeepCount++
	if len(c.report.Deep) < maxCheckDamaged {
		c.report.Deep = append(c.report.Deep, DeepTermError{Path: c.t.path, Offset: off, Key: key, Err: err})
	}
	return true
}

// checkTiling verifies that used and free blocks cover the buddy area from
// 1336 exactly once, and that every used block starts inside the data.
func (c *checker) checkTiling(used []block) {
	t := c.t
	for _, b := range used {
		if b.addr+min(b.size, 8) > t.fileEnd {
			c.add("layout", b.addr, "%s lies beyond the end of data %d", b.what, t.fileEnd)
		}
	}
	all := append(used, t.bud.blocks()...)
	slices.SortFunc(all, func(x, y block) int { return cmpInt64(x.addr, y.addr) })
	at := int64(baseAddr)
	for _, b := range all {
		switch {
		case b.addr < at:
			c.add("layout", b.addr, "%s (%d bytes) overlaps the block before it, which ends at %d", b.what, b.size, at)
		case b.addr > at:
			c.add("layout", at, "gap of %d bytes before %s", b.addr-at, b.what)
		}
		at = max(at, b.addr+b.size)
	}
	if at < t.fileEnd {
		c.add("layout", at, "data after the last block (end of data %d)", t.fileEnd)
	}
}

// checkDisk compares a clean file's header and free lists with memory.
func (c *checker) checkDisk() {
	t := c.t
	hb := make([]byte, headerSize)
	size, err := t.f.Size()
	if err == nil {
		err = readFull(t.f, hb, 0)
	}
	if err != nil {
		c.add("header", 0, "reading: %v", err)
		return
	}
	var tb [4]byte
	if err := readFull(t.f, tb[:], size-trailerSize); err != nil {
		c.add("header", size-trailerSize, "reading trailer: %v", err)
		return
	}
	h, state, err := checkHeader(hb, size, be.Uint32(tb[:]))
	if err != nil || state != hdrOK {
		c.add("header", 0, "on-disk header is not a closed header (%v)", err)
		return
	}
	mem := t.h
	mem.closed, mem.freelistsPtr = closedProperly, uint32(t.fileEnd)
	h.md5, mem.md5 = [16]byte{}, [16]byte{}
	mem.flBase = h.flBase
	if h.counters == ([numCounters]uint32{}) {
		// A 9(a) file has no counters until its first save; the
		// in-memory ones are checked against the buckets below.
		h.counters = mem.counters
	}
	if h != mem {
		c.add("header", 0, "on-disk header differs from the table state")
	}
	n, ok := freeListArea(size, int64(h.freelistsPtr))
	if !ok {
		c.add("freelist", int64(h.freelistsPtr), "%d bytes of free lists after %d bytes of data", size-trailerSize-int64(h.freelistsPtr), h.freelistsPtr)
		return
	}
	area := make([]byte, n)
	if err := readFull(t.f, area, int64(h.freelistsPtr)); err != nil {
		c.add("freelist", int64(h.freelistsPtr), "reading: %v", err)
		return
	}
	b, off, msg := parseFreeLists(area, t.bud.base)
	if msg != "" {
		c.add("freelist", int64(h.freelistsPtr)+int64(off), "%s", msg)
		return
	}
	if !slices.EqualFunc(b.free[:], t.bud.free[:], func(x, y []uint32) bool { return slices.Equal(x, y) }) {
		c.add("freelist", int64(h.freelistsPtr), "on-disk free lists differ from the allocator")
	}
}
