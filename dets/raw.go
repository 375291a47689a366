package dets

import (
	"fmt"
	"iter"

	"github.com/godets/godets/etf"
)

// The raw calls hand out and take objects as their term_to_binary bytes
// (the version byte 131 first), the form in which the file stores them,
// so that a layer with its own Go types (kinds' typed handles, tools
// that copy or digest objects) builds no etf.Term it would only convert
// again. Every object they hand out has been checked as the term calls
// check it (it decodes, whole, to a tuple holding the key), and a damaged
// bucket gives the same *CorruptionError: the bytes are never garbage.
//
// They call the engine through rawKey, rawLookup, rawCheck and the scan's
// bucket reader, so that changes inside the engine touch few lines here.

// LookupRaw calls fn with the encoding of each object stored under key,
// oldest first, and returns fn's first error (nil when the key is absent).
// key is the encoding of the key term (etf.Encode's bytes; any valid
// encoding of an equal term finds the same objects).
//
// The bytes passed to fn are borrowed: they are valid only until fn
// returns and must not be changed; copy what is needed later. fn runs
// while the table is locked, so it must not call the table, and it should
// be short: the decoding of a few values, a copy.
func (t *Table) LookupRaw(key []byte, fn func(obj []byte) error) error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	if t.lay.tag == tagNative {
		return t.nativeLookupRaw(key, fn)
	}
	ka, hv, err := rawKey(key)
	if err != nil {
		return err
	}
	return t.rawLookup(&ka, hv, fn)
}

// rawKey checks a key encoding and returns it as a keyArg with its hash.
func rawKey(key []byte) (keyArg, uint64, error) {
	if !binaryEncoding(key) {
		if err := etf.Validate(key); err != nil {
			return keyArg{}, 0, fmt.Errorf("%w: key is not a term encoding: %w", ErrBadArgument, err)
		}
	}
	ka := keyArg{enc: key[1:]}
	if hv, ok := encodings.Phash2Body(ka.enc); ok && key[1] != compressedTag {
		return ka, uint64(hv), nil
	}
	k, err := decodeTerm(key)
	if err != nil { // unreachable after Validate; stay safe
		return keyArg{}, 0, fmt.Errorf("%w: key is not a term encoding: %w", ErrBadArgument, err)
	}
	if key[1] == compressedTag {
		ka.enc = nil // a compressed body is not comparable byte-wise
	}
	ka.term = k
	return ka, keyHash(k), nil
}

// binaryEncoding reports whether key is exactly <<131, BINARY_EXT, Len,
// Bytes>>, a valid encoding whatever its bytes: the commonest key, which
// then skips etf.Validate's general walk (a fourteenth of a typed
// lookup's instructions).
func binaryEncoding(key []byte) bool {
	const binary = 109 // BINARY_EXT
	return len(key) >= 6 && key[0] == 131 && key[1] == binary && uint64(len(key)) == 6+uint64(be.Uint32(key[2:]))
}

// rawLookup calls fn with each checked object under ka (t.mu held).
func (t *Table) rawLookup(ka *keyArg, hv uint64, fn func(obj []byte) error) error {
	slot := t.slotFor(hv)
	e, err := t.entry(slot)
	if err != nil || e.size == 0 {
		return err
	}
	body, err := t.readBucket(slot, e)
	if err != nil {
		return err
	}
	var fnErr error
	call := func(enc []byte, off int) *bucketError {
		if be := rawCheck(enc, t.keyPos, off); be != nil {
			return be
		}
		if fnErr = fn(enc[:len(enc):len(enc)]); fnErr != nil {
			return errSkipGroup
		}
		return nil
	}
	be := rawLookupInBody(t.kind, t.keyPos, body, ka, call)
	if fnErr != nil {
		return fnErr
	}
	if be != nil {
		return objectError(t.path, int64(e.ptr)+int64(be.off), slot, be)
	}
	return nil
}

