package dets

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/big"
	"slices"
	"sync"

	"github.com/godets/godets/etf"
)

// begin locks the table and checks that it can be used; write says whether
// the operation modifies it. A nil, zero or closed Table gives ErrClosed.
func (t *Table) begin(write bool) error {
	if t == nil {
		return ErrClosed
	}
	t.mu.Lock()
	switch {
	case !t.live:
		t.mu.Unlock()
		return ErrClosed
	case t.err != nil:
		err := t.err
		t.mu.Unlock()
		return err
	case write && t.readOnly:
		t.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrReadOnly, t.path)
	}
	return nil
}

// fail puts the table in error mode after a failure that may leave the
// file holding part of a change, or the state in memory not matching it:
// a failed write, fsync or truncation (t.writeFailed), or errInconsistent.
// Every later call then returns err, and Close does not save. Any other
// error (a corrupt or unreadable bucket, a bad argument, a full file) is
// only returned: it stops an operation between two complete steps (a
// bucket is written whole, and counted, before the next one is read), so
// file and memory agree, the table stays usable and Close saves it.
func (t *Table) fail(err error) error {
	if err != nil && t.err == nil && (t.writeFailed || errors.Is(err, errInconsistent)) {
		t.err = err
	}
	return err
}

// prepared is an object checked and encoded for insertion.
type prepared struct {
	key  etf.Term
	obj  object
	hash uint64
}

func (t *Table) prepare(objs []etf.Term) ([]prepared, error) {
	return t.prepareInto(nil, objs)
}

// prepareInto is prepare; with sc it reuses sc's buffers (the encodings go
// into sc.enc), so the result is valid until sc is put back.
func (t *Table) prepareInto(sc *opScratch, objs []etf.Term) ([]prepared, error) {
	var ps []prepared
	var buf []byte
	if sc != nil {
		ps = slices.Grow(sc.ps[:0], len(objs))[:len(objs)]
		sc.ps = ps
		buf = sc.enc[:0]
	} else {
		ps = make([]prepared, len(objs))
	}
	for i, o := range objs {
		k, ok := keyOf(o, t.keyPos)
		if !ok {
			return nil, fmt.Errorf("%w: object %d is not a tuple with at least %d elements", ErrBadObject, i, t.keyPos)
		}
		var enc []byte
		var err error
		if sc != nil {
			// Earlier encodings stay valid if buf moves: they keep the
			// old array.
			n := len(buf)
			if buf, err = etf.AppendEncode(buf, o); err == nil {
				enc = buf[n:len(buf):len(buf)]
			}
			sc.enc = buf
		} else {
			enc, err = encodeTerm(o)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %w", ErrBadObject, i, err)
		}
		kenc := keySpan(enc, t.keyPos)
		ps[i] = prepared{key: k, obj: object{term: o, enc: enc, kenc: kenc}, hash: t.preparedHash(k, kenc)}
	}
	return ps, nil
}

// preparedHash is hashKey for a key whose encoding kenc is at hand inside
// its object's: native hashes those bytes instead of encoding the key
// again. It uses none of t's buffers, so InitTable runs it without the
// lock.
func (t *Table) preparedHash(k etf.Term, kenc []byte) uint64 {
	if t.lay.tag != tagNative {
		return keyHash(k)
	}
	if kenc == nil {
		enc, err := etf.Encode(k)
		if err != nil {
			return 0 // prepare encoded the object, so its key encodes
		}
		kenc = enc[1:]
	}
	return nativeKeyHash(kenc)
}

// opScratch holds the reusable buffers of one operation (see scratchPool).
// Nothing in it outlives the operation.
type opScratch struct {
	ps         []prepared
	enc        []byte
	gs         []group
	objs, slab []object
	idx        []int
	slots      []uint64
	keep, move []group
	freed      []slotEntry
	grown      []slotEntry // growAt's new blocks, given back on failure
	fresh      writeBatch
	split      splitHashes // growAt's in-place key hashes
}

var scratchPool = sync.Pool{New: func() any { return new(opScratch) }}

// maxScratch bounds the buffers kept for reuse.
const maxScratch = 1 << 20

func getScratch() *opScratch { return scratchPool.Get().(*opScratch) }

