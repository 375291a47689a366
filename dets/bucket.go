package dets

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/godets/godets/etf"
)

// A bucket ("object collection", docs/format-otp9.md §7) holds every object of one slot.
//
//	set:              <<Size:32, ACTIVE:32, (<<ObjSz:32, ETF>>)*>>
//	bag, dup bag:     <<Size:32, ACTIVE:32, (<<KeySz:32, (<<ObjSz:32, ETF>>)+>>)*>>
//
// Keys are sorted ascending by etf.CompareExact (dets_utils:cmp order); the
// objects of one key are in insertion order, oldest first.

// object is one stored object with its encoding. Objects read on the hot
// paths (lookup, insert, repair) are not decoded: term stays nil until a
// caller needs it, and keys are compared through their encodings.
type object struct {
	term etf.Term
	enc  []byte // term_to_binary bytes, without the ObjSz prefix
	kenc []byte // the key element's bytes inside enc, or nil (compressed)
	// sum is the checksum of enc's native record when enc was read from
	// one and verified (parseNative), so that a rewrite copies it instead
	// of hashing again (docs/format-native.md §6.3); 0 means unknown.
	sum uint64
}

// decoded returns o's term, decoding it on first use.
func (o *object) decoded() (etf.Term, error) {
	if o.term == nil {
		t, err := decodeTerm(o.enc)
		if err != nil {
			return nil, err
		}
		o.term = t
	}
	return o.term, nil
}

// group is the objects of one key (exactly one for a set).
type group struct {
	key   etf.Term // nil until decoded (see keyTerm)
	kenc  []byte   // the key's encoding, or nil
	objs  []object
	index *bagIndex // a large bag group's object hashes (bag_index.go), or nil
}

// keySpan returns the bytes of element keyPos in the tuple enc encodes, or
// nil when enc is not a plain tuple encoding with that many elements.
func keySpan(enc []byte, keyPos int) []byte {
	if keyPos == 1 {
		if k, ok := leadingBinary(enc); ok {
			return k
		}
	}
	s, e, ok := encodings.TupleElement(enc, keyPos)
	if !ok {
		return nil
	}
	return enc[s:e:e]
}

// leadingBinary is keySpan's shortcut for the commonest key, a binary in
// position 1 of a small tuple (131, 104, arity, 109, Len:32, bytes): one
// bounds check instead of the general walk, which showed up in the insert
// profile (parsing every bucket it rewrites). It validates exactly what the
// walk would: the binary's bytes are there.
func leadingBinary(enc []byte) ([]byte, bool) {
	const head = 8 // version, SMALL_TUPLE_EXT, arity, BINARY_EXT, Len:32
	if len(enc) < head || enc[0] != 131 || enc[1] != 104 || enc[2] == 0 || enc[3] != 109 {
		return nil, false
	}
	n := uint64(be.Uint32(enc[4:]))
	if n > uint64(len(enc)-head) {
		return nil, false
	}
	end := head + int(n)
	return enc[3:end:end], true
}