// rawLookupInBody calls found with each object of body stored under key.
// Like lookupInBody it compares keys through their encodings and checks
// the other objects only as far as their keys; found checks its object.
func rawLookupInBody(kind Kind, keyPos int, body []byte, key *keyArg, found func(enc []byte, off int) *bucketError) *bucketError {
	match := func(enc []byte, off int) (bool, *bucketError) {
		g := group{kenc: keySpan(enc, keyPos)}
		if g.kenc == nil {
			// Compressed (decoded here) or malformed (reported).
			o, e := rawObject(enc, keyPos, off)
			if e != nil {
				return false, e
			}
			if g.kenc = o.kenc; o.kenc == nil {
				g.key, _ = keyOf(o.term, keyPos)
			}
		}
		return cmpGroupKey(&g, key, keyPos) == 0, nil
	}
	if kind == Set {
		done := false
		e := parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
			if done {
				return nil
			}
			ok, e := match(enc, off)
			if e != nil || !ok {
				return e
			}
			done = true
			return found(enc, off)
		})
		return skipToNil(e)
	}
	for off := 0; off < len(body); {
		if len(body)-off < 4 {
			return &bucketError{off: bucketHeaderSize + off, reason: "truncated key group size"}
		}
		sz := int(be.Uint32(body[off:]))
		if sz < 9 || sz > len(body)-off {
			return &bucketError{off: bucketHeaderSize + off, reason: fmt.Sprintf("key group size %d out of range", sz)}
		}
		first, hit := true, false
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
				hit = true
			}
			return found(enc, o)
		})
		if e != nil && e != errSkipGroup {
			return e
		}
		if hit {
			return skipToNil(e)
		}
		off += sz
	}
	return nil
}

func skipToNil(e *bucketError) *bucketError {
	if e == errSkipGroup {
		return nil
	}
	return e
}

// rawCheck checks one stored object as the term calls do when they decode
// it: it decodes, whole, and is a tuple with at least keyPos elements. The
// error is the one decoding gives, so a damaged object reads the same
// through either call.
func rawCheck(enc []byte, keyPos int, off int) *bucketError {
	if flatArity(enc) >= keyPos || etf.Validate(enc) == nil && holdsKey(enc, keyPos) {
		return nil
	}
	// Compressed (fine if it decodes to such a tuple), or damaged: the
	// error is the one decoding gives.
	if _, be := rawObject(enc, keyPos, off); be == nil {
		return nil
	} else if _, _, de := decodeObject(enc, keyPos, off); de != nil {
		return de
	} else {
		return be
	}
}

// flatArity returns N when enc is exactly <<131, SMALL_TUPLE_EXT, N,
// (BINARY_EXT Len Bytes)*N>> with N >= 1, the shape of nearly every
// stored object, and 0 for anything else. Such bytes are a valid
// encoding of a tuple of N binaries, so a check of this shape alone
// proves what rawCheck asks, at a fifth of etf.Validate's instructions.
func flatArity(enc []byte) int {
	const smallTuple, binary = 104, 109 // SMALL_TUPLE_EXT, BINARY_EXT
	if len(enc) < 3 || enc[0] != 131 || enc[1] != smallTuple {
		return 0
	}
	n, off, end := int(enc[2]), uint64(3), uint64(len(enc))
	for range n {
		if off+5 > end || enc[off] != binary {
			return 0
		}
		off += 5 + uint64(be.Uint32(enc[off+1:]))
	}
	if off != end {
		return 0 // short (a length past the end) or long
	}
	return n
}

// flatSetBucket reports whether the set's bucket body is a sequence of
// <<ObjSz, ETF>> records covering it exactly, each a flat tuple holding
// the key (flatArity): then every object passes rawCheck, and one pass
// without calls per object proved it. false says nothing: the general
// check runs and finds what is wrong, or that nothing is.
func flatSetBucket(body []byte, keyPos int) bool {
	for len(body) > 0 {
		if len(body) < 4 {
			return false
		}
		n := uint64(be.Uint32(body))
		if n < 5 || n > uint64(len(body)) || flatArity(body[4:n]) < keyPos {
			return false
		}
		body = body[n:]
	}
	return true
}

// holdsKey reports whether the valid encoding enc is a tuple with at least
// keyPos elements, from its header alone.
func holdsKey(enc []byte, keyPos int) bool {
	const smallTuple, largeTuple = 104, 105 // SMALL_TUPLE_EXT, LARGE_TUPLE_EXT
	switch {
	case len(enc) >= 3 && enc[1] == smallTuple:
		return int(enc[2]) >= keyPos
	case len(enc) >= 6 && enc[1] == largeTuple:
		return int64(be.Uint32(enc[2:])) >= int64(keyPos)
	}
	return false
}

