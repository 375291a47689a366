package dets

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/cespare/xxhash/v2"
	farm "github.com/dgryski/go-farm"

	"github.com/godets/godets/etf"
)

// Native buckets (docs/format-native.md §6): a 32-byte header, then the
// object records back to back, keys ascending, a key's objects adjacent.
//
//	header  0 hxh (of 8..31) | 8 seq u64 | 16 slot u32 | 20 level u8
//	        21 reserved u8 | 22 "NB" | 24 size u64 (header included)
//	object  0 oxh (of the length and the ETF) | 8 len uvarint (1..9 B)
//	        8+v ETF (term_to_binary, canonical, leading 131)

// Bucket header offsets.
const (
	nbOffSeq   = 8
	nbOffSlot  = 16
	nbOffLevel = 20
	nbOffMagic = 22
	nbOffSize  = 24

	// nativeMinObjectRecord is the smallest object record: a checksum, a
	// one-byte length and one byte.
	nativeMinObjectRecord = 8 + 1 + 1
	// nativeMaxObjectLen bounds an object's ETF length (§6.3).
	nativeMaxObjectLen = 1 << 59
)

// nativeBucketHead is a decoded bucket header (§6.1).
type nativeBucketHead struct {
	seq   uint64 // the write that made this bucket
	slot  uint32 // the slot it was written for
	level uint8  // it holds exactly the keys with H mod 2^level = slot
	size  uint64 // bytes of the bucket, header included
}

// encode writes the header, checksum included, into b[:32].
func (h *nativeBucketHead) encode(b []byte) {
	b = b[:nativeBucketHeader]
	le.PutUint64(b[nbOffSeq:], h.seq)
	le.PutUint32(b[nbOffSlot:], h.slot)
	b[nbOffLevel] = h.level
	b[nbOffLevel+1] = 0
	le.PutUint16(b[nbOffMagic:], nativeBucketMagic)
	le.PutUint64(b[nbOffSize:], h.size)
	le.PutUint64(b, xxhash.Sum64(b[8:]))
}

// nativeBucketSum is what a PUT's bsum binds of the bucket b (exactly its
// size bytes, header first) in a file of revision rev: all of it, so that
// a write torn between a new header and a cell's old records fails even
// when each record passes on its own. Revision 1 bound the header only.
func nativeBucketSum(rev uint32, b []byte) uint64 {
	if rev < nativeRevisionSessions {
		return le.Uint64(b)
	}
	return xxhash.Sum64(b)
}

// headerSum is the header's checksum (hxh).
func (h *nativeBucketHead) headerSum() uint64 {
	var b [nativeBucketHeader]byte
	h.encode(b[:])
	return le.Uint64(b[:])
}

// decodeNativeBucketHeader decodes and validates the header at the start
// of b, read at off from a cell or block of room bytes. Errors are
// *CorruptionError in section "bucket".
func decodeNativeBucketHeader(path string, b []byte, off int64, room uint64) (nativeBucketHead, error) {
	var h nativeBucketHead
	if len(b) < nativeBucketHeader {
		return h, corrupt(path, "bucket", off, "short bucket header")
	}
	if le.Uint64(b) != xxhash.Sum64(b[8:nativeBucketHeader]) {
		return h, corrupt(path, "bucket", off, "header checksum mismatch")
	}
	h = nativeBucketHead{seq: le.Uint64(b[nbOffSeq:]), slot: le.Uint32(b[nbOffSlot:]),
		level: b[nbOffLevel], size: le.Uint64(b[nbOffSize:])}
	switch {
	case le.Uint16(b[nbOffMagic:]) != nativeBucketMagic || b[nbOffLevel+1] != 0:
		return h, corrupt(path, "bucket", off, "bad magic")
	case h.seq == 0:
		return h, corrupt(path, "bucket", off, "sequence number 0")
	case h.level < nativeMinLevel || h.level > nativeMaxLevel || uint64(h.slot)>>h.level != 0:
		return h, corrupt(path, "bucket", off, "slot %d at level %d", h.slot, h.level)
	case h.size < nativeBucketHeader+nativeMinObjectRecord || h.size > room:
		return h, corrupt(path, "bucket", off, "size %d in a cell or block of %d bytes", h.size, room)
	}
	return h, nil
}

// nativeObjectRecordSize is the size of the record of an n-byte ETF.
func nativeObjectRecordSize(n int) int {
	var v [binary.MaxVarintLen64]byte
	return 8 + binary.PutUvarint(v[:], uint64(n)) + n
}

// nativeBucketSize returns the size of the bucket that holds gs and the
// number of its objects.
func nativeBucketSize(gs []group) (size uint64, objects int) {
	size = nativeBucketHeader
	for i := range gs {
		for j := range gs[i].objs {
			size += uint64(nativeObjectRecordSize(len(gs[i].objs[j].enc)))
		}
		objects += len(gs[i].objs)
	}
	return size, objects
}

// encodeNativeBucket encodes the bucket of gs with header h (h.size from
// nativeBucketSize) into buf's room, which it reuses.
func encodeNativeBucket(buf []byte, h nativeBucketHead, gs []group) []byte {
	buf = slices.Grow(buf[:0], int(h.size))[:nativeBucketHeader]
	h.encode(buf)
	for i := range gs {
		for j := range gs[i].objs {
			buf = appendNativeObject(buf, gs[i].objs[j].enc, gs[i].objs[j].sum)
		}
	}
	return buf
}

