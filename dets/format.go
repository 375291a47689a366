package dets

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
)

// The otp9 file format (Erlang/OTP dets format 9). Every integer on disk is
// an unsigned 32-bit big-endian word. The layout is drawn in doc.go.
//
// Part of the file format; never change.
const (
	cookie            = 0x00ABCDEF // header offset 4
	closedProperly    = 1          // header offset 8
	notProperlyClosed = 0
	formatVersion     = 9 // header offset 16

	typeSet          = 1 // header offset 12
	typeBag          = 2
	typeDuplicateBag = 3

	hashPhash  = 0 // legacy phash (R8); refused
	hashPhash2 = 1 // erlang:phash2/1

	statusActive = 0x12345678 // bucket in use
	statusFree   = 0x03ABCDEF // freed bucket; tag of every free-list record
	endFree      = 12345      // Pos field of the free-list terminator

	// Header field offsets.
	offFreelistsPtr = 0
	offCookie       = 4
	offClosed       = 8
	offType         = 12
	offVersion      = 16
	offM            = 20
	offNext         = 24
	offKeyPos       = 28
	offNoObjects    = 32
	offNoKeys       = 36
	offMinSlots     = 40
	offMaxSlots     = 44
	offHashMethod   = 48
	offN            = 52
	offCounters     = 56  // 28 counters, counters[i] = buckets in 2^(i+4)-byte blocks
	offMD5          = 168 // md5(bytes 12..167)
	offFlBase       = 184

	numCounters  = 28
	headerSize   = 188 // fixed fields + counters + MD5 + FlBase
	headerEnd    = 312 // 188 + 124 reserved zero bytes
	md5Start     = 12
	md5End       = 168
	partTableOff = headerEnd // 256 u32 pointers to segment-array parts
	numParts     = 256
	baseAddr     = 1336 // = 312 + 4*256, the default buddy base

	slotsPerSeg     = 256
	slotEntrySize   = 8                           // <<Size:32, Ptr:32>>
	segmentSize     = slotsPerSeg * slotEntrySize // 2048
	segsPerPart     = 512
	partSize        = segsPerPart * 4 // 2048
	slotsPerPart    = slotsPerSeg * segsPerPart
	maxSlotsLimit   = slotsPerSeg * segsPerPart * numParts // 32 Mi
	defaultMinSlots = 256
	defaultMaxSlots = 32 * 1024 * 1024

	bucketHeaderSize = 8 // <<Size:32, Status:32>>
	maxBuddyClass    = 32
	maxFreeListBytes = 50_000_000 // reserved below 2^31
	allocLimit       = 1<<31 - maxFreeListBytes
	maxFreeRecord    = 4096
	maxFreeAddrs     = (maxFreeRecord - 4 - bucketHeaderSize) / 4 // 1021
	trailerSize      = 4
)

// shape is the part of a table's header that the engine shares between
// formats: the linear-hashing state (docs/format-otp9.md §6) and the counts.
// It is 64-bit wide; the otp9 codec narrows it to the file's 32-bit words,
// which validate and the writers keep in range.
type shape struct {
	m, n, next         uint64 // next = m + n slots in use
	minSlots, maxSlots uint64
	noObjects, noKeys  uint64
}

// header is the decoded 188-byte otp9 file header; its shape (promoted
// fields) is the engine's state while the table is open.
type header struct {
	shape
	freelistsPtr uint32
	cookie       uint32
	closed       uint32
	typ          uint32
	version      uint32
	keyPos       uint32
	hashMethod   uint32
	counters     [numCounters]uint32
	md5          [16]byte
	hasMD5       bool // md5 field is non-zero (format 9(c) and later)
	flBase       uint32
}

var be = binary.BigEndian

// decodeHeader parses the first headerSize bytes of b without validating.
func decodeHeader(b []byte) header {
	var h header
	u := func(off int) uint32 { return be.Uint32(b[off:]) }
	h.freelistsPtr = u(offFreelistsPtr)
	h.cookie = u(offCookie)
	h.closed = u(offClosed)
	h.typ = u(offType)
	h.version = u(offVersion)
	w := func(off int) uint64 { return uint64(be.Uint32(b[off:])) }
	h.m = w(offM)
	h.next = w(offNext)
	h.keyPos = u(offKeyPos)
	h.noObjects = w(offNoObjects)
	h.noKeys = w(offNoKeys)
	h.minSlots = w(offMinSlots)
	h.maxSlots = w(offMaxSlots)
	h.hashMethod = u(offHashMethod)
	h.n = w(offN)
	for i := range h.counters {
		h.counters[i] = u(offCounters + 4*i)
	}
	copy(h.md5[:], b[offMD5:offMD5+16])
	h.hasMD5 = h.md5 != [16]byte{}
	h.flBase = u(offFlBase)
	return h
}

