package dets

import "slices"

// The raw scan of a native repair (docs/format-native.md §12.3), for the
// slots of a damaged tree node or, without a meta, the whole file. It
// probes every 16-byte address from the base for a bucket header; a
// bucket b speaks for key K when H(K) mod 2^level(b) = slot(b), and K's
// objects come from the bucket with the highest seq among those that
// speak for it (an empty group there: K was deleted). Objects found
// outside any header are kept only for keys no bucket speaks for.
//
// Memory: the raw scan holds 32 bytes for each bucket header it finds
// (headers and their authority), beyond the shared index: it runs only on
// damage of the tree or of both metas.

// rawBucket is a bucket header the raw scan found.
type rawBucket struct {
	off, size, seq uint64
	slot           uint32
	level          uint8
}

// authority is the highest-seq bucket for one (level, slot).
type authority struct{ seq, off uint64 }

func authKey(level uint8, slot uint64) uint64 { return uint64(level)<<32 | slot }

// rawScan finds the buckets, decides each key's authority and indexes the
// objects of the keys that rawSlot gives it.
func (p *repairPlan) rawScan() error {
	nr := p.nat
	base := nr.super.base
	size := uint64(p.size)
	var found []rawBucket
	for at := base; at+nativeBucketHeader+nativeMinObjectRecord <= size; at += nativeCellAlign {
		b := p.data[at:]
		if le.Uint16(b[nbOffMagic:]) != nativeBucketMagic || b[nbOffLevel+1] != 0 {
			continue
		}
		h, err := decodeNativeBucketHeader(p.path, b, int64(at), size-at)
		if err != nil {
			continue
		}
		found = append(found, rawBucket{off: at, size: h.size, seq: h.seq, slot: h.slot, level: h.level})
		nr.maxSeq = max(nr.maxSeq, h.seq)
		// Past the records that pass, not past the whole size: the
		// space of a stale bucket may hold newer buckets, whose headers
		// the probe must still find.
		end := p.rawIntact(at, h.size)
		at += (end-at+nativeCellAlign-1)/nativeCellAlign*nativeCellAlign - nativeCellAlign
	}
	auth := make(map[uint64]authority, len(found))
	var levels []uint8
	for _, f := range found {
		k := authKey(f.level, uint64(f.slot))
		if a, ok := auth[k]; !ok || f.seq > a.seq {
			auth[k] = authority{f.seq, f.off}
		}
		if !slices.Contains(levels, f.level) {
			levels = append(levels, f.level)
		}
	}
	// cover holds, for each (level l, slot s), the highest seq of the
	// buckets at level l or deeper whose slots lie under s: the buckets a
	// split of (l, s) wrote.
	cover := make(map[uint64]uint64, len(found))
	for _, f := range found {
		for _, l := range levels {
			if l <= f.level {
				k := authKey(l, uint64(f.slot)&(1<<l-1))
				cover[k] = max(cover[k], f.seq)
			}
		}
	}
	// superseded reports whether a newer bucket speaks for keys of f: one
	// of its (level, slot) or of a split of it, or one of a shallower
	// level over it (a new tree). Such an f is a stale copy whose tail the
	// cells allocated since may have overwritten, losing nothing.
	superseded := func(f rawBucket) bool {
		if cover[authKey(f.level, uint64(f.slot))] > f.seq {
			return true
		}
		for _, l := range levels {
			if l < f.level && auth[authKey(l, uint64(f.slot)&(1<<l-1))].seq > f.seq {
				return true
			}
		}
		return false
	}
	// outranked reports whether a bucket other than b (at off with seq)
	// speaks for the key of hash h with a higher seq; speaks, whether any
	// bucket speaks for it.
	outranked := func(h, seq, off uint64) (out, speaks bool) {
		for _, l := range levels {
			a, ok := auth[authKey(l, h&(1<<l-1))]
			if !ok {
				continue
			}
			speaks = true
			if a.seq > seq || (a.seq == seq && a.off != off) {
				out = true
			}
		}
		return out, speaks
	}
	// reused reports whether a newer bucket lies inside the one at i: its
	// space was freed and written again, so it is stale.
	reused := func(i int) bool {
		f := found[i]
		for _, g := range found[i+1:] {
			if g.off >= f.off+f.size {
				break
			}
			if g.seq > f.seq {
				return true
			}
		}
		return false
	}
	prevEnd := base
	for i, f := range found {
		if err := p.rawStretch(prevEnd, f.off, outranked); err != nil {
			return err
		}
		prevEnd = max(prevEnd, f.off+f.size) // a bucket inside another ends no stretch
		w := recordWalk{path: p.path, keyPos: p.keyPos, exact: true}
		mask := uint64(1)<<f.level - 1
		stale := superseded(f) || reused(i)
		err := w.walk(p.data[f.off:f.off+f.size], f.off, func(etfOff uint64, n int, h uint64) error {
			if !nr.rawSlot(h) {
				return nil
			}
			if h&mask != uint64(f.slot) {
				if !stale { // in a stale copy: a later cell's record
					nr.dropped++
				}
				return nil
			}
			if out, _ := outranked(h, f.seq, f.off); out {
				return nil // a stale copy: a newer bucket speaks for the key
			}
			return p.emitNative(etfOff, n, h)
		})
		if err != nil {
			return err
		}
		// Records that fail count as dropped only in a bucket no newer
		// bucket supersedes.
		if nr.allRaw && auth[authKey(f.level, uint64(f.slot))].off == f.off && !stale {
			p.countWalk(&w)
		}
	}
	return p.rawStretch(prevEnd, size, outranked)
}

// rawIntact is the end of the object records of the bucket at off
// (size bytes) that follow its header and pass their checksums, up to the
// first that fails. A newer bucket written into the space of a stale one
// lies past that end: its bytes fail the stale record they land on.
func (p *repairPlan) rawIntact(off, size uint64) uint64 {
	b := p.data[off : off+size]
	pos := nativeBucketHeader
	for pos < len(b) {
		_, n, err := decodeNativeObject(p.path, b[pos:], int64(off)+int64(pos))
		if err != nil {
			break
		}
		pos += n
	}
	return off + uint64(pos)
}

// rawStretch indexes the object records found by their checksums in
// [from, to), bytes no bucket header covers.
func (p *repairPlan) rawStretch(from, to uint64, outranked func(h, seq, off uint64) (bool, bool)) error {
	nr := p.nat
	if to <= from || to-from < nativeMinObjectRecord {
		return nil
	}
	body := p.data[from:to]
	for q := 0; q+nativeMinObjectRecord <= len(body); {
		if !recordPasses(body, q) {
			q++
			continue
		}
		enc, n, err := decodeNativeObject(p.path, body[q:], int64(from)+int64(q))
		if err != nil {
			q++
			continue
		}
		kenc, why := nativeObjectKey(enc, p.keyPos)
		if why != "" {
			q += n
			continue
		}
		h := nativeKeyHash(kenc)
		if nr.rawSlot(h) {
			if _, speaks := outranked(h, 0, 0); speaks {
				nr.ambiguous++
			} else if err := p.emitNative(from+uint64(q+n-len(enc)), len(enc), h); err != nil {
				return err
			}
		}
		q += n
	}
	return nil
}