// keyTerm returns g's key, decoding it on first use. The encodings were
// validated when the bucket was parsed, so decoding fails only on a broken
// invariant.
func (g *group) keyTerm(keyPos int) (etf.Term, error) {
	if g.key != nil {
		return g.key, nil
	}
	var k etf.Term
	var err error
	if g.kenc != nil {
		k, err = encodings.DecodeBody(g.kenc)
	} else {
		var t etf.Term
		if t, err = g.objs[0].decoded(); err == nil {
			var ok bool
			if k, ok = keyOf(t, keyPos); !ok {
				err = fmt.Errorf("dets: object is not a tuple with at least %d elements", keyPos)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	g.key = k
	return k, nil
}

// keyArg is a key to compare with stored keys: its encoding (body, without
// the version byte) when known, and its term when known. At least one is
// set.
type keyArg struct {
	enc  []byte
	term etf.Term
}

func (k *keyArg) decoded() etf.Term {
	if k.term == nil {
		k.term, _ = encodings.DecodeBody(k.enc)
	}
	return k.term
}

// cmpGroupKey compares g's key with k in CompareExact order, through the
// encodings when it can; keyPos finds the key in a compressed object.
func cmpGroupKey(g *group, k *keyArg, keyPos int) int {
	if g.kenc != nil && k.enc != nil {
		if bytes.Equal(g.kenc, k.enc) {
			return 0
		}
		if c, ok := encodings.CompareBodies(g.kenc, k.enc); ok {
			return c
		}
	}
	gk, err := g.keyTerm(keyPos)
	kt := k.decoded()
	if err != nil || kt == nil {
		// Unreachable for validated buckets; stay deterministic.
		return bytes.Compare(g.kenc, k.enc)
	}
	return etf.CompareExact(gk, kt)
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
	cause  error // the etf error of an object that did not decode, or nil
}

// undecodable is the bucketError of an object at off whose decoding or
// validation failed with err.
func undecodable(off int, err error) *bucketError {
	return &bucketError{off, "undecodable object: " + err.Error(), err}
}

// validateStored checks a stored object's encoding as etf.Validate does,
// but takes a sound term nested deeper than etf.MaxDepth (which OTP
// writes) for a sound object: it is kept and copied as bytes, and only
// its decoding fails (DeepTermError).
func validateStored(enc []byte) error {
	if err := etf.Validate(enc); err != nil && !errors.Is(err, etf.ErrTooDeep) {
		return err
	}
	return nil
}

// parseObjects calls fn for each <<ObjSz, ETF>> record of b, which must be
// exactly covered. base is b's offset in the bucket (for errors).
func parseObjects(b []byte, base int, fn func(enc []byte, off int) *bucketError) *bucketError {
	off := 0
	for off < len(b) {
		if len(b)-off < 4 {
			return &bucketError{off: base + off, reason: "truncated object size"}
		}
		sz := int(be.Uint32(b[off:]))
		if sz < 5 || sz > len(b)-off {
			return &bucketError{off: base + off, reason: fmt.Sprintf("object size %d out of range", sz)}
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
	k, e := objectKey(t, err, keyPos, off)
	if e != nil {
		return nil, nil, e
	}
	return t, k, nil
}

// objectKey checks the decoding t, err of an object and returns its key.
func objectKey(t etf.Term, err error, keyPos int, off int) (etf.Term, *bucketError) {
	if err != nil {
		return nil, undecodable(off, err)
	}
	k, ok := keyOf(t, keyPos)
	if !ok {
		return nil, &bucketError{off: off, reason: fmt.Sprintf("object is not a tuple with at least %d elements", keyPos)}
	}
	return k, nil
}

// rawObject checks one stored object without decoding it (it must decode,
// as a whole, and be a tuple with at least keyPos elements) and returns it
// with its key's encoding. Objects whose key cannot be sliced out of the
// encoding (compressed ones) are decoded instead.
func rawObject(enc []byte, keyPos int, off int) (object, *bucketError) {
	if err := validateStored(enc); err != nil {
		return object{}, undecodable(off, err)
	}
	o := object{enc: enc, kenc: keySpan(enc, keyPos)}
	if o.kenc == nil {
		t, _, e := decodeObject(enc, keyPos, off)
		if e != nil {
			return object{}, e
		}
		o.term = t
	}
	return o, nil
}

// countRecords counts the <<Sz:32, ...>> records that tile b (stopping at
// the first that does not fit; the parsers report that).
func countRecords(b []byte) int {
	n := 0
	for off := 0; len(b)-off >= 4; n++ {
		sz := int(be.Uint32(b[off:]))
		if sz < 4 || sz > len(b)-off {
			break
		}
		off += sz
	}
	return n
}

// parseRaw parses a whole bucket body (the bytes after the 8-byte header)
// into key groups without decoding: every object is validated, and keys
// are kept as encodings. Encodings alias body.
func parseRaw(kind Kind, keyPos int, body []byte) ([]group, *bucketError) {
	gs, _, e := parseRawInto(kind, keyPos, body, nil, nil)
	return gs, e
}

// parseRawInto is parseRaw reusing gs and, for a set, objs (both may be
// nil), which it returns (grown) for reuse; the groups keep room for one
// more.
func parseRawInto(kind Kind, keyPos int, body []byte, gs []group, objs []object) ([]group, []object, *bucketError) {
	if kind == Set {
		n := countRecords(body)
		gs = slices.Grow(gs[:0], n+1)
		objs = slices.Grow(objs[:0], n)[:n]
		e := parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
			o, e := rawObject(enc, keyPos, off)
			if e != nil {
				return e
			}
			i := len(gs)
			if i == len(objs) {
				objs = append(objs, object{})
			}
			objs[i] = o
			g := group{kenc: o.kenc, objs: objs[i : i+1 : i+1]}
			if o.kenc == nil {
				g.key, _ = keyOf(o.term, keyPos)
			}
			gs = append(gs, g)
			return nil
		})
		return gs, objs, e
	}
	gs = gs[:0]
	off := 0
	for off < len(body) {
		if len(body)-off < 4 {
			return nil, objs, &bucketError{off: bucketHeaderSize + off, reason: "truncated key group size"}
		}
		sz := int(be.Uint32(body[off:]))
		if sz < 9 || sz > len(body)-off {
			return nil, objs, &bucketError{off: bucketHeaderSize + off, reason: fmt.Sprintf("key group size %d out of range", sz)}
		}
		var g group
		first := true
		e := parseObjects(body[off+4:off+sz], bucketHeaderSize+off+4, func(enc []byte, o int) *bucketError {
			ob, e := rawObject(enc, keyPos, o)
			if e != nil {
				return e
			}
			if first {
				first = false
				g.kenc = ob.kenc
				if ob.kenc == nil {
					g.key, _ = keyOf(ob.term, keyPos)
				}
			} else if cmpGroupKey(&g, &keyArg{enc: ob.kenc, term: termKey(ob, keyPos)}, keyPos) != 0 {
				return &bucketError{off: o, reason: "object key differs from its key group"}
			}
			g.objs = append(g.objs, ob)
			return nil
		})
		if e != nil {
			return nil, objs, e
		}
		gs = append(gs, g)
		off += sz
	}
	return gs, objs, nil
}

// termKey returns the key of o's decoded term, or nil when o is not decoded.
func termKey(o object, keyPos int) etf.Term {
	if o.term == nil {
		return nil
	}
	k, _ := keyOf(o.term, keyPos)
	return k
}

// parseGroups parses a whole bucket body into key groups with every key
// decoded, and for bags every object too (Table.Check compares them); a
// set's objects are decoded on demand (object.decoded). Encodings alias
// body.
func parseGroups(kind Kind, keyPos int, body []byte) ([]group, *bucketError) {
	gs, e := parseRaw(kind, keyPos, body)
	if e != nil {
		return nil, e
	}
	for i := range gs {
		g := &gs[i]
		for j := range g.objs {
			if kind == Set {
				break
			}
			if _, err := g.objs[j].decoded(); err != nil {
				return nil, undecodable(0, err)
			}
		}
		if _, err := g.keyTerm(keyPos); err != nil {
			return nil, &bucketError{off: 0, reason: err.Error(), cause: err}
		}
	}
	return gs, nil
}

// lookupInBody returns the objects stored under key (decoded), decoding
// only those: other objects are validated and their keys compared through
// the encodings. With wantObjs false it only reports presence.
func lookupInBody(kind Kind, keyPos int, body []byte, key *keyArg, wantObjs bool) ([]etf.Term, bool, *bucketError) {
	var out []etf.Term
	found := false
	// match reports whether the object enc holds key. Only the key is
	// checked first (Raw.TupleElement validates it as a decode would): an
	// object that does not match is not returned, and the one that does
	// is checked whole, by its decoding or here.
	match := func(enc []byte, off int) (bool, *bucketError) {
		g := group{kenc: keySpan(enc, keyPos)}
		checked := g.kenc == nil
		if checked {
			// Compressed (it comes decoded, so g never needs its
			// objects) or malformed (reported).
			o, e := rawObject(enc, keyPos, off)
			if e != nil {
				return false, e
			}
			if g.kenc = o.kenc; o.kenc == nil {
				g.key, _ = keyOf(o.term, keyPos)
			}
		}
		if cmpGroupKey(&g, key, keyPos) != 0 {
			return false, nil
		}
		if !wantObjs && !checked {
			// Member: the object found is checked, though not decoded.
			if err := validateStored(enc); err != nil {
				return false, undecodable(off, err)
			}
		}
		return true, nil
	}
	if kind == Set {
		e := parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
			if found {
				return nil
			}
			ok, e := match(enc, off)
			if e != nil || !ok {
				return e
			}
			found = true
			if wantObjs {
				// A set's one object: the result slice and the
				// object can share an allocation.
				objs, err := encodings.DecodeOne(enc)
				var o etf.Term
				if err == nil {
					o = objs[0]
				}
				if _, e := objectKey(o, err, keyPos, off); e != nil {
					return e
				}
				out = objs
			}
			return nil
		})
		return out, found, e
	}
	off := 0
	for off < len(body) && !found {
		if len(body)-off < 4 {
			return nil, false, &bucketError{off: bucketHeaderSize + off, reason: "truncated key group size"}
		}
		sz := int(be.Uint32(body[off:]))
		if sz < 9 || sz > len(body)-off {
			return nil, false, &bucketError{off: bucketHeaderSize + off, reason: fmt.Sprintf("key group size %d out of range", sz)}
		}
		first := true
		e := parseObjects(body[off+4:off+sz], bucketHeaderSize+off+4, func(enc []byte, o int) *bucketError {
			if first {
				first = false
				ok, e := match(enc, o)
				if e != nil {
					return e
				}
				if !ok {
					return errSkipGroup
				}
				found = true
			} else if !wantObjs {
				return errSkipGroup
			}
			if wantObjs {
				t, _, e := decodeObject(enc, keyPos, o)
				if e != nil {
					return e
				}
				out = append(out, t)
			}
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

// findGroup returns the index of k's group in gs (sorted by CompareExact)
// or the index where it would be inserted.
func findGroup(gs []group, k *keyArg, keyPos int) (int, bool) {
	lo, hi := 0, len(gs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cmpGroupKey(&gs[m], k, keyPos) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(gs) && cmpGroupKey(&gs[lo], k, keyPos) == 0
}

// keepStored reports whether a set keeps its stored object old instead of
// o: as OTP's dets does when the two are the same term (=:=) in another
// encoding. Only a -0.0 against a 0.0 (equal in OTP 25) makes the choice
// show, so the terms are compared only when the bytes differ and one of
// them holds a -0.0 (or holds something the raw walk leaves to decoding).
func keepStored(old, o *object) bool {
	if len(old.enc) < 2 || len(o.enc) < 2 || bytes.Equal(old.enc, o.enc) {
		return false
	}
	// Where neither holds the bytes of a -0.0 the terms differ (a quick
	// test: the overwrite is a hot path); those bytes inside a binary only
	// cost the exact comparison.
	if !mayHoldNegZero(old.enc) && !mayHoldNegZero(o.enc) {
		return false
	}
	return sameObject(old, o)
}

// The encodings of -0.0: NEW_FLOAT_EXT (70) and its eight bytes, and the
// start of FLOAT_EXT (99) text.
var (
	negZeroNew  = []byte{70, 0x80, 0, 0, 0, 0, 0, 0, 0}
	negZeroText = []byte("c-0.")
)

// mayHoldNegZero reports whether enc has the bytes of a -0.0 anywhere.
func mayHoldNegZero(enc []byte) bool {
	return bytes.Contains(enc, negZeroNew) || bytes.Contains(enc, negZeroText)
}

// sameObject reports whether two stored objects are the same term (=:=).
func sameObject(a, b *object) bool {
	if bytes.Equal(a.enc, b.enc) {
		return true
	}
	if len(a.enc) > 1 && len(b.enc) > 1 {
		if c, ok := encodings.CompareBodies(a.enc[1:], b.enc[1:]); ok {
			return c == 0
		}
	}
	x, err1 := a.decoded()
	y, err2 := b.decoded()
	return err1 == nil && err2 == nil && etf.Equal(x, y)
}

// applyInsert adds o (with key k, which may be nil when o.kenc is set) to
// gs following kind's rules and returns the new groups with the change in
// keys and objects.
func applyInsert(kind Kind, gs []group, k etf.Term, o object) ([]group, int, int) {
	return applyInsertAt(kind, gs, k, o, 0)
}

// applyInsertAt is applyInsert; keyPos locates keys inside compressed
// stored objects (0 when the caller's objects are never compressed).
func applyInsertAt(kind Kind, gs []group, k etf.Term, o object, keyPos int) ([]group, int, int) {
	return applyInsertSlab(kind, gs, k, o, keyPos, nil)
}

// applyInsertSlab is applyInsertAt; a new key's first object goes into
// *slab when slab is not nil, instead of a slice of its own.
func applyInsertSlab(kind Kind, gs []group, k etf.Term, o object, keyPos int, slab *[]object) ([]group, int, int) {
	ka := keyArg{enc: o.kenc, term: k}
	i, ok := findGroup(gs, &ka, keyPos)
	if !ok {
		var objs []object
		if slab != nil {
			n := len(*slab)
			*slab = append(*slab, o)
			objs = (*slab)[n : n+1 : n+1]
		} else {
			objs = []object{o}
		}
		gs = slices.Insert(gs, i, group{key: k, kenc: o.kenc, objs: objs})
		return gs, 1, 1
	}
	g := &gs[i]
	switch kind {
	case Set:
		if len(g.objs) == 1 {
			if keepStored(&g.objs[0], &o) {
				return gs, 0, 0
			}
			g.objs[0] = o
		} else {
			g.objs = []object{o}
		}
		return gs, 0, 0
	case Bag:
		if j, ok := g.findSame(&o); ok {
			g.bagMoveToEnd(j, o) // an identical object moves to the end
			return gs, 0, 0
		}
		g.bagAppend(o)
		return gs, 0, 1
	}
	g.objs = append(g.objs, o)
	return gs, 0, 1
}
