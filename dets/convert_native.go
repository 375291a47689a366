package dets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/godets/godets/etf"
)

// convertToNative writes tmp as the native table of the otp9 table t
// (docs/format-native.md §13.1) with the repair's stages instead of
// inserts: each object of the mapped source is indexed by its offset and
// native key hash, the index sorted by native slot (spilling to
// DST.TMP.sort past the repair's bound, as to otp9), and nativeBuilder streams the
// buckets, slot by slot, into tmp. Objects already in etf.Encode's form
// are copied from the map; the rest (OTP's other encodings, compressed
// terms) are encoded again into a staging buffer, the whole bucket then,
// so that each key's objects keep their order.
func convertToNative(t *Table, srcPath, tmp string, st *ConvertStats) error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	h := t.h
	lo := h.minSlots
	if lo < nativeDefaultMinSlots {
		lo, st.MinSlotsRaised = nativeDefaultMinSlots, true
	}
	lo, hi, err := (&Options{MinSlots: int(lo), MaxSlots: int(h.maxSlots)}).nativeSlotBounds()
	if err != nil {
		return err
	}
	data, guard, release, err := mapSource(srcPath)
	if err != nil {
		return err
	}
	defer release()
	idx := &entryIndex{fs: OSFS{}, path: sortPath(strings.TrimSuffix(tmp, ".TMP")), limit: t.tune.repairMemEntries,
		twoLevelMax: t.tune.slotOrderTwoLevelMax, ownLengths: true}
	defer idx.cleanup()
	var staged []byte // objects encoded anew; their index offsets start at len(data)
	var objects, keys uint64
	err = guard.run(func() error {
		var gs []group
		var objs []object
		var enc []byte
		var ends []int
		for slot := uint64(0); slot < h.next; slot++ {
			e, err := t.entry(slot)
			if err != nil {
				return err
			}
			if e.size == 0 {
				continue
			}
			if e.size < bucketHeaderSize+5 || e.ptr < baseAddr || e.ptr+e.size > int64(len(data)) {
				return corrupt(srcPath, "bucket", e.ptr, "slot %d entry (size %d, pointer %d) outside the data area", slot, e.size, e.ptr)
			}
			b := data[e.ptr : e.ptr+e.size]
			if int64(be.Uint32(b)) != e.size || be.Uint32(b[4:]) != statusActive {
				return t.badBucketOTP9(slot, e, b)
			}
			var berr *bucketError
			if gs, objs, berr = parseRawInto(t.kind, t.keyPos, b[bucketHeaderSize:], gs, objs); berr != nil {
				return objectError(srcPath, e.ptr+int64(berr.off), slot, berr)
			}
			// Every object encoded as etf.Encode would: copied from the
			// map if the whole bucket is in that form, else staged.
			enc, ends = enc[:0], ends[:0]
			canonical := true
			for i := range gs {
				for j := range gs[i].objs {
					o := &gs[i].objs[j]
					start := len(enc)
					term, err := o.decoded()
					switch {
					case errors.Is(err, etf.ErrTooDeep):
						// Sound, but too deep to encode anew: its
						// bytes, with the key in canonical form.
						deepErr := err
						if enc, err = appendDeepObject(enc, o.enc, t.keyPos); err != nil {
							return &DeepTermError{Path: srcPath, Offset: e.ptr, Key: true, Err: deepErr}
						}
					case err != nil:
						return corrupt(srcPath, "object", e.ptr, "slot %d: %v", slot, err)
					default:
						if enc, err = etf.AppendEncode(enc, term); err != nil {
							return err
						}
					}
					canonical = canonical && bytes.Equal(enc[start:], o.enc)
					ends = append(ends, len(enc))
				}
			}
			at, k := 0, 0
			for i := range gs {
				keys++
				for j := range gs[i].objs {
					o := &gs[i].objs[j]
					off, body := uint64(cap(data)-cap(o.enc)), o.enc
					if canonical && (off+uint64(len(body)) > uint64(len(data)) || &data[off] != &body[0]) {
						return fmt.Errorf("dets: convert: slot %d: an object outside the mapped source", slot)
					}
					if !canonical {
						body = enc[at:ends[k]]
						off = uint64(len(data) + len(staged))
						staged = append(staged, body...)
					}
					kenc := keySpan(body, t.keyPos)
					if kenc == nil {
						return corrupt(srcPath, "object", e.ptr, "slot %d: no key element", slot)
					}
					if err := idx.add(repairEntry{off: off, n: uint32(len(body)), hash: uint32(nativeKeyHash(kenc))}); err != nil {
						return err
					}
					at, k = ends[k], k+1
					objects++
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if objects != h.noObjects || keys != h.noKeys {
		return corrupt(srcPath, "header", 0, "counts %d objects and %d keys, the buckets hold %d and %d", h.noObjects, h.noKeys, objects, keys)
	}
	// The repair's sizing: two keys a slot, a whole segment.
	next := (keys/2 + nativeSlotsPerSeg - 1) / nativeSlotsPerSeg * nativeSlotsPerSeg
	next = min(max(next, lo), hi)
	m, n := hashParamsFor(next)
	order, err := idx.sorted(func(e repairEntry) uint32 { return uint32(slotOf(uint64(e.hash), m, n)) }, 0, data)
	if err != nil {
		return err
	}
	st.ExternalSort = idx.spilled
	out, err := createFresh(OSFS{}, tmp, 0o644)
	if err != nil {
		return err
	}
	nb, err := newNativeBuilder(out, tmp, newNativeSuper(t.kind, t.keyPos, lo, hi, 0), next, 0)
	if err == nil {
		err = guard.run(func() error { return streamNative(nb, order, data, staged, t.kind, t.keyPos, nil) })
	}
	if err == nil {
		_, err = nb.finish()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && (nb.objects != objects || nb.keys != keys) {
		err = fmt.Errorf("dets: convert: the native writer wrote %d objects and %d keys of %d and %d", nb.objects, nb.keys, objects, keys)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	st.Objects, st.Keys = int64(objects), int64(keys)
	st.MinSlots, st.MaxSlots = lo, hi
	return nil
}

// appendDeepObject appends obj, an object too deep to decode, with its
// key element in etf.Encode's form (the native key hash covers that form,
// docs/format-native.md §9); the rest of its bytes are kept as they are.
// It fails when the key is too deep too, or obj is compressed.
func appendDeepObject(dst, obj []byte, keyPos int) ([]byte, error) {
	s, e, ok := encodings.TupleElement(obj, keyPos)
	if !ok {
		return dst, fmt.Errorf("no key element")
	}
	key, err := encodings.DecodeBody(obj[s:e])
	if err != nil {
		return dst, err
	}
	k, err := etf.Encode(key)
	if err != nil {
		return dst, err
	}
	dst = append(dst, obj[:s]...)
	dst = append(dst, k[1:]...) // without the version byte
	return append(dst, obj[e:]...), nil
}
