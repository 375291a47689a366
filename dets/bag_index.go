package dets

import "slices"

// A bag insert looks for an identical (=:=) object in the key's group, to
// move it to the end instead of adding a copy. Compared one by one, a
// group of n objects costs n comparisons an insert, and a bulk build
// (InitTable, repair, conversion) of many objects under one key costs n²/2
// of them: 40,000 objects under one bag key took 64 s to build and 124 s
// to repair. From bagIndexMin objects on, a group keeps the phash2 of each
// object (equal terms have equal phash2, whatever their encoding, -0.0 and
// 0.0 too) and how many objects have each hash: a new object whose hash
// no object has is known new at once, and only objects of the same hash
// are compared.

// bagIndexMin is the group size from which findSame uses the index.
const bagIndexMin = 32

// searchedOnce marks a group that a search compared object by object
// once; the next search builds the index. Never changed.
var searchedOnce = &bagIndex{}

// bagIndex is a group's object hashes, in the group's order, and their
// counts. It describes the group while len(hs) == len(objs); off says that
// some object has no hash here (too deep to decode), so the group is
// compared object by object, and n is then the length it was found at.
type bagIndex struct {
	hs     []uint32
	counts map[uint32]int32
	off    bool
	n      int
}

// objectHash is o's phash2, from its bytes when etf can hash them there.
func objectHash(o *object) (uint32, bool) {
	if len(o.enc) > 1 {
		if h, ok := encodings.Phash2Body(o.enc[1:]); ok {
			return h, true
		}
	}
	if o.term != nil {
		return uint32(hashTerm(o.term)), true
	}
	t, err := decodeTerm(o.enc) // not kept: the group may be large
	if err != nil {
		return 0, false
	}
	return uint32(hashTerm(t)), true
}

// findSame returns the position of g's object identical to o, if any.
func (g *group) findSame(o *object) (int, bool) {
	ix := g.bagIndex()
	if ix == nil {
		for j := range g.objs {
			if sameObject(&g.objs[j], o) {
				return j, true
			}
		}
		return -1, false
	}
	h, ok := objectHash(o)
	if !ok {
		ix.off, ix.n = true, len(g.objs)
		return g.findSame(o)
	}
	if ix.counts[h] == 0 {
		return -1, false
	}
	for j, x := range ix.hs {
		if x == h && sameObject(&g.objs[j], o) {
			return j, true
		}
	}
	return -1, false
}

// bagIndex returns g's index, building it when g is large enough and has
// none that describes it; nil means compare object by object. The first
// search of a group compares: a call that inserts one object (the usual
// Insert) would build the index for nothing, and allocate.
func (g *group) bagIndex() *bagIndex {
	ix := g.index
	switch {
	case len(g.objs) < bagIndexMin:
		return nil
	case ix == nil:
		g.index = searchedOnce
		return nil
	case ix.off && ix.n == len(g.objs):
		return nil
	case !ix.off && ix != searchedOnce && len(ix.hs) == len(g.objs):
		return ix
	}
	ix = &bagIndex{hs: make([]uint32, 0, len(g.objs)+len(g.objs)/4), counts: make(map[uint32]int32, len(g.objs))}
	g.index = ix
	for j := range g.objs {
		h, ok := objectHash(&g.objs[j])
		if !ok {
			ix.off, ix.n, ix.hs, ix.counts = true, len(g.objs), nil, nil
			return nil
		}
		ix.hs = append(ix.hs, h)
		ix.counts[h]++
	}
	return ix
}

// bagAppend appends o to g, keeping g's index.
func (g *group) bagAppend(o object) {
	g.objs = append(g.objs, o)
	ix := g.index
	switch {
	case ix == nil || ix == searchedOnce:
	case ix.off:
		if ix.n == len(g.objs)-1 {
			ix.n++
		}
	case len(ix.hs) == len(g.objs)-1:
		if h, ok := objectHash(&g.objs[len(g.objs)-1]); ok {
			ix.hs = append(ix.hs, h)
			ix.counts[h]++
		} else {
			ix.off, ix.n, ix.hs, ix.counts = true, len(g.objs), nil, nil
		}
	}
}

// bagMoveToEnd moves g's object j to the end, replaced by o (identical to
// it), keeping g's index.
func (g *group) bagMoveToEnd(j int, o object) {
	ix := g.index
	valid := ix != nil && ix != searchedOnce && !ix.off && len(ix.hs) == len(g.objs)
	g.objs = append(slices.Delete(g.objs, j, j+1), o)
	if valid { // the length is unchanged, and so is an index that is off
		h := ix.hs[j]
		ix.hs = append(slices.Delete(ix.hs, j, j+1), h)
	}
}
