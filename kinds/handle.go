package kinds

import (
	"fmt"
	"iter"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// base is the state and the term plumbing that all three handles share. The
// object layout is fixed: {Key, Value} with keypos 1, what Erlang and Gleam
// programs write.
type base[K, V any] struct {
	t  *dets.Table
	kc Codec[K]
	vc Codec[V]
	// strings: K and V are string and both codecs read binaries as
	// strings (binString): directPair reads both with one copy.
	strings bool
}

// objectArity is the size of every object a typed handle reads or writes.
const objectArity = 2

func newBase[K, V any](t *dets.Table, want dets.Kind, kc Codec[K], vc Codec[V]) (base[K, V], error) {
	if t == nil {
		return base[K, V]{}, fmt.Errorf("%w: nil table", ErrTableMismatch)
	}
	if !kc.valid() || !vc.valid() {
		return base[K, V]{}, fmt.Errorf("%w: key or value codec lacks Encode or Decode", ErrTableMismatch)
	}
	if err := checkTable(t, want); err != nil {
		return base[K, V]{}, err
	}
	kc, vc = kc.trusted(), vc.trusted()
	_, kStr := any(kc).(Codec[string])
	_, vStr := any(vc).(Codec[string])
	return base[K, V]{t: t, kc: kc, vc: vc, strings: kStr && vStr && kc.binString && vc.binString}, nil
}

func (b *base[K, V]) key(k K) (etf.Term, error) {
	t, err := b.kc.encodeBorrowed(k)
	if err != nil {
		return nil, within("key", err)
	}
	return t, nil
}

func (b *base[K, V]) object(k K, v V) (etf.Term, error) {
	kt, err := b.kc.encodeBorrowed(k)
	if err != nil {
		return nil, within("key", err)
	}
	vt, err := b.vc.encodeBorrowed(v)
	if err != nil {
		return nil, within("value", err)
	}
	return etf.Tuple{kt, vt}, nil
}

// value decodes the value of one stored object.
func (b *base[K, V]) value(obj etf.Term) (V, error) {
	tup, ok := obj.(etf.Tuple)
	if !ok || len(tup) != objectArity {
		var zero V
		return zero, &DecodeError{Path: "object", Expected: "tuple of arity 2", Got: describe(obj)}
	}
	v, err := b.vc.decodeOwned(tup[1])
	if err != nil {
		return v, within("value", err)
	}
	return v, nil
}

// decodeValue decodes the value of one stored object given as its bytes,
// directly if it can.
func (b *base[K, V]) decodeValue(obj []byte) (V, error) {
	if v, ok := b.directValue(obj); ok {
		return v, nil
	}
	t, err := termOf(obj)
	if err != nil {
		var zero V
		return zero, err
	}
	return b.value(t)
}

// decodePair decodes the key and value of one stored object given as its
// bytes, directly if it can.
func (b *base[K, V]) decodePair(obj []byte, a *arena) (K, V, error) {
	if k, v, ok := b.directPair(obj, a); ok {
		return k, v, nil
	}
	t, err := termOf(obj)
	if err != nil {
		var (
			zk K
			zv V
		)
		return zk, zv, err
	}
	return b.pair(t)
}

// pair decodes the key and value of one stored object.
func (b *base[K, V]) pair(obj etf.Term) (K, V, error) {
	var (
		zk K
		zv V
	)
	tup, ok := obj.(etf.Tuple)
	if !ok || len(tup) != objectArity {
		return zk, zv, &DecodeError{Path: "object", Expected: "tuple of arity 2", Got: describe(obj)}
	}
	k, err := b.kc.decodeOwned(tup[0])
	if err != nil {
		return zk, zv, within("key", err)
	}
	v, err := b.vc.decodeOwned(tup[1])
	if err != nil {
		return zk, zv, within("value", err)
	}
	return k, v, nil
}

// insert writes {k, v} through the direct path when both codecs have it
// (InsertRaw stores the bytes Insert would), else through terms.
func (b *base[K, V]) insert(k K, v V) error {
	bp := getBuf()
	buf, ok := b.directObject((*bp)[:0], k, v)
	if ok {
		err := b.t.InsertRaw(buf)
		putBuf(bp, buf)
		return err
	}
	putBuf(bp, buf)
	obj, err := b.object(k, v)
	if err != nil {
		return err
	}
	return b.t.Insert(obj)
}

func (b *base[K, V]) insertNew(k K, v V) (bool, error) {
	obj, err := b.object(k, v)
	if err != nil {
		return false, err
	}
	return b.t.InsertNew(obj)
}

func (b *base[K, V]) delete(k K) error {
	kt, err := b.key(k)
	if err != nil {
		return err
	}
	return b.t.Delete(kt)
}

func (b *base[K, V]) deleteObject(k K, v V) error {
	obj, err := b.object(k, v)
	if err != nil {
		return err
	}
	return b.t.DeleteObject(obj)
}

func (b *base[K, V]) member(k K) (bool, error) {
	kt, err := b.key(k)
	if err != nil {
		return false, err
	}
	return b.t.Member(kt)
}

// lookupRaw returns the stored objects for k.
func (b *base[K, V]) lookupRaw(k K) ([]etf.Term, error) {
	kt, err := b.key(k)
	if err != nil {
		return nil, err
	}
	return b.t.Lookup(kt)
}

func (b *base[K, V]) lookupAll(k K) ([]V, error) {
	var out []V
	direct, err := b.lookupDirect(k, func(obj []byte) error {
		v, err := b.decodeValue(obj)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	if direct {
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	objs, err := b.lookupRaw(k)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	out = make([]V, len(objs))
	for i, o := range objs {
		v, err := b.value(o)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// errpNil is All's panic for a nil error pointer: such a loop could never
// report a storage or decode error, so it is refused when All is called,
// before anything is read.
const errpNil = "kinds: All needs a non-nil *error to report errors through; use Rows to iterate without one"

// all traverses the table, stopping at the first storage or decode error,
// which it stores in *errp. It clears *errp when the traversal starts.
func (b *base[K, V]) all(errp *error) iter.Seq2[K, V] {
	if errp == nil {
		panic(errpNil)
	}
	return func(yield func(K, V) bool) {
		*errp = nil
		var a arena
		for obj, err := range b.t.RawAll() {
			if err != nil {
				*errp = err
				return
			}
			k, v, err := b.decodePair(obj, &a)
			if err != nil {
				*errp = err
				return
			}
			if !yield(k, v) {
				return
			}
		}
	}
}