// putScratch drops sc's references to terms and encodings and returns it.
func putScratch(sc *opScratch) {
	clear(sc.ps)
	clear(sc.gs)
	clear(sc.objs)
	clear(sc.slab)
	clear(sc.keep)
	clear(sc.move)
	sc.ps, sc.gs, sc.objs, sc.slab, sc.keep, sc.move = sc.ps[:0], sc.gs[:0], sc.objs[:0], sc.slab[:0], sc.keep[:0], sc.move[:0]
	if cap(sc.enc) > maxScratch || cap(sc.fresh.buf) > maxScratch ||
		cap(sc.gs) > maxScratch/64 || cap(sc.ps) > maxScratch/64 {
		return // let a huge one go
	}
	scratchPool.Put(sc)
}

// insertChunk bounds how many objects go in before the table may grow, so
// that one huge Insert does not pile objects into few slots.
const insertChunk = 256

// Insert adds objects (tuples with at least KeyPos elements). Set: an
// object replaces the one with the same (=:=) key. Bag: an object identical
// to a stored one moves that one to the end. DuplicateBag: always appends.
// Objects of one call are applied in order. All objects are checked before
// anything is written.
func (t *Table) Insert(objs ...etf.Term) error {
	if err := t.begin(true); err != nil {
		return err
	}
	defer t.mu.Unlock()
	sc := getScratch()
	defer putScratch(sc)
	ps, err := t.prepareInto(sc, objs)
	if err != nil {
		return err
	}
	return t.fail(t.insertPrepared(sc, ps))
}

func (t *Table) insertPrepared(sc *opScratch, ps []prepared) error {
	if err := t.beginWrite(); err != nil {
		return err
	}
	for len(ps) > 0 {
		n := min(len(ps), insertChunk)
		if err := t.insertBatch(sc, ps[:n]); err != nil {
			return err
		}
		ps = ps[n:]
		if err := t.maybeGrow(); err != nil {
			return err
		}
	}
	return t.afterWrite()
}

// insertBatch applies ps slot by slot, writing each touched bucket once.
func (t *Table) insertBatch(sc *opScratch, ps []prepared) error {
	idx := slices.Grow(sc.idx[:0], len(ps))[:len(ps)]
	slots := slices.Grow(sc.slots[:0], len(ps))[:len(ps)]
	sc.idx, sc.slots = idx, slots
	if len(ps) == 1 {
		// The common single insert needs no sorting.
		idx[0], slots[0] = 0, t.slotFor(ps[0].hash)
	} else {
		for i := range ps {
			idx[i] = i
			slots[i] = t.slotFor(ps[i].hash)
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(slots[a], slots[b]) })
	}
	for start := 0; start < len(idx); {
		slot := slots[idx[start]]
		end := start
		for end < len(idx) && slots[idx[end]] == slot {
			end++
		}
		gs, e, err := t.readRawInto(slot, sc)
		if err != nil {
			return err
		}
		var keys, objs int
		for _, i := range idx[start:end] {
			var dk, do int
			gs, dk, do = applyInsertSlab(t.kind, gs, ps[i].key, ps[i].obj, t.keyPos, &sc.slab)
			keys += dk
			objs += do
		}
		sc.gs = gs
		// Counts change only once the bucket is written, so a full file
		// (ErrFileTooLarge) leaves them exact.
		if err := t.writeSlot(slot, e, gs); err != nil {
			return err
		}
		t.h.noKeys += uint64(keys)
		t.h.noObjects += uint64(objs)
		start = end
	}
	return nil
}

// afterWrite rewrites the (still not closed) header when the key count has
// crossed a multiple of 256 since the last header write, as OTP does, so
// that a repair can size the new table from it. A native table instead
// checkpoints when its epoch is over budget (nativeAfterWrite).
func (t *Table) afterWrite() error {
	if t.lay.tag == tagNative {
		return t.nativeAfterWrite()
	}
	if t.h.noKeys/256 == t.hdrKeys/256 {
		return nil
	}
	t.hdrKeys = t.h.noKeys
	return t.writeHeader(false, 0)
}

// InsertNew inserts objs only if none of their keys is in the table (for
// every kind), and reports whether it did.
func (t *Table) InsertNew(objs ...etf.Term) (bool, error) {
	if err := t.begin(true); err != nil {
		return false, err
	}
	defer t.mu.Unlock()
	sc := getScratch()
	defer putScratch(sc)
	ps, err := t.prepareInto(sc, objs)
	if err != nil {
		return false, err
	}
	if err := t.beginWrite(); err != nil {
		return false, t.fail(err)
	}
	for _, p := range ps {
		_, found, err := t.lookup(p.key, p.hash, false)
		if err != nil {
			return false, t.fail(err)
		}
		if found {
			return false, nil
		}
	}
	return true, t.fail(t.insertPrepared(sc, ps))
}

