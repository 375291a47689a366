package kinds

import (
	"encoding/binary"

	"github.com/godets/godets/etf"
)

// The handles' direct path (see direct.go): objects go to and come from
// the engine as bytes (dets.Table.LookupRaw, RawAll, InsertRaw). Codec
// code never runs under the table's lock: a lookup copies the objects it
// finds into a pooled buffer and decodes them after LookupRaw returns.

// objectHead is the start of every object a handle writes: the version
// byte and SMALL_TUPLE_EXT of arity 2.
var objectHead = [...]byte{tagVersion, tagSmallTuple, objectArity}

// directKey encodes k into buf (a whole encoding, with the version byte);
// ok false: the key codec has no direct path for it.
func (b *base[K, V]) directKey(buf []byte, k K) ([]byte, bool) {
	if b.kc.appendRaw == nil {
		return buf, false
	}
	return b.kc.appendRaw(append(buf, tagVersion), k)
}

// directObject encodes {k, v} into buf.
func (b *base[K, V]) directObject(buf []byte, k K, v V) ([]byte, bool) {
	if b.kc.appendRaw == nil || b.vc.appendRaw == nil {
		return buf, false
	}
	buf, ok := b.kc.appendRaw(append(buf, objectHead[:]...), k)
	if !ok {
		return buf, false
	}
	return b.vc.appendRaw(buf, v)
}

// directValue decodes the value of the stored object obj; ok false: take
// the term path. The key is not decoded, only skipped.
func (b *base[K, V]) directValue(obj []byte) (V, bool) {
	var zero V
	if b.vc.readRaw == nil || len(obj) < 3 || [3]byte(obj) != objectHead {
		return zero, false
	}
	s, ok := keyEnd(obj)
	if !ok {
		return zero, false
	}
	v, n, ok := b.vc.readRaw(obj[s:], nil)
	if !ok || s+n != len(obj) {
		return zero, false
	}
	return v, true
}

// keyEnd returns where the second element of the stored pair obj starts.
// The common key encodings are skipped here, by their headers (a lookup
// spent a tenth of its time in the general skip); the rest go through
// etf.Raw.TupleElement. The value's reader checks that it ends obj.
func keyEnd(obj []byte) (int, bool) {
	if n, ok := flatLen(obj[3:]); ok {
		return 3 + n, true
	}
	var raw etf.Raw
	s, e, ok := raw.TupleElement(obj, 2)
	return s, ok && e == len(obj)
}

// flatLen is the length of the BINARY_EXT, SMALL_INTEGER_EXT or
// INTEGER_EXT at the front of b; ok false for anything else, or when b is
// too short to hold it.
func flatLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[0] {
	case tagBinary:
		if len(b) >= 5 {
			if n := uint64(binary.BigEndian.Uint32(b[1:])); n <= uint64(len(b)-5) {
				return 5 + int(n), true
			}
		}
	case tagSmallInteger:
		return 2, true
	case tagInteger:
		if len(b) >= 5 {
			return 5, true
		}
	}
	return 0, false
}

// directPair decodes the key and value of the stored object obj, their
// bytes into a.
func (b *base[K, V]) directPair(obj []byte, a *arena) (K, V, bool) {
	var (
		zk K
		zv V
	)
	if b.kc.readRaw == nil || b.vc.readRaw == nil || len(obj) < 3 || [3]byte(obj) != objectHead {
		return zk, zv, false
	}
	if b.strings {
		if k, v, ok := directStrings(obj, a); ok {
			// K and V are string (b.strings says so).
			return castString[K](k), castString[V](v), true
		}
	}
	k, kn, ok := b.kc.readRaw(obj[3:], a)
	if !ok {
		return zk, zv, false
	}
	v, vn, ok := b.vc.readRaw(obj[3+kn:], a)
	if !ok || 3+kn+vn != len(obj) {
		return zk, zv, false
	}
	return k, v, true
}

// directStrings reads the pair {Binary, Binary} that obj (objectHead
// first) holds as two strings, copying the key's bytes, the value's
// header and bytes into a at once: the calls through the codecs' func
// values and the arena's second copy were a fifth of a typed traversal's
// instructions. ok false: another shape, left to the codecs.
func directStrings(obj []byte, a *arena) (string, string, bool) {
	if len(obj) < 13 || obj[3] != tagBinary {
		return "", "", false
	}
	kl := uint64(binary.BigEndian.Uint32(obj[4:]))
	if kl > uint64(len(obj)-13) || obj[8+kl] != tagBinary {
		return "", "", false
	}
	vl := uint64(binary.BigEndian.Uint32(obj[9+kl:]))
	if 13+kl+vl != uint64(len(obj)) {
		return "", "", false
	}
	if kl == 0 || vl == 0 {
		return a.str(obj[8 : 8+kl]), a.str(obj[13+kl:]), true
	}
	data := a.bytes(obj[8:]) // one copy, never written again: key and value are parts of it
	return stringView(data[:kl]), stringView(data[kl+5 : kl+5+vl]), true
}

// termOf decodes an object that dets handed out (so it decodes) for the
// term path.
func termOf(obj []byte) (etf.Term, error) {
	t, err := etf.Decode(obj)
	if err != nil {
		return nil, &DecodeError{Path: "object", Expected: "a term", Got: "bytes that do not decode", Err: err}
	}
	return t, nil
}

// lookupDirect copies the objects stored under k into a pooled buffer,
// each behind its 4-byte length, and calls each with them; ok false: no
// direct key encoding (nothing was looked up).
func (b *base[K, V]) lookupDirect(k K, each func(obj []byte) error) (bool, error) {
	bp := getBuf()
	buf, ok := b.directKey((*bp)[:0], k)
	if !ok {
		putBuf(bp, buf)
		return false, nil
	}
	n := len(buf)
	err := b.t.LookupRaw(buf[:n:n], func(obj []byte) error {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(obj)))
		buf = append(buf, obj...)
		return nil
	})
	for rest := buf[n:]; err == nil && len(rest) >= 4; {
		m := 4 + int(binary.BigEndian.Uint32(rest))
		err = each(rest[4:m:m])
		rest = rest[m:]
	}
	putBuf(bp, buf)
	return true, err
}
