package dets

import "github.com/godets/godets/etf"

// One engine, several file formats (docs/format-native.md §15). The shared
// code (kind rules, growth, traversal, repair's stages, Check's order and
// count rules) works on 64-bit slots and offsets; what a format decides
// lives in a table's layout, chosen at open: its constants, and a few
// operations (entryOf and readEntry, parseBucket, encodeBucket, writeSlot,
// beginWrite, save, hashKey). Those are Table methods that switch on the layout's
// one-byte tag instead of calling through an interface, so that the hot
// paths (slot entries, bucket parsing, lookupInBody) stay inlinable and
// allocation-free. Only otp9 exists so far: every switch has its case as
// the default, and the native format adds its own.

// formatTag names a table's file format in one byte, for the switches.
type formatTag uint8

const (
	tagOTP9 formatTag = iota
	tagNative
)

// layout is what a table's file format fixes. It is chosen at open and
// never changes while the table is open (a repair opens a new Table).
// It is kept to a few bytes: every Table holds one, and a Table's size
// class is part of the cost of an open. What Info alone needs comes from
// methods.
type layout struct {
	tag         formatTag
	segShift    uint8 // a segment holds 1<<segShift slot entries
	entrySize   uint8 // bytes of one slot entry on disk
	keysPerSlot uint8 // the table grows while it has more keys than keysPerSlot * slots
}

// otp9Layout is OTP's format 9 (format.go, docs/format-otp9.md).
var otp9Layout = layout{
	tag:         tagOTP9,
	segShift:    8, // slotsPerSeg
	entrySize:   slotEntrySize,
	keysPerSlot: 1,
}

// format is the Format the layout is of.
func (l layout) format() Format {
	switch l.tag {
	case tagNative:
		return Native
	default:
		return OTP9
	}
}

// byteLimit is the largest file the format allows, for Info.
func (l layout) byteLimit() int64 {
	switch l.tag {
	case tagNative:
		return nativeMaxOffset
	default:
		return allocLimit
	}
}

// hashName names the key hash, for Info.
func (l layout) hashName() string {
	switch l.tag {
	case tagNative:
		return "farm64"
	default:
		return "phash2"
	}
}

// layoutOf returns the layout of format f; Options.validate refuses the
// formats not built yet.
func layoutOf(f Format) layout {
	switch f {
	case Native:
		return nativeLayout
	default:
		return otp9Layout
	}
}

// slotWord is a slot entry as the segment cache keeps it: the format's
// 8-byte entry as one integer (half a slotEntry), decoded by entryOf.
type slotWord uint64

// entryOf decodes a cached slot entry.
func (t *Table) entryOf(w slotWord) slotEntry {
	switch t.lay.tag {
	case tagNative: // offset and code; the size is the cell's or block's
		e := nativeEntry(w)
		return slotEntry{int64(e.room()), int64(e.off())}
	default: // <<Size:32, Ptr:32>>, read as one big-endian word
		return slotEntry{int64(w >> 32), int64(uint32(w))}
	}
}

// wordOf encodes e for the cache; e fits the format's entry.
func (t *Table) wordOf(e slotEntry) slotWord {
	switch t.lay.tag {
	case tagNative:
		if e.size == 0 {
			return 0
		}
		if c := cellClassFor(uint64(e.size)); c != 0 {
			return slotWord(nativeCellEntry(uint64(e.ptr), c))
		}
		return slotWord(nativeBlockEntry(uint64(e.ptr), blockClassFor(uint64(e.size))))
	default:
		return slotWord(uint64(e.size)<<32 | uint64(uint32(e.ptr)))
	}
}

// wordAt reads the slot entry at the start of b.
func (t *Table) wordAt(b []byte) slotWord {
	switch t.lay.tag {
	case tagNative:
		return slotWord(le.Uint64(b))
	default:
		return slotWord(be.Uint64(b))
	}
}

// appendWord appends the on-disk form of a slot entry.
func (t *Table) appendWord(dst []byte, w slotWord) []byte {
	switch t.lay.tag {
	case tagNative:
		return le.AppendUint64(dst, uint64(w))
	default:
		return be.AppendUint64(dst, uint64(w))
	}
}

// readEntry decodes the slot entry at the start of b.
func (t *Table) readEntry(b []byte) slotEntry { return t.entryOf(t.wordAt(b)) }

// putEntry encodes e at the start of b, which has room for one entry.
func (t *Table) putEntry(b []byte, e slotEntry) { t.appendWord(b[:0], t.wordOf(e)) }

// badBucketOTP9 describes what is wrong with the header of an otp9
// bucket that readBucket refused.
func (t *Table) badBucketOTP9(slot uint64, e slotEntry, b []byte) error {
	if got := int64(be.Uint32(b)); got != e.size {
		return corrupt(t.path, "bucket", e.ptr, "bucket size %d differs from slot %d entry size %d", got, slot, e.size)
	}
	return corrupt(t.path, "bucket", e.ptr+4, "bucket of slot %d has status %#x, not ACTIVE", slot, be.Uint32(b[4:]))
}

// parseBucket parses a bucket body into key groups without decoding,
// reusing gs and objs as parseRawInto does (both may be nil). The hot
// paths (readRawInto; lookup, with lookupInBody) spell this switch out,
// which saves a call.
func (t *Table) parseBucket(body []byte, gs []group, objs []object) ([]group, []object, *bucketError) {
	switch t.lay.tag {
	default:
		return parseRawInto(t.kind, t.keyPos, body, gs, objs)
	}
}

// encodeBucket appends the whole bucket (header and body) that holds gs
// as the content of slot.
func (t *Table) encodeBucket(dst []byte, slot uint64, gs []group) []byte {
	switch t.lay.tag {
	default:
		return appendBucket(dst, t.kind, gs)
	}
}

// encodedSize is the size of the bucket encodeBucket makes of gs.
func (t *Table) encodedSize(gs []group) int64 {
	switch t.lay.tag {
	default:
		return bucketSize(t.kind, gs)
	}
}

// writeSlot stores gs as the new content of slot, whose entry is old, with
// the format's write protocol.
func (t *Table) writeSlot(slot uint64, old slotEntry, gs []group) error {
	switch t.lay.tag {
	case tagNative:
		return t.nativeWriteSlot(slot, old, gs)
	default:
		return t.writeGroups(slot, old, gs)
	}
}

// beginWrite runs before the first change after an open or a save.
func (t *Table) beginWrite() error {
	switch t.lay.tag {
	case tagNative:
		return t.nativeBeginWrite()
	default:
		return t.markDirty()
	}
}

// save makes the file a properly closed one (see Sync and Close); durable
// adds the fsync that makes the closed state itself durable.
func (t *Table) save(durable bool) error {
	switch t.lay.tag {
	case tagNative:
		return t.nativeSave(durable)
	default:
		return t.saveOTP9(durable)
	}
}

// hashKey returns the key hash that places key in a slot.
func (t *Table) hashKey(key etf.Term) uint64 {
	switch t.lay.tag {
	case tagNative:
		ka := t.keyArg(key)
		return nativeKeyHash(ka.enc)
	default:
		return keyHash(key)
	}
}

// hashGroup is hashKey for g's key, from its encoding when it can.
func (t *Table) hashGroup(g *group) (uint64, error) {
	switch t.lay.tag {
	case tagNative:
		if g.kenc != nil {
			return nativeKeyHash(g.kenc), nil
		}
		k, err := g.keyTerm(t.keyPos)
		if err != nil {
			return 0, err
		}
		return t.hashKey(k), nil
	default:
		return groupHash(g, t.keyPos)
	}
}