// maxKeptKey bounds the key encoding buffer a table keeps between calls.
const maxKeptKey = 4 << 10

// keyArg encodes key into t's buffer (valid until the next call; t.mu held).
func (t *Table) keyArg(key etf.Term) keyArg {
	ka := keyArg{term: key}
	if enc, err := etf.AppendEncode(t.kbuf[:0], key); err == nil {
		if cap(enc) <= maxKeptKey {
			t.kbuf = enc
		}
		ka.enc = enc[1:]
	}
	return ka
}

// lookup finds key's objects (decoded when wantObjs).
func (t *Table) lookup(key etf.Term, hv uint64, wantObjs bool) ([]etf.Term, bool, error) {
	slot := t.slotFor(hv)
	e, err := t.entry(slot)
	if err != nil || e.size == 0 {
		return nil, false, err
	}
	// The key is encoded here, between the loads of the slot entry and of
	// the bucket, where it can run while the entry is still on its way.
	ka := t.keyArg(key)
	body, err := t.readBucket(slot, e)
	if err != nil {
		return nil, false, err
	}
	var objs []etf.Term
	var found bool
	var be *bucketError
	switch t.lay.tag { // lookupBody, without its call
	case tagNative:
		return t.nativeLookup(body, e, &ka, wantObjs)
	default:
		objs, found, be = lookupInBody(t.kind, t.keyPos, body, &ka, wantObjs)
	}
	if be != nil {
		return nil, false, objectError(t.path, e.ptr+int64(be.off), slot, be)
	}
	return objs, found, nil
}

// Lookup returns the objects stored under key, oldest first (nil if none).
func (t *Table) Lookup(key etf.Term) ([]etf.Term, error) {
	if err := t.begin(false); err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	objs, _, err := t.lookup(key, t.hashKey(key), true)
	return objs, err
}

// Member reports whether key has objects.
func (t *Table) Member(key etf.Term) (bool, error) {
	if err := t.begin(false); err != nil {
		return false, err
	}
	defer t.mu.Unlock()
	_, found, err := t.lookup(key, t.hashKey(key), false)
	return found, err
}

// modifySlot reads key's bucket, lets fn edit the group of key (i is its
// index, found whether it exists) and writes the result when fn reports a
// change.
func (t *Table) modifyKey(key etf.Term, fn func(gs []group, i int, found bool) ([]group, delta, error)) error {
	// Like OTP, any write request marks the file dirty, even one that
	// changes nothing.
	if err := t.beginWrite(); err != nil {
		return err
	}
	slot := t.slotFor(t.hashKey(key))
	e, err := t.entry(slot)
	if err != nil || e.size == 0 {
		return err
	}
	gs, e, err := t.readRaw(slot)
	if err != nil {
		return err
	}
	ka := t.keyArg(key)
	i, found := findGroup(gs, &ka, t.keyPos)
	gs, d, err := fn(gs, i, found)
	if err != nil || !d.changed {
		return err
	}
	if err := t.writeSlot(slot, e, gs); err != nil {
		return err
	}
	t.h.noKeys = uint64(int64(t.h.noKeys) + int64(d.keys))
	t.h.noObjects = uint64(int64(t.h.noObjects) + int64(d.objs))
	return t.afterWrite()
}

// delta is a change made by a modifyKey callback.
type delta struct {
	changed    bool
	keys, objs int
}

// Delete removes every object stored under key.
func (t *Table) Delete(key etf.Term) error {
	if err := t.begin(true); err != nil {
		return err
	}
	defer t.mu.Unlock()
	return t.fail(t.modifyKey(key, func(gs []group, i int, found bool) ([]group, delta, error) {
		if !found {
			return gs, delta{}, nil
		}
		d := delta{true, -1, -len(gs[i].objs)}
		return slices.Delete(gs, i, i+1), d, nil
	}))
}