// RawAll iterates over every object as its encoding, in the order and with
// the guarantees of All (the loop body may use the table; an error ends
// the iteration), without decoding anything: a traversal allocates a
// few buffers, reused from one traversal to the next, and nothing per
// object.
//
// The bytes yielded are borrowed, as a bbolt value is inside its
// transaction: they are valid only until the loop body returns (the next
// step of the iteration overwrites them) and must not be changed. Copy
// what must outlive the step; etf.Decode turns them into a term. They are
// the traversal's own copy, taken under the lock, so nothing the loop
// body or another goroutine does to the table (a write over the bucket,
// Close and its unmap) changes them during the step.
//
// RawAll is an iterator rather than a callback run under the lock: the
// loop body runs unlocked, so it may use the table and does not stall
// writers, break ends the traversal, and the call per object costs what
// a callback's would.
func (t *Table) RawAll() iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if t != nil {
			t.fixTraversal()
			defer t.unfixTraversal()
		}
		if t != nil && t.lay.tag == tagNative { // t.lay is fixed from the open on
			t.nativeRawAll(yield)
			return
		}
		st := scanPool.Get().(*scanState)
		st.raw = true
		var rs rawScan
		defer func() {
			st.raw = false
			clear(rs.gs)
			clear(rs.objs)
			st.release()
		}()
		err := t.scanStretches(st, func() error {
			for _, r := range st.refs {
				if err := t.rawBucket(st, &rs, r, yield); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && err != errStopped {
			yield(nil, err)
		}
	}
}

// rawScan is RawAll's reusable parse of a bag's bucket.
type rawScan struct {
	gs   []group
	objs []object
}

// errStopped reports that the loop body broke out of a traversal.
var errStopped = fmt.Errorf("dets: traversal stopped")

// rawBucket checks the whole bucket of r, then yields its objects; a bad
// bucket yields none of them, as All does.
func (t *Table) rawBucket(st *scanState, rs *rawScan, r scanRef, yield func([]byte, error) bool) error {
	body := st.body(r)
	var bErr *bucketError
	if st.kind == Set {
		if !flatSetBucket(body, st.keyPos) {
			bErr = parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
				return rawCheck(enc, st.keyPos, off)
			})
		}
		if bErr == nil {
			for len(body) > 0 {
				n := be.Uint32(body)
				if !yield(body[4:n:n], nil) {
					return errStopped
				}
				body = body[n:]
			}
			return nil
		}
	} else {
		rs.gs, rs.objs, bErr = parseRawInto(st.kind, st.keyPos, body, rs.gs, rs.objs)
		if bErr == nil {
			for i := range rs.gs {
				for j := range rs.gs[i].objs {
					enc := rs.gs[i].objs[j].enc
					if !yield(enc[:len(enc):len(enc)], nil) {
						return errStopped
					}
				}
			}
			return nil
		}
	}
	err := objectError(t.path, int64(r.ptr)+int64(bErr.off), r.slot, bErr)
	t.mu.Lock()
	t.fail(err)
	t.mu.Unlock()
	return err
}

// InsertRaw inserts one object given as its encoding, as Insert inserts
// the term it decodes to: obj must be a valid encoding of a tuple with at
// least KeyPos elements, else the error matches ErrBadObject and nothing
// is written. The bytes are stored as they are (etf.Encode's bytes are
// what Insert stores, so a caller that wants files identical to the term
// calls' encodes canonically) and are not kept after the call; obj must
// not change while it runs.
func (t *Table) InsertRaw(obj []byte) error {
	if err := t.begin(true); err != nil {
		return err
	}
	defer t.mu.Unlock()
	sc := getScratch()
	defer putScratch(sc)
	if t.lay.tag == tagNative {
		return t.nativeInsertRaw(sc, obj)
	}
	p, err := t.prepareRaw(obj)
	if err != nil {
		return err
	}
	sc.ps = append(sc.ps[:0], p)
	return t.fail(t.insertPrepared(sc, sc.ps))
}

