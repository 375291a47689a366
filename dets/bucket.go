package dets

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/godets/godets/etf"
)

// A bucket ("object collection", §4) holds every object of one slot.
//
//	set:              <<Size:32, ACTIVE:32, (<<ObjSz:32, ETF>>)*>>
//	bag, dup bag:     <<Size:32, ACTIVE:32, (<<KeySz:32, (<<ObjSz:32, ETF>>)+>>)*>>
//
// Keys are sorted ascending by etf.CompareExact (dets_utils:cmp order); the
// objects of one key are in insertion order, oldest first.

// object is one stored object with its encoding.
type object struct {
	term etf.Term
	enc  []byte // term_to_binary bytes, without the ObjSz prefix
}

// group is the objects of one key (exactly one for a set).
type group struct {
	key  etf.Term
	objs []object
}

// keyOf returns element keyPos of obj, or false when obj is not a tuple
// with at least keyPos elements.
func keyOf(obj etf.Term, keyPos int) (etf.Term, bool) {
	t, ok := obj.(etf.Tuple)
	if !ok || keyPos < 1 || len(t) < keyPos {
		return nil, false
	}
	return t[keyPos-1], true
}

// bucketError describes a malformed bucket body; off is relative to the
// start of the bucket.
type bucketError struct {
	off    int
	reason string
}

// parseObjects calls fn for each <<ObjSz, ETF>> record of b, which must be
// exactly covered. base is b's offset in the bucket (for errors).
func parseObjects(b []byte, base int, fn func(enc []byte, off int) *bucketError) *bucketError {
	off := 0
	for off < len(b) {
		if len(b)-off < 4 {
			return &bucketError{base + off, "truncated object size"}
		}
		sz := int(be.Uint32(b[off:]))
		if sz < 5 || sz > len(b)-off {
			return &bucketError{base + off, fmt.Sprintf("object size %d out of range", sz)}
		}
		if e := fn(b[off+4:off+sz], base+off); e != nil {
			return e
		}
		off += sz
	}
	return nil
}

// decodeObject decodes one stored object and extracts its key.
func decodeObject(enc []byte, keyPos int, off int) (etf.Term, etf.Term, *bucketError) {
	t, err := decodeTerm(enc)
	if err != nil {
		return nil, nil, &bucketError{off, "undecodable object: " + err.Error()}
	}
	k, ok := keyOf(t, keyPos)
	if !ok {
		return nil, nil, &bucketError{off, fmt.Sprintf("object is not a tuple with at least %d elements", keyPos)}
	}
	return t, k, nil
}

// parseGroups decodes a whole bucket body (the bytes after the 8-byte
// header) into key groups. Encodings alias body.
func parseGroups(kind Kind, keyPos int, body []byte) ([]group, *bucketError) {
	var gs []group
	if kind == Set {
		e := parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
			t, k, e := decodeObject(enc, keyPos, off)
			if e != nil {
				return e
			}
			gs = append(gs, group{key: k, objs: []object{{t, enc}}})
			return nil
		})
		return gs, e
	}
	off := 0
	for off < len(body) {
		if len(body)-off < 4 {
			return nil, &bucketError{bucketHeaderSize + off, "truncated key group size"}
		}
		sz := int(be.Uint32(body[off:]))
		if sz < 9 || sz > len(body)-off {
			return nil, &bucketError{bucketHeaderSize + off, fmt.Sprintf("key group size %d out of range", sz)}
		}
		var g group
		e := parseObjects(body[off+4:off+sz], bucketHeaderSize+off+4, func(enc []byte, o int) *bucketError {
			t, k, e := decodeObject(enc, keyPos, o)
			if e != nil {
				return e
			}
			if g.key == nil {
				g.key = k
			} else if !etf.Equal(g.key, k) {
				return &bucketError{o, "object key differs from its key group"}
			}
			g.objs = append(g.objs, object{t, enc})
			return nil
		})
		if e != nil {
			return nil, e
		}
		gs = append(gs, g)
		off += sz
	}
	return gs, nil
}