// DeleteObject removes obj: for a set only if the stored object is
// identical; for a bag the object; for a duplicate bag every copy of it.
func (t *Table) DeleteObject(obj etf.Term) error {
	if err := t.begin(true); err != nil {
		return err
	}
	defer t.mu.Unlock()
	key, ok := keyOf(obj, t.keyPos)
	if !ok {
		return fmt.Errorf("%w: not a tuple with at least %d elements", ErrBadObject, t.keyPos)
	}
	target := object{term: obj}
	return t.fail(t.modifyKey(key, func(gs []group, i int, found bool) ([]group, delta, error) {
		if !found {
			return gs, delta{}, nil
		}
		g := &gs[i]
		kept := g.objs[:0:0]
		for j := range g.objs {
			o, err := g.objs[j].decoded()
			if err != nil {
				return gs, delta{}, err
			}
			if !etf.Equal(o, target.term) {
				kept = append(kept, g.objs[j])
			}
		}
		removed := len(g.objs) - len(kept)
		if removed == 0 {
			return gs, delta{}, nil
		}
		if len(kept) == 0 {
			return slices.Delete(gs, i, i+1), delta{true, -1, -removed}, nil
		}
		g.objs = kept
		return gs, delta{true, 0, -removed}, nil
	}))
}

// DeleteAllObjects empties the table: the file is truncated and laid out
// afresh with the table's minimum slot count (OTP delete_all_objects).
func (t *Table) DeleteAllObjects() error {
	if err := t.begin(true); err != nil {
		return err
	}
	defer t.mu.Unlock()
	if t.lay.tag == tagNative {
		if err := t.beginWrite(); err != nil {
			return t.fail(err)
		}
		return t.fail(t.nativeRebuild(t.h.minSlots, func(func(bulkObject) error) error { return nil }))
	}
	// Clear the closed flag (and fsync) first: otherwise a crash could
	// keep the old "closed properly" header over the new layout.
	if err := t.beginWrite(); err != nil {
		return t.fail(err)
	}
	return t.fail(t.initFile(t.h.minSlots, t.h.maxSlots))
}

// UpdateCounter adds incr to the integer at position pos (1-based; 0 means
// KeyPos+1) of the object stored under key, and returns the new value (an
// etf.Int, or an *etf.BigInt when it leaves the int64 range). Sets only.
func (t *Table) UpdateCounter(key etf.Term, pos int, incr int64) (etf.Term, error) {
	return t.UpdateCounterIf(key, pos, incr, nil)
}

// UpdateCounterIf is UpdateCounter with a condition on the result: accept
// sees the new value before anything is written, under the table's lock,
// and an error from it leaves the object as it was and is returned as it
// is. A layer with a narrower integer type (kinds' typed handles) refuses
// a result it could not read back this way, with no window in which the
// file holds it. accept must not use the table; nil accepts every result.
func (t *Table) UpdateCounterIf(key etf.Term, pos int, incr int64, accept func(result etf.Term) error) (etf.Term, error) {
	if err := t.begin(true); err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	if t.kind != Set {
		return nil, fmt.Errorf("%w: update_counter needs a set, %s is a %s", ErrBadArgument, t.path, t.kind)
	}
	if pos == 0 {
		pos = t.keyPos + 1
	}
	var result etf.Term
	var refused error
	err := t.modifyKey(key, func(gs []group, i int, found bool) ([]group, delta, error) {
		if !found {
			return gs, delta{}, nil
		}
		o, err := gs[i].objs[0].decoded()
		if err != nil {
			return gs, delta{}, err
		}
		tup, _ := o.(etf.Tuple)
		if pos < 1 || pos > len(tup) || pos == t.keyPos {
			return gs, delta{}, fmt.Errorf("%w: position %d of a %d-tuple with key position %d", ErrBadArgument, pos, len(tup), t.keyPos)
		}
		switch v := tup[pos-1].(type) {
		case etf.Int:
			s := int64(v) + incr
			if (incr > 0 && s < int64(v)) || (incr < 0 && s > int64(v)) {
				result = etf.NewBigInt(new(big.Int).Add(big.NewInt(int64(v)), big.NewInt(incr)))
			} else {
				result = etf.Int(s)
			}
		case *etf.BigInt:
			result = etf.NewBigInt(new(big.Int).Add(v.Big(), big.NewInt(incr)))
		default:
			return gs, delta{}, fmt.Errorf("%w: element %d is not an integer", ErrBadArgument, pos)
		}
		if accept != nil {
			if err := accept(result); err != nil {
				refused = err
				return gs, delta{}, err
			}
		}
		nt := slices.Clone(tup)
		nt[pos-1] = result
		enc, err := encodeTerm(nt)
		if err != nil {
			return gs, delta{}, fmt.Errorf("%w: %w", ErrBadObject, err)
		}
		gs[i].objs = []object{{term: nt, enc: enc, kenc: keySpan(enc, t.keyPos)}}
		return gs, delta{changed: true}, nil
	})
	if err == nil && result == nil {
		return nil, fmt.Errorf("%w: update_counter: key %v", ErrNoSuchKey, key)
	}
	if refused != nil || errors.Is(err, ErrBadArgument) || errors.Is(err, ErrBadObject) {
		return nil, err
	}
	return result, t.fail(err)
}