// appendNativeObject appends the object record of enc (§6.3) to dst. sum
// is the record's checksum when the caller read and verified it (a copy
// moves the record verbatim, §6.3), or 0 to compute it.
func appendNativeObject(dst, enc []byte, sum uint64) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(enc)))
	dst = append(dst, enc...)
	if sum == 0 {
		sum = xxhash.Sum64(dst[start+8:])
	}
	le.PutUint64(dst[start:], sum)
	return dst
}

// decodeNativeObject reads the object record at the start of b (the rest of
// its bucket), read at off: its ETF bytes (a subslice of b) and the
// record's length. It checks the framing and the checksum, not the term
// (nativeObjectKey does). Errors are *CorruptionError in section "object".
func decodeNativeObject(path string, b []byte, off int64) (enc []byte, n int, err error) {
	if len(b) < nativeMinObjectRecord {
		return nil, 0, corrupt(path, "object", off, "record header runs past its bucket")
	}
	l, v := binary.Uvarint(b[8:min(len(b), 8+binary.MaxVarintLen64)])
	switch {
	case v <= 0:
		return nil, 0, corrupt(path, "object", off, "bad length")
	case v != uvarintLen(l):
		return nil, 0, corrupt(path, "object", off, "length not minimally encoded")
	case l == 0 || l >= nativeMaxObjectLen || l > uint64(len(b)-8-v):
		return nil, 0, corrupt(path, "object", off, "length %d runs past its bucket", l)
	}
	n = 8 + v + int(l)
	if le.Uint64(b) != xxhash.Sum64(b[8:n]) {
		return nil, 0, corrupt(path, "object", off, "checksum mismatch")
	}
	return b[8+v : n : n], n, nil
}

func uvarintLen(x uint64) int {
	var v [binary.MaxVarintLen64]byte
	return binary.PutUvarint(v[:], x)
}

// nativeObjectKey checks that enc is a stored object: one canonical-form
// term, a tuple of at least keyPos elements, ending exactly at its end. It
// returns the key element's bytes, which are what the key hash covers
// (§9), or a reason why enc is not sound.
func nativeObjectKey(enc []byte, keyPos int) ([]byte, string) {
	k, _, why := nativeObjectKeyDeep(enc, keyPos)
	return k, why
}

// nativeObjectKeyDeep is nativeObjectKey that also returns, for a sound
// object nested deeper than etf.MaxDepth, etf's error saying so (Check
// lists such objects).
func nativeObjectKeyDeep(enc []byte, keyPos int) (kenc []byte, deep error, why string) {
	if err := etf.Validate(enc); errors.Is(err, etf.ErrTooDeep) {
		deep = err
	} else if err != nil {
		return nil, nil, "undecodable object: " + err.Error()
	}
	if kenc = keySpan(enc, keyPos); kenc == nil {
		return nil, deep, "not a tuple with a key element"
	}
	return kenc, deep, ""
}

// nativeKeyHash is H of §9: farm Fingerprint64 of the key's canonical ETF
// without the leading 131, which is the key's span inside a stored object,
// with any -0.0 in it hashed as 0.0 (keyForHash).
func nativeKeyHash(kenc []byte) uint64 { return farm.Fingerprint64(keyForHash(kenc)) }

// walkNativeBucket verifies the bucket at the start of b (read at off from
// a cell or block of room bytes) and calls visit for each object record in
// order, with the record's offset, its ETF and its key's bytes. Every
// record is verified before visit sees it: the checksum, the term, and
// that its key hashes into the bucket's slot at its level (§6.3). The
// records must tile the bucket exactly.
func walkNativeBucket(path string, b []byte, off int64, room uint64, keyPos int,
	visit func(recOff int64, enc, kenc []byte) error) (nativeBucketHead, error) {
	return walkNativeRecords(path, b, off, room, keyPos, true, visit)
}

// walkNativeDecoding is walkNativeBucket for a visit that decodes every
// record it is given and reports a failed decoding as damage: the decoding
// accepts exactly what etf.Validate accepts, so the walk leaves the term
// check to it instead of running it twice (§6.3).
func walkNativeDecoding(path string, b []byte, off int64, room uint64, keyPos int,
	visit func(recOff int64, enc, kenc []byte) error) (nativeBucketHead, error) {
	return walkNativeRecords(path, b, off, room, keyPos, false, visit)
}

func walkNativeRecords(path string, b []byte, off int64, room uint64, keyPos int, validate bool,
	visit func(recOff int64, enc, kenc []byte) error) (nativeBucketHead, error) {
	h, err := decodeNativeBucketHeader(path, b, off, room)
	if err != nil {
		return h, err
	}
	if uint64(len(b)) < h.size {
		return h, corrupt(path, "bucket", off, "size %d past the %d bytes read", h.size, len(b))
	}
	body, pos := b[:h.size], nativeBucketHeader
	mask := uint64(1)<<h.level - 1
	for pos < len(body) {
		recOff := off + int64(pos)
		enc, n, err := decodeNativeObject(path, body[pos:], recOff)
		if err != nil {
			return h, err
		}
		var kenc []byte
		if validate {
			var why string
			if kenc, why = nativeObjectKey(enc, keyPos); why != "" {
				return h, corrupt(path, "object", recOff, "%s", why)
			}
		} else if kenc = keySpan(enc, keyPos); kenc == nil {
			return h, corrupt(path, "object", recOff, "not a tuple with a key element")
		}
		if nativeKeyHash(kenc)&mask != uint64(h.slot) {
			return h, corrupt(path, "object", recOff, "key does not hash to slot %d", h.slot)
		}
		if visit != nil {
			if err := visit(recOff, enc, kenc); err != nil {
				return h, err
			}
		}
		pos += n
	}
	return h, nil
}