// encode writes the header into b[:headerSize], computing the MD5 when the
// header has one (a file opened with a zero MD5 keeps writing zeros, as OTP
// does). The shape's values fit in 32 bits in an otp9 table: its slots are
// at most maxSlotsLimit and its file below 2 GiB bounds the counts.
func (h *header) encode(b []byte) {
	p := func(off int, v uint32) { be.PutUint32(b[off:], v) }
	w := func(off int, v uint64) { be.PutUint32(b[off:], uint32(v)) }
	p(offFreelistsPtr, h.freelistsPtr)
	p(offCookie, cookie)
	p(offClosed, h.closed)
	p(offType, h.typ)
	p(offVersion, formatVersion)
	w(offM, h.m)
	w(offNext, h.next)
	p(offKeyPos, h.keyPos)
	w(offNoObjects, h.noObjects)
	w(offNoKeys, h.noKeys)
	w(offMinSlots, h.minSlots)
	w(offMaxSlots, h.maxSlots)
	p(offHashMethod, h.hashMethod)
	w(offN, h.n)
	for i, c := range h.counters {
		p(offCounters+4*i, c)
	}
	if h.hasMD5 {
		h.md5 = md5.Sum(b[md5Start:md5End])
	} else {
		h.md5 = [16]byte{}
	}
	copy(b[offMD5:], h.md5[:])
	p(offFlBase, h.flBase)
}

// md5OK reports whether the stored MD5 is zero (not checked) or matches.
func md5OK(b []byte) bool {
	stored := b[offMD5 : offMD5+16]
	if bytes.Equal(stored, make([]byte, 16)) {
		return true
	}
	sum := md5.Sum(b[md5Start:md5End])
	return bytes.Equal(stored, sum[:])
}

// headerState is the verdict of the header checks (docs/format-otp9.md §4.4), in OTP's order.
type headerState int

const (
	hdrOK        headerState = iota // closed properly
	hdrNotClosed                    // needs repair
)

// checkHeader applies dets_v9:check_file_header's tests in order (§4.4
// steps 1-7) to a header read from a file of size fileSize whose last four
// bytes hold trailer. It returns a sentinel error for refused files.
func checkHeader(b []byte, fileSize int64, trailer uint32) (header, headerState, error) {
	h := decodeHeader(b)
	switch {
	case h.cookie != cookie:
		return h, 0, ErrNotDETS
	case h.typ < typeSet || h.typ > typeDuplicateBag:
		return h, 0, ErrBadTypeCode
	case h.version != formatVersion:
		return h, 0, ErrNotDETS
	case !md5OK(b):
		return h, 0, ErrNotDETS
	case int64(trailer)+int64(h.flBase) != fileSize:
		return h, hdrNotClosed, nil
	case h.hashMethod != hashPhash && h.hashMethod != hashPhash2:
		return h, 0, ErrBadHashMethod
	case h.closed == closedProperly:
		return h, hdrOK, nil
	case h.closed == notProperlyClosed:
		return h, hdrNotClosed, nil
	default:
		return h, 0, ErrNotDETS
	}
}

// validate checks the linear-hashing invariants (§6.2) and sane bounds on a
// header whose checkHeader verdict was hdrOK. fileSize is the file length.
func (h *header) validate(fileSize int64) string {
	isPow2 := func(v uint64) bool { return v != 0 && v&(v-1) == 0 }
	switch {
	case h.keyPos < 1:
		return "key position 0"
	case !isPow2(h.m) || h.m < slotsPerSeg:
		return "M is not a power of two >= 256"
	case h.n%slotsPerSeg != 0 || h.next%slotsPerSeg != 0:
		return "N or Next is not a multiple of 256"
	case h.n >= h.m || h.next != h.m+h.n:
		return "N, M and Next are inconsistent"
	case !isPow2(h.minSlots) || h.minSlots < slotsPerSeg || h.minSlots > h.m:
		return "bad min_no_slots"
	case !isPow2(h.maxSlots) || h.maxSlots > maxSlotsLimit || h.next > h.maxSlots:
		return "bad max_no_slots"
	case h.noObjects < h.noKeys:
		return "fewer objects than keys"
	case int64(h.freelistsPtr) < baseAddr || int64(h.freelistsPtr) > fileSize-trailerSize-12:
		return "free-list pointer out of range"
	case h.flBase != 0 && (h.flBase < baseAddr || h.flBase > h.freelistsPtr):
		return "bad free-list base"
	}
	return ""
}

// maxBucketSize is the largest bucket OTP will read: 2^(class) of the
// largest non-empty size-class counter (§7.5).
func (h *header) maxBucketSize() int64 {
	for i := numCounters - 1; i >= 0; i-- {
		if h.counters[i] != 0 {
			return 1 << (i + 4)
		}
	}
	return 0
}

// log2ceil returns the smallest k with 2^k >= n (n >= 1).
func log2ceil(n int64) int {
	k := 0
	for int64(1)<<k < n {
		k++
	}
	return k
}

// counterIndex maps a bucket size to its size-class counter, or -1.
func counterIndex(size int64) int {
	i := log2ceil(size) - 4
	if i < 0 || i >= numCounters {
		return -1
	}
	return i
}

// buddyClass maps an allocation size to its buddy class (block 2^(class-1)).
func buddyClass(size int64) int { return 1 + log2ceil(size) }

// slotOf maps a key hash to a slot (§6.1).
func slotOf(h, m, n uint64) uint64 {
	s := h & (m - 1)
	if s < n {
		s = h & (2*m - 1)
	}
	return s
}

// pow2ceil returns the smallest power of two >= v (v >= 1).
func pow2ceil(v int64) int64 { return 1 << log2ceil(v) }

// hashParamsFor returns linear-hash parameters for a table with next slots
// (a multiple of 256): M is the largest power of two <= next, N = next - M.
func hashParamsFor(next uint64) (m, n uint64) {
	m = 1
	for m*2 <= next {
		m *= 2
	}
	return m, next - m
}