// prepareRaw checks an encoded object and prepares it for insertion.
func (t *Table) prepareRaw(obj []byte) (prepared, error) {
	if err := etf.Validate(obj); err != nil {
		return prepared{}, fmt.Errorf("%w: object 0: %w", ErrBadObject, err)
	}
	o := object{enc: obj, kenc: keySpan(obj, t.keyPos)}
	var key etf.Term
	if o.kenc != nil {
		if hv, ok := encodings.Phash2Body(o.kenc); ok {
			return prepared{obj: o, hash: uint64(hv)}, nil
		}
		var err error
		if key, err = encodings.DecodeBody(o.kenc); err != nil {
			return prepared{}, fmt.Errorf("%w: object 0: %w", ErrBadObject, err)
		}
	} else {
		// Compressed, or not a tuple holding the key.
		term, err := decodeTerm(obj)
		var ok bool
		if err == nil {
			key, ok = keyOf(term, t.keyPos)
		}
		if !ok {
			return prepared{}, fmt.Errorf("%w: object 0 is not a tuple with at least %d elements", ErrBadObject, t.keyPos)
		}
		o.term = term
	}
	return prepared{key: key, obj: o, hash: keyHash(key)}, nil
}

// compressedTag follows the version byte of a compressed encoding
// (COMPRESSED_EXT), whose body cannot be hashed or compared as bytes.
const compressedTag = 80

// nativeLookupRaw is LookupRaw on a native table. The key hash covers the
// key's canonical encoding (docs/format-native.md §9), so the key is
// decoded and encoded again: any valid encoding of it finds its objects.
// parseNative verifies every object of the bucket, as rawCheck would.
func (t *Table) nativeLookupRaw(key []byte, fn func(obj []byte) error) error {
	var ka keyArg
	if err := etf.Validate(key); err == nil && canonicalKey(key) {
		ka.enc = key[1:] // the common key shapes: no decoding
	} else {
		k, err := rawKeyTerm(key)
		if err != nil {
			return err
		}
		if ka = t.keyArg(k); ka.enc == nil {
			return fmt.Errorf("%w: key cannot be encoded", ErrBadArgument)
		}
	}
	slot := t.slotFor(nativeKeyHash(ka.enc))
	e, err := t.entry(slot)
	if err != nil || e.size == 0 {
		return err
	}
	b, err := t.readBucket(slot, e)
	if err != nil {
		return err
	}
	nat := t.nat
	gs, objs, err := t.parseNative(b, e, nat.lgs, nat.lobjs)
	nat.lgs, nat.lobjs = gs, objs
	if err != nil {
		return err
	}
	i, found := findGroup(gs, &ka, t.keyPos)
	if !found {
		return nil
	}
	for _, o := range gs[i].objs {
		if err := fn(o.enc[:len(o.enc):len(o.enc)]); err != nil {
			return err
		}
	}
	return nil
}

// rawKeyTerm checks a key encoding and decodes it.
func rawKeyTerm(key []byte) (etf.Term, error) {
	if err := etf.Validate(key); err != nil {
		return nil, fmt.Errorf("%w: key is not a term encoding: %w", ErrBadArgument, err)
	}
	k, err := decodeTerm(key)
	if err != nil {
		return nil, fmt.Errorf("%w: key is not a term encoding: %w", ErrBadArgument, err)
	}
	return k, nil
}

// nativeInsertRaw is InsertRaw on a native table: the object is decoded
// and stored in its canonical encoding, as Insert stores it, since the
// native key hash and the stored-object checks rely on that form (§6.3).
func (t *Table) nativeInsertRaw(sc *opScratch, obj []byte) error {
	if err := etf.Validate(obj); err != nil {
		return fmt.Errorf("%w: object 0: %w", ErrBadObject, err)
	}
	term, err := decodeTerm(obj)
	if err != nil {
		return fmt.Errorf("%w: object 0: %w", ErrBadObject, err)
	}
	ps, err := t.prepareInto(sc, []etf.Term{term})
	if err != nil {
		return err
	}
	return t.fail(t.insertPrepared(sc, ps))
}

// canonicalKey reports whether the valid encoding enc is already in
// etf.Encode's form, for the common key shapes only (small integers,
// 32-bit integers, binaries); other keys are decoded and encoded again.
func canonicalKey(enc []byte) bool {
	const smallInt, integer, binary = 97, 98, 109 // SMALL_INTEGER_EXT, INTEGER_EXT, BINARY_EXT
	switch {
	case len(enc) == 3 && enc[1] == smallInt:
		return true
	case len(enc) == 6 && enc[1] == integer:
		v := int32(be.Uint32(enc[2:]))
		return v < 0 || v > 255
	case len(enc) >= 6 && enc[1] == binary:
		return uint64(len(enc)) == 6+uint64(be.Uint32(enc[2:]))
	}
	return false
}