// slotObjects returns the decoded objects of slot, or ok=false past Next.
func (t *Table) slotObjects(slot uint64) ([]group, bool, error) {
	if err := t.begin(false); err != nil {
		return nil, false, err
	}
	defer t.mu.Unlock()
	if slot >= t.h.next {
		return nil, false, nil
	}
	gs, _, err := t.readGroups(slot)
	return gs, true, err
}

// Keys iterates over the keys in First/Next order; each key that stays in
// the table throughout is seen once, as with All.
func (t *Table) Keys() iter.Seq2[etf.Term, error] {
	return func(yield func(etf.Term, error) bool) {
		if t != nil {
			t.fixTraversal()
			defer t.unfixTraversal()
		}
		for slot := uint64(0); ; slot++ {
			gs, ok, err := t.slotObjects(slot)
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				return
			}
			for _, g := range gs {
				if !yield(g.key, nil) {
					return
				}
			}
		}
	}
}

// First returns the first key in slot order (OTP dets:first/1); ok is false
// for an empty table.
func (t *Table) First() (key etf.Term, ok bool, err error) {
	return t.nextFrom(0, nil)
}

// Next returns the key after key in slot order (OTP dets:next/2): the next
// key of the same bucket in key order, else the first key of the next
// non-empty slot. key need not be in the table. ok is false at the end.
//
// A First/Next walk does not fix the table, as in OTP without
// safe_fixtable: inserts between the calls (from any goroutine) may split
// slots, and the walk then skips or repeats keys. Keys and All fix the
// table while their loop runs and see each key that stays exactly once.
func (t *Table) Next(key etf.Term) (next etf.Term, ok bool, err error) {
	if err := t.begin(false); err != nil {
		return nil, false, err
	}
	slot := t.slotFor(t.hashKey(key))
	t.mu.Unlock()
	return t.nextFrom(slot, key)
}

func (t *Table) nextFrom(slot uint64, after etf.Term) (etf.Term, bool, error) {
	for ; ; slot++ {
		gs, ok, err := t.slotObjects(slot)
		if err != nil || !ok {
			return nil, false, err
		}
		for _, g := range gs {
			if after == nil || etf.CompareExact(g.key, after) > 0 {
				return g.key, true, nil
			}
		}
		after = nil
	}
}

// Slots reports {Min, Next, Max} slot counts (OTP info no_slots).
type Slots struct{ Min, Next, Max int }

// slots reports the table's slot counts. A native table's ceiling (2^32)
// does not fit a 32-bit int: there Max is math.MaxInt, "no ceiling this
// platform can count to", rather than a truncated 0.
func (t *Table) slots() Slots {
	clamp := func(n uint64) int {
		if n > math.MaxInt {
			return math.MaxInt
		}
		return int(n)
	}
	return Slots{clamp(t.h.minSlots), clamp(t.h.next), clamp(t.h.maxSlots)}
}

// Info describes an open table (OTP dets:info/1,2).
type Info struct {
	Path      string
	Kind      Kind
	KeyPos    int
	Format    Format
	Size      int // number of objects (OTP size / no_objects)
	NoKeys    int
	NoSlots   Slots
	FileSize  int64 // current file length in bytes
	ReadOnly  bool
	Clean     bool   // the file is currently marked closed properly
	Hash      string // "phash2"
	ByteLimit int64  // otp9's file size limit
	// Native is the native format's state (nil for otp9); its fallback
	// meta fields are filled by ReadNativeInfo only.
	Native *NativeInfo
}

