package dets

import (
	"math/rand/v2"

	"github.com/cespare/xxhash/v2"
)

// The native log (docs/format-native.md §10.2): the writes after meta g
// are records of epoch g, in the head page of g mod 2 and then in 64 KiB
// blocks chained by LINK records. A page or block is a 64-byte header and
// 64-byte records after it.
//
//	block header                         record
//	0  bxh (of 8..63)                    0  rxh (of 8..63)
//	8  "GNL1"                            8  epoch = gen of the meta it follows
//	12 reserved                          16 seq, one above the previous record
//	16 fileID                            24 type u8 (PUT EMPTY GROW LINK)
//	24 epoch                             25 flags u8 (bit 0 ends a group)
//	32 index in the epoch (0, 1, ...)    26 nonce (6 B; revision 1: 0)
//	40 reserved (24 B)                   32 slot (GROW: next after the step)
//	                                     40 entry (PUT: slot entry; GROW: M after
//	                                        the step, so M <= next < 2M; LINK: block)
//	                                     48 bsum (PUT: xxhash64 of the new bucket;
//	                                        revision 1: its hxh)
//	                                     56 dObj i32 | 60 dKeys i32

// Log layout and field offsets.
const (
	nativeHeadRecords  = (nativePageSize - nativeLogHeader) / nativeLogRecord     // 63
	nativeBlockRecords = (nativeLogBlockSize - nativeLogHeader) / nativeLogRecord // 1023

	nlOffMagic  = 8
	nlOffFileID = 16
	nlOffEpoch  = 24
	nlOffIndex  = 32

	nrOffEpoch = 8
	nrOffSeq   = 16
	nrOffType  = 24
	nrOffFlags = 25
	nrOffNonce = 26 // 6 bytes
	nrOffSlot  = 32
	nrOffEntry = 40
	nrOffBsum  = 48
	nrOffDObj  = 56
	nrOffDKeys = 60
)

// nativeLogHead is the offset of the fixed head page of epoch gen's log.
func nativeLogHead(gen uint64) uint64 { return nativeLogHeadOff + nativePageSize*(gen%2) }

// nativeLogBlock is a decoded log block (or head page) header.
type nativeLogBlock struct {
	fileID uint64
	epoch  uint64
	index  uint64 // 0 for the head page, then 1, 2, ... along the LINKs
}

// encode writes the header, checksum included, into b[:64].
func (h *nativeLogBlock) encode(b []byte) {
	b = b[:nativeLogHeader]
	clear(b)
	le.PutUint32(b[nlOffMagic:], nativeLogBlockMagic)
	le.PutUint64(b[nlOffFileID:], h.fileID)
	le.PutUint64(b[nlOffEpoch:], h.epoch)
	le.PutUint64(b[nlOffIndex:], h.index)
	le.PutUint64(b, xxhash.Sum64(b[8:]))
}

// decodeNativeLogBlock decodes and validates the header at the start of b,
// read at off. Whether it belongs to the current epoch and file is the
// caller's test. Errors are *CorruptionError in section "log".
func decodeNativeLogBlock(path string, b []byte, off int64) (nativeLogBlock, error) {
	h, why := parseNativeLogBlock(b)
	if why != "" {
		return h, corrupt(path, "log", off, "%s", why)
	}
	return h, nil
}

// parseNativeLogBlock is decodeNativeLogBlock without the error: why says
// what is wrong. An open of a closed file tests the head page this way,
// where a failing header is the normal case and an error would only be
// built to be dropped.
func parseNativeLogBlock(b []byte) (h nativeLogBlock, why string) {
	if len(b) < nativeLogHeader {
		return h, "short log block header"
	}
	b = b[:nativeLogHeader]
	if le.Uint64(b) != xxhash.Sum64(b[8:]) {
		return h, "block header checksum mismatch"
	}
	if le.Uint32(b[nlOffMagic:]) != nativeLogBlockMagic || !allZero(b[12:16]) || !allZero(b[40:]) {
		return h, "bad block header"
	}
	return nativeLogBlock{fileID: le.Uint64(b[nlOffFileID:]), epoch: le.Uint64(b[nlOffEpoch:]),
		index: le.Uint64(b[nlOffIndex:])}, ""
}

// nativeLogRec is a decoded log record.
type nativeLogRec struct {
	epoch uint64
	seq   uint64
	typ   uint8 // recPut, recEmpty, recGrow or recLink
	flags uint8 // recEndGroup
	// nonce is the write session's random 48-bit number (revision 2), the
	// same in every record of the session; 0 in revision 1. A log ends at
	// a record of another session, stale in a page this one reused.
	nonce uint64
	slot  uint64
	entry uint64
	bsum  uint64
	dObj  int32
	dKeys int32
}

// endsGroup reports whether r is the last record of its atomic group.
func (r *nativeLogRec) endsGroup() bool { return r.flags&recEndGroup != 0 }