// lookupInBody returns the objects stored under key (decoded), decoding as
// little as it can: for bags it decodes only the first object of each other
// key group. With wantObjs false it only reports presence.
func lookupInBody(kind Kind, keyPos int, body []byte, key etf.Term, wantObjs bool) ([]etf.Term, bool, *bucketError) {
	var out []etf.Term
	found := false
	if kind == Set {
		e := parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
			if found {
				return nil
			}
			t, k, e := decodeObject(enc, keyPos, off)
			if e != nil {
				return e
			}
			if etf.Equal(k, key) {
				found = true
				if wantObjs {
					out = append(out, t)
				}
			}
			return nil
		})
		return out, found, e
	}
	off := 0
	for off < len(body) && !found {
		if len(body)-off < 4 {
			return nil, false, &bucketError{bucketHeaderSize + off, "truncated key group size"}
		}
		sz := int(be.Uint32(body[off:]))
		if sz < 9 || sz > len(body)-off {
			return nil, false, &bucketError{bucketHeaderSize + off, fmt.Sprintf("key group size %d out of range", sz)}
		}
		first := true
		e := parseObjects(body[off+4:off+sz], bucketHeaderSize+off+4, func(enc []byte, o int) *bucketError {
			if first {
				first = false
				t, k, e := decodeObject(enc, keyPos, o)
				if e != nil {
					return e
				}
				if !etf.Equal(k, key) {
					return errSkipGroup
				}
				found = true
				if wantObjs {
					out = append(out, t)
				}
				return nil
			}
			if !wantObjs {
				return errSkipGroup
			}
			t, _, e := decodeObject(enc, keyPos, o)
			if e != nil {
				return e
			}
			out = append(out, t)
			return nil
		})
		if e != nil && e != errSkipGroup {
			return nil, false, e
		}
		off += sz
	}
	return out, found, nil
}

var errSkipGroup = &bucketError{reason: "skip"}

// bucketSize returns the Size field of the bucket holding gs.
func bucketSize(kind Kind, gs []group) int64 {
	n := int64(bucketHeaderSize)
	for _, g := range gs {
		if kind != Set {
			n += 4
		}
		for _, o := range g.objs {
			n += 4 + int64(len(o.enc))
		}
	}
	return n
}

// appendBucket appends the complete bucket (header and body) holding gs.
func appendBucket(dst []byte, kind Kind, gs []group) []byte {
	size := bucketSize(kind, gs)
	dst = be.AppendUint32(dst, uint32(size))
	dst = be.AppendUint32(dst, statusActive)
	for _, g := range gs {
		if kind != Set {
			n := 4
			for _, o := range g.objs {
				n += 4 + len(o.enc)
			}
			dst = be.AppendUint32(dst, uint32(n))
		}
		for _, o := range g.objs {
			dst = be.AppendUint32(dst, uint32(4+len(o.enc)))
			dst = append(dst, o.enc...)
		}
	}
	return dst
}

// findGroup returns the index of key's group in gs (sorted by CompareExact)
// or the index where it would be inserted.
func findGroup(gs []group, key etf.Term) (int, bool) {
	return slices.BinarySearchFunc(gs, key, func(g group, k etf.Term) int { return etf.CompareExact(g.key, k) })
}

// sameObject reports whether two stored objects are the same term (=:=).
func sameObject(a, b object) bool {
	if bytes.Equal(a.enc, b.enc) {
		return true
	}
	return etf.Equal(a.term, b.term)
}

// applyInsert adds o (with key k) to gs following kind's rules and returns
// the new groups with the change in keys and objects.
func applyInsert(kind Kind, gs []group, k etf.Term, o object) ([]group, int, int) {
	i, ok := findGroup(gs, k)
	if !ok {
		gs = slices.Insert(gs, i, group{key: k, objs: []object{o}})
		return gs, 1, 1
	}
	g := &gs[i]
	switch kind {
	case Set:
		g.objs = []object{o}
		return gs, 0, 0
	case Bag:
		for j := range g.objs {
			if sameObject(g.objs[j], o) {
				// An identical object moves to the end.
				g.objs = append(slices.Delete(g.objs, j, j+1), o)
				return gs, 0, 0
			}
		}
	}
	g.objs = append(g.objs, o)
	return gs, 0, 1
}