// Info returns the table's description.
func (t *Table) Info() (Info, error) {
	if err := t.begin(false); err != nil {
		return Info{}, err
	}
	defer t.mu.Unlock()
	size := t.size
	if t.dirty {
		size = t.fileEnd
	}
	var ni *NativeInfo
	if t.nat != nil {
		ni = t.nativeInfo()
	}
	return Info{
		Native: ni,
		Path:   t.path, Kind: t.kind, KeyPos: t.keyPos, Format: t.lay.format(),
		Size: int(t.h.noObjects), NoKeys: int(t.h.noKeys),
		NoSlots:  t.slots(),
		FileSize: size, ReadOnly: t.readOnly, Clean: !t.dirty, Hash: t.lay.hashName(),
		ByteLimit: t.lay.byteLimit(),
	}, nil
}

// Sync makes the file a properly closed file on stable storage (free lists,
// trailer and closed header written, fsynced). The next change marks it not
// closed again. It is a no-op when nothing changed since the last save, and
// on a read-only table.
func (t *Table) Sync() error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	if !t.dirty || t.readOnly {
		return nil
	}
	return t.fail(t.save(true))
}

// Close saves the table as Sync does, but without the final fsync of the
// closed header (OTP's close does not fsync either): every object is on
// disk before the header says "closed properly" (unless Durability is
// LikeOTP), and after a power loss the file may need a repair that finds
// them all. Call Sync before Close to make the clean state itself durable.
// Closing a closed (or zero, or nil) Table returns nil; every other method
// of a closed Table returns ErrClosed.
//
// Close fails only when the file may hold unwritten state. Failures are
// classified where they happen (see fail):
//
//   - A failed write, fsync or truncation, in any writing method (Insert,
//     InsertNew, Delete, DeleteObject, DeleteAllObjects, UpdateCounter,
//     InitTable, Sync) or in Close's own save, and an error that leaves
//     the state in memory unlike the file (errInconsistent: a failed slot
//     split). The table stays in error mode: Close writes nothing, so the
//     file keeps its "not closed" flag and needs a repair, and returns
//     that error.
//   - Everything else is only returned by the call that met it: corrupt or
//     unreadable bytes found by a read (Lookup, Member, First, Next, Keys,
//     All, Check) or by a writing method (a damaged bucket it was about to
//     rewrite; what it wrote before is complete), a vanished page of the
//     map (the read falls back to pread), bad arguments, a full file.
//     File and memory still agree, so Close saves a changed read-write
//     table normally.
//
// A read-only table has nothing to save: its Close only releases the file
// and the map, and returns nil.
func (t *Table) Close() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.live {
		return nil
	}
	t.live = false
	err := t.err
	if err == nil && t.dirty && !t.readOnly {
		err = t.save(false)
	}
	t.unmapFile()
	if cerr := t.f.Close(); err == nil && !t.readOnly {
		err = cerr
	}
	// Only now may another handle of this process write the file.
	t.reg.release()
	t.segCache, t.rbuf, t.wbuf, t.kbuf = nil, nil, nil, nil
	return err
}

// readRaw reads the bucket of slot into groups without decoding objects
// (see parseRaw). The groups alias t.rbuf: they are valid until the next
// bucket read.
func (t *Table) readRaw(slot uint64) ([]group, slotEntry, error) {
	return t.readRawInto(slot, nil)
}

// readRawInto is readRaw; with sc the groups reuse sc's buffers.
func (t *Table) readRawInto(slot uint64, sc *opScratch) ([]group, slotEntry, error) {
	e, err := t.entry(slot)
	if err != nil || e.size == 0 {
		if sc != nil {
			return sc.gs[:0], e, err
		}
		return nil, e, err
	}
	body, err := t.readBucket(slot, e)
	if err != nil {
		return nil, e, err
	}
	var gs []group
	var be *bucketError
	var objs []object
	if sc != nil {
		gs, objs = sc.gs, sc.objs
	}
	switch t.lay.tag { // parseBucket, without its call
	case tagNative:
		var err error
		if gs, objs, err = t.parseNative(body, e, gs, objs); err != nil {
			return nil, e, err
		}
	default:
		gs, objs, be = parseRawInto(t.kind, t.keyPos, body, gs, objs)
	}
	if sc != nil {
		sc.gs, sc.objs = gs, objs
	}
	if be != nil {
		return nil, e, objectError(t.path, e.ptr+int64(be.off), slot, be)
	}
	return gs, e, nil
}