// encode writes the record, checksum included, into b[:64].
func (r *nativeLogRec) encode(b []byte) {
	b = b[:nativeLogRecord]
	clear(b)
	le.PutUint64(b[nrOffEpoch:], r.epoch)
	le.PutUint64(b[nrOffSeq:], r.seq)
	b[nrOffType] = r.typ
	b[nrOffFlags] = r.flags
	putUint48(b[nrOffNonce:], r.nonce)
	le.PutUint64(b[nrOffSlot:], r.slot)
	le.PutUint64(b[nrOffEntry:], r.entry)
	le.PutUint64(b[nrOffBsum:], r.bsum)
	le.PutUint32(b[nrOffDObj:], uint32(r.dObj))
	le.PutUint32(b[nrOffDKeys:], uint32(r.dKeys))
	le.PutUint64(b, xxhash.Sum64(b[8:]))
}

// decodeNativeLogRec decodes the record at the start of b, read at off, and
// checks what a record says about itself: its checksum, its type, and the
// fields that type must leave zero. That its epoch and seq continue the log
// is the replay's test (nativeLogFollows). Errors are *CorruptionError in
// section "log"; during replay, the first one ends the log.
func decodeNativeLogRec(path string, b []byte, off int64) (nativeLogRec, error) {
	var r nativeLogRec
	if len(b) < nativeLogRecord {
		return r, corrupt(path, "log", off, "short log record")
	}
	b = b[:nativeLogRecord]
	if le.Uint64(b) != xxhash.Sum64(b[8:]) {
		return r, corrupt(path, "log", off, "record checksum mismatch")
	}
	r = nativeLogRec{epoch: le.Uint64(b[nrOffEpoch:]), seq: le.Uint64(b[nrOffSeq:]),
		typ: b[nrOffType], flags: b[nrOffFlags], nonce: uint48(b[nrOffNonce:]), slot: le.Uint64(b[nrOffSlot:]),
		entry: le.Uint64(b[nrOffEntry:]), bsum: le.Uint64(b[nrOffBsum:]),
		dObj: int32(le.Uint32(b[nrOffDObj:])), dKeys: int32(le.Uint32(b[nrOffDKeys:]))}
	if msg := r.invalid(b); msg != "" {
		return r, corrupt(path, "log", off, "%s", msg)
	}
	return r, nil
}

// invalid checks a record's fields by its type; "" when they are sound.
func (r *nativeLogRec) invalid(b []byte) string {
	if r.flags&^recEndGroup != 0 {
		return "reserved bits are not zero"
	}
	if r.seq == 0 || r.epoch == 0 {
		return "sequence number or epoch 0"
	}
	switch r.typ {
	case recPut:
		if e := nativeEntry(r.entry); e.room() == 0 || r.slot >= nativeMaxSlots {
			return "PUT without a cell or block"
		}
	case recEmpty:
		if r.entry != 0 || r.bsum != 0 || r.slot >= nativeMaxSlots {
			return "EMPTY with an entry"
		}
	case recGrow:
		if !isPow2u64(r.entry) || r.entry < nativeDefaultMinSlots || r.entry > nativeMaxSlots ||
			r.slot%nativeSlotsPerSeg != 0 || r.slot < r.entry || r.slot >= 2*r.entry ||
			r.bsum != 0 || r.dObj != 0 || r.dKeys != 0 {
			return "bad GROW"
		}
	case recLink:
		if r.entry == 0 || r.entry%nativePageSize != 0 || r.entry >= nativeMaxOffset || r.slot != 0 ||
			r.bsum != 0 || r.dObj != 0 || r.dKeys != 0 || r.flags != 0 {
			return "bad LINK"
		}
	default:
		return "unknown record type"
	}
	return ""
}

// nativeLogFollows reports whether r continues a log of epoch whose last
// record had seq prev (the meta's seq before the first record).
func nativeLogFollows(r *nativeLogRec, epoch, prev uint64) bool {
	return r.epoch == epoch && r.seq == prev+1
}

// nativeNonceMask keeps the 48 bits of a session nonce.
const nativeNonceMask = 1<<48 - 1

// putUint48 writes the low 48 bits of v into b[:6], little-endian.
func putUint48(b []byte, v uint64) {
	le.PutUint32(b, uint32(v))
	le.PutUint16(b[4:], uint16(v>>32))
}

// uint48 reads what putUint48 writes.
func uint48(b []byte) uint64 { return uint64(le.Uint32(b)) | uint64(le.Uint16(b[4:]))<<32 }

// newNativeNonce draws a write session's nonce: 48 random bits, not 0.
func newNativeNonce() uint64 {
	for {
		if n := rand.Uint64() & nativeNonceMask; n != 0 {
			return n
		}
	}
}

// nativeSessionOf reports whether r belongs to the write session whose
// nonce is nonce, in a file of revision rev: in revision 1 every record
// has nonce 0; later, a session's nonce is never 0.
func nativeSessionOf(r *nativeLogRec, rev uint32, nonce uint64) bool {
	if rev < nativeRevisionSessions {
		return r.nonce == 0
	}
	return r.nonce != 0 && r.nonce == nonce
}
