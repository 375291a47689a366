package dets

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// The native file format (docs/format-native.md; § numbers in the native_*
// files refer to it). Every integer is little-endian; offsets and sizes are
// 64-bit. Every checksum is xxhash64 (seed 0) of one contiguous byte range.
//
//	0      +-------------------------------------------------------------+
//	       | page 0: superblock, 128 B record, written once (§4.1)        |
//	4096   | page 1: meta A, 256 B record (§4.2)                          |
//	8192   | page 2: meta B; the valid one with the higher gen is current |
//	12288  | page 3: log head of even epochs (64 B header + 63 records)   |
//	16384  | page 4: log head of odd epochs                               |
//	20480  +-------------------------------------------------------------+ base
//	       | buddy area, blocks of 2^12 .. 2^59 bytes aligned from base:  |
//	       |   root (16 B a part), parts (256 x {off, sum}), segments     |
//	       |   (512 slot entries), 64 KiB runs of equal cells holding     |
//	       |   buckets of <= 2048 B, larger buckets in blocks, 64 KiB log |
//	       |   blocks, the free record, free blocks                       |
//	EOF    +-------------------------------------------------------------+
//
// Superblock (page 0):
//
//	0 magic "godets\x00n" | 8 reserved | 12 kind u32 | 16 "NAT1" | 20 revision
//	24 keyPos | 28 keyHash | 32 checksum | 36 pageSize | 40 base u64
//	48 fileID | 56 minSlots | 64 maxSlots | 72 48 B reserved | 120 sxh
//
// Meta (pages 1 and 2):
//
//	0 mxh (of 8..255) | 8 "GNM1" | 12 metaSize | 16 fileID | 24 gen | 32 seq
//	40 next | 48 m | 56 n | 64 noObjects | 72 noKeys | 80 dataEnd
//	88 rootOff | 96 rootLen | 104 rootSum | 112 freeOff | 120 freeLen
//	128 freeSum | 136 reserved | 144 verifiedGen | 152 flags | 160 reserved
//
// The tree (meta -> root -> parts -> segments), buckets and objects are in
// native_tree.go and native_bucket.go, the log in native_log.go, the
// allocator and its free record in native_alloc.go and native_free.go.
//
// Part of the file format; never change.
const (
	nativeMagic       = "godets\x00n" // superblock bytes 0..7
	nativeVersionWord = "NAT1"        // bytes 16..19
	nativeVersionBE   = 0x4E415431    // the same bytes as OTP reads them: big-endian u32
	nativeRevision    = 2             // superblock offset 20: what new files get
	// nativeRevisionSessions is the first revision whose log records carry
	// their write session's nonce and whose PUTs bind the whole bucket
	// (bsum = xxhash64 of its size bytes); revision 1 has neither.
	nativeRevisionSessions = 2
	nativePageSize         = 4096
	nativeSuperOff         = 0
	nativeMetaAOff         = 4096
	nativeMetaBOff         = 8192
	nativeLogHeadOff       = 12288 // epoch g's log starts in the page at 12288 + 4096*(g mod 2)
	nativeBase             = 20480 // default buddy base
	nativeSuperSize        = 128
	nativeMetaSize         = 256
	nativeMetaMagic        = 0x314D4E47 // "GNM1" LE, meta offset 8
	nativeSlotsPerSeg      = 512
	nativeSegsPerPart      = 256
	nativeSlotsPerPart     = nativeSlotsPerSeg * nativeSegsPerPart // 2^17
	nativeMaxSlots         = 1 << 32
	nativeMaxParts         = nativeMaxSlots / nativeSlotsPerPart // 2^15
	nativeDefaultMinSlots  = 512
	nativeDefaultMaxSlots  = nativeMaxSlots
	nativeBucketHeader     = 32
	nativeBucketMagic      = 0x424E // "NB" LE, bucket offset 22
	nativeMinLevel         = 9      // a bucket's level is log2(M) or log2(M)+1, M >= 512
	nativeMaxLevel         = 32
	nativeCellAlign        = 16
	nativeRunSize          = 65536
	nativeRunClass         = 16 // log2(nativeRunSize)
	nativeCellClasses      = 55
	nativeMaxCell          = 2048 // cellSize(nativeCellClasses)
	nativeMinBuddyClass    = 12
	nativeMaxBuddyClass    = 59
	nativeMaxOffset        = 1 << 60
	nativeBuddyCode        = 64 // slot-entry code 64+k: a buddy block of 2^k bytes
	nativeLogBlockSize     = 65536
	nativeLogHeader        = 64
	nativeLogRecord        = 64
	nativeLogBlockMagic    = 0x314C4E47 // "GNL1" LE, log block offset 8
	nativeFreeMagic        = 0x31464E47 // "GNF1" LE, free record offset 8

	recPut   = 1
	recEmpty = 2
	recGrow  = 3
	recLink  = 4

	recEndGroup = 0x01 // log record flag: last record of an atomic group

	keyHashFarm64 = 1 // farm.Fingerprint64 of the key's canonical ETF without the 131
	sumXXH64      = 1 // xxhash64, seed 0

	metaFlagClose    = 1 << 0 // the meta was written by Close
	metaFlagRecovery = 1 << 1 // the meta was written by a recovery (§11)
)

// Superblock field offsets (§4.1).
const (
	nsOffKind     = 12
	nsOffVersion  = 16
	nsOffRevision = 20
	nsOffKeyPos   = 24
	nsOffKeyHash  = 28
	nsOffChecksum = 32
	nsOffPageSize = 36
	nsOffBase     = 40
	nsOffFileID   = 48
	nsOffMinSlots = 56
	nsOffMaxSlots = 64
	nsOffSum      = 120
)

var le = binary.LittleEndian

// nativeSuper is the decoded superblock (§4.1).
type nativeSuper struct {
	kind     uint32 // typeSet, typeBag or typeDuplicateBag
	revision uint32
	keyPos   uint32
	keyHash  uint32
	checksum uint32
	pageSize uint32
	base     uint64
	fileID   uint64
	minSlots uint64
	maxSlots uint64
}

// encode writes the superblock record, checksum included, into
// b[:nativeSuperSize]; the reserved bytes become zero.
func (s *nativeSuper) encode(b []byte) {
	b = b[:nativeSuperSize]
	clear(b)
	copy(b, nativeMagic)
	le.PutUint32(b[nsOffKind:], s.kind)
	copy(b[nsOffVersion:], nativeVersionWord)
	le.PutUint32(b[nsOffRevision:], s.revision)
	le.PutUint32(b[nsOffKeyPos:], s.keyPos)
	le.PutUint32(b[nsOffKeyHash:], s.keyHash)
	le.PutUint32(b[nsOffChecksum:], s.checksum)
	le.PutUint32(b[nsOffPageSize:], s.pageSize)
	le.PutUint64(b[nsOffBase:], s.base)
	le.PutUint64(b[nsOffFileID:], s.fileID)
	le.PutUint64(b[nsOffMinSlots:], s.minSlots)
	le.PutUint64(b[nsOffMaxSlots:], s.maxSlots)
	le.PutUint64(b[nsOffSum:], xxhash.Sum64(b[:nsOffSum]))
}

// newNativeSuper returns the superblock of a new file.
func newNativeSuper(kind Kind, keyPos int, minSlots, maxSlots, fileID uint64) nativeSuper {
	return nativeSuper{kind: uint32(kind), revision: nativeRevision, keyPos: uint32(keyPos),
		keyHash: keyHashFarm64, checksum: sumXXH64, pageSize: nativePageSize, base: nativeBase,
		fileID: fileID, minSlots: minSlots, maxSlots: maxSlots}
}

// NativeRevisionError: a native file written by a later revision of the
// format than this build reads. It matches ErrUnsupportedVersion.
type NativeRevisionError struct {
	Path     string
	Revision uint32
}

func (e *NativeRevisionError) Error() string {
	return fmt.Sprintf("dets: %s: native revision %d; this godets reads %d", e.Path, e.Revision, nativeRevision)
}

// Is reports that a NativeRevisionError is an ErrUnsupportedVersion.
func (e *NativeRevisionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// decodeNativeSuper applies the tests of §4.1 steps 3-5 to the first bytes
// of a file of fileSize bytes whose version word is NAT1. The revision is
// tested right after the checksum, before any other field: a later
// revision may give the fields other meanings.
func decodeNativeSuper(path string, b []byte, fileSize int64) (nativeSuper, error) {
	var s nativeSuper
	if fileSize < nativeBase || len(b) < nativeSuperSize || string(b[:8]) != nativeMagic ||
		string(b[nsOffVersion:nsOffVersion+4]) != nativeVersionWord {
		return s, openError(ErrNotDETS, path)
	}
	b = b[:nativeSuperSize]
	if le.Uint64(b[nsOffSum:]) != xxhash.Sum64(b[:nsOffSum]) {
		return s, fmt.Errorf("%w: %s: native superblock checksum mismatch", ErrNotDETS, path)
	}
	s = nativeSuper{
		kind: le.Uint32(b[nsOffKind:]), revision: le.Uint32(b[nsOffRevision:]),
		keyPos: le.Uint32(b[nsOffKeyPos:]), keyHash: le.Uint32(b[nsOffKeyHash:]),
		checksum: le.Uint32(b[nsOffChecksum:]), pageSize: le.Uint32(b[nsOffPageSize:]),
		base: le.Uint64(b[nsOffBase:]), fileID: le.Uint64(b[nsOffFileID:]),
		minSlots: le.Uint64(b[nsOffMinSlots:]), maxSlots: le.Uint64(b[nsOffMaxSlots:]),
	}
	switch {
	case s.revision > nativeRevision:
		return s, &NativeRevisionError{Path: path, Revision: s.revision}
	case s.kind < typeSet || s.kind > typeDuplicateBag:
		return s, openError(ErrBadTypeCode, path)
	case s.keyHash != keyHashFarm64:
		return s, openError(ErrBadHashMethod, path)
	case s.checksum != sumXXH64 || s.pageSize != nativePageSize:
		return s, fmt.Errorf("%w: %s: native checksum method %d, page size %d", ErrNotDETS, path, s.checksum, s.pageSize)
	}
	if msg := s.invalid(b); msg != "" {
		return s, corrupt(path, "superblock", nativeSuperOff, "%s", msg)
	}
	return s, nil
}

// invalid checks the fields a valid checksum does not vouch for, given the
// record's bytes b; it returns "" when they are sound.
func (s *nativeSuper) invalid(b []byte) string {
	switch {
	case s.revision == 0:
		return "revision 0"
	case s.keyPos < 1 || s.keyPos > 1<<24:
		return fmt.Sprintf("key position %d", s.keyPos)
	case s.base < nativeBase || s.base%nativePageSize != 0 || s.base > nativeMaxOffset-1<<nativeMaxBuddyClass:
		return fmt.Sprintf("buddy base %d", s.base)
	case !isPow2u64(s.minSlots) || s.minSlots < nativeDefaultMinSlots:
		return fmt.Sprintf("min slots %d", s.minSlots)
	case !isPow2u64(s.maxSlots) || s.maxSlots > nativeMaxSlots || s.maxSlots < s.minSlots:
		return fmt.Sprintf("max slots %d", s.maxSlots)
	case !allZero(b[8:nsOffKind]) || !allZero(b[72:nsOffSum]):
		return "reserved bytes are not zero"
	}
	return ""
}

// Meta field offsets (§4.2).
const (
	nmOffMagic       = 8
	nmOffSize        = 12
	nmOffFileID      = 16
	nmOffGen         = 24
	nmOffSeq         = 32
	nmOffNext        = 40
	nmOffM           = 48
	nmOffN           = 56
	nmOffNoObjects   = 64
	nmOffNoKeys      = 72
	nmOffDataEnd     = 80
	nmOffRootOff     = 88
	nmOffRootLen     = 96
	nmOffRootSum     = 104
	nmOffFreeOff     = 112
	nmOffFreeLen     = 120
	nmOffFreeSum     = 128
	nmOffVerifiedGen = 144
	nmOffFlags       = 152
)

// nativeMeta is a decoded meta record (§4.2).
type nativeMeta struct {
	fileID      uint64
	gen         uint64
	seq         uint64 // the last sequence number issued before this checkpoint
	next, m, n  uint64
	noObjects   uint64
	noKeys      uint64
	dataEnd     uint64
	rootOff     uint64
	rootLen     uint64
	rootSum     uint64
	freeOff     uint64
	freeLen     uint64
	freeSum     uint64
	verifiedGen uint64
	flags       uint64
}

// encode writes the whole meta page (record and zeros) into
// b[:nativePageSize], the form in which it goes to disk in one pwrite.
func (m *nativeMeta) encode(b []byte) {
	b = b[:nativePageSize]
	clear(b)
	le.PutUint32(b[nmOffMagic:], nativeMetaMagic)
	le.PutUint32(b[nmOffSize:], nativeMetaSize)
	for _, f := range [...]struct {
		off int
		v   uint64
	}{
		{nmOffFileID, m.fileID}, {nmOffGen, m.gen}, {nmOffSeq, m.seq}, {nmOffNext, m.next},
		{nmOffM, m.m}, {nmOffN, m.n}, {nmOffNoObjects, m.noObjects}, {nmOffNoKeys, m.noKeys},
		{nmOffDataEnd, m.dataEnd}, {nmOffRootOff, m.rootOff}, {nmOffRootLen, m.rootLen},
		{nmOffRootSum, m.rootSum}, {nmOffFreeOff, m.freeOff}, {nmOffFreeLen, m.freeLen},
		{nmOffFreeSum, m.freeSum}, {nmOffVerifiedGen, m.verifiedGen}, {nmOffFlags, m.flags},
	} {
		le.PutUint64(b[f.off:], f.v)
	}
	le.PutUint64(b, xxhash.Sum64(b[8:nativeMetaSize]))
}

// decodeNativeMeta decodes and validates the meta page at off (len(b) >=
// nativeMetaSize) of a file with superblock s and fileSize bytes. A meta
// that fails is a *CorruptionError in section "meta": the other meta may
// still be valid (§4.2), so the caller decides what the failure means.
func decodeNativeMeta(path string, b []byte, off int64, s *nativeSuper, fileSize int64) (nativeMeta, error) {
	var m nativeMeta
	if len(b) < nativeMetaSize {
		return m, corrupt(path, "meta", off, "short meta page")
	}
	b = b[:nativeMetaSize]
	if le.Uint64(b) != xxhash.Sum64(b[8:]) {
		return m, corrupt(path, "meta", off, "checksum mismatch")
	}
	if le.Uint32(b[nmOffMagic:]) != nativeMetaMagic || le.Uint32(b[nmOffSize:]) != nativeMetaSize {
		return m, corrupt(path, "meta", off, "bad magic or size")
	}
	u := func(o int) uint64 { return le.Uint64(b[o:]) }
	m = nativeMeta{
		fileID: u(nmOffFileID), gen: u(nmOffGen), seq: u(nmOffSeq), next: u(nmOffNext),
		m: u(nmOffM), n: u(nmOffN), noObjects: u(nmOffNoObjects), noKeys: u(nmOffNoKeys),
		dataEnd: u(nmOffDataEnd), rootOff: u(nmOffRootOff), rootLen: u(nmOffRootLen),
		rootSum: u(nmOffRootSum), freeOff: u(nmOffFreeOff), freeLen: u(nmOffFreeLen),
		freeSum: u(nmOffFreeSum), verifiedGen: u(nmOffVerifiedGen), flags: u(nmOffFlags),
	}
	if !allZero(b[136:nmOffVerifiedGen]) || !allZero(b[160:]) {
		return m, corrupt(path, "meta", off, "reserved bytes are not zero")
	}
	if msg := m.invalid(s, fileSize); msg != "" {
		return m, corrupt(path, "meta", off, "%s", msg)
	}
	return m, nil
}

// invalid checks a meta's fields against the superblock and the file size
// (§4.2, §5.3); "" when they are sound.
func (m *nativeMeta) invalid(s *nativeSuper, fileSize int64) string {
	inArea := func(off, n, align uint64) bool { // [off, off+n) lies in [base, dataEnd), aligned
		return off >= s.base && (off-s.base)%align == 0 && n <= m.dataEnd && off <= m.dataEnd-n
	}
	switch {
	case m.fileID != s.fileID:
		return "file id differs from the superblock's"
	case m.gen == 0:
		return "generation 0"
	case !isPow2u64(m.m) || m.m < s.minSlots || m.m > nativeMaxSlots:
		return fmt.Sprintf("M %d", m.m)
	case m.n%nativeSlotsPerSeg != 0 || m.n >= m.m || m.next != m.m+m.n || m.next > s.maxSlots:
		return fmt.Sprintf("M %d, N %d and next %d are inconsistent", m.m, m.n, m.next)
	case m.noObjects < m.noKeys:
		return "fewer objects than keys"
	case m.dataEnd < s.base || m.dataEnd > uint64(fileSize) || (m.dataEnd-s.base)%nativePageSize != 0:
		return fmt.Sprintf("end of data %d (file size %d)", m.dataEnd, fileSize)
	case m.rootLen != nativeRootLen(m.next) || !inArea(m.rootOff, m.rootLen, nativePageSize):
		return fmt.Sprintf("root at %d, %d bytes", m.rootOff, m.rootLen)
	case m.freeLen < nativeFreeHeader || m.freeLen%8 != 0 || !inArea(m.freeOff, m.freeLen, nativePageSize):
		return fmt.Sprintf("free record at %d, %d bytes", m.freeOff, m.freeLen)
	case m.verifiedGen > m.gen:
		return "verified generation above the generation"
	case m.flags&^(metaFlagClose|metaFlagRecovery) != 0:
		return fmt.Sprintf("unknown flags %#x", m.flags)
	}
	return ""
}

// nativeRootLen is the root's length for a table of next slots: 16 bytes
// for each part that holds a slot below next.
func nativeRootLen(next uint64) uint64 {
	return 16 * ((next + nativeSlotsPerPart - 1) / nativeSlotsPerPart)
}

// chooseNativeMeta picks the current meta from the two pages' results: the
// valid one with the higher gen (§4.2, bbolt's rule). ok is false when
// neither is valid, or when the invalid one is sealed (its checksum holds,
// so decodeNativeMeta filled its gen) with the higher gen: a torn write
// fails the checksum, so a sealed meta that fails is damage (a file cut
// short after its checkpoint, most often), and the older meta would
// silently drop what the newer one committed. fallbackOK says whether the
// other one is valid. Two valid metas of one gen cannot come from one
// writer; the first (page A) wins so that the choice is deterministic.
func chooseNativeMeta(a nativeMeta, errA error, b nativeMeta, errB error) (cur nativeMeta, curPage int64, fallbackOK, ok bool) {
	switch {
	case errA == nil && errB != nil && b.gen > a.gen, errB == nil && errA != nil && a.gen > b.gen:
		return nativeMeta{}, 0, false, false
	case errA == nil && errB == nil:
		if b.gen > a.gen {
			return b, nativeMetaBOff, true, true
		}
		return a, nativeMetaAOff, true, true
	case errA == nil:
		return a, nativeMetaAOff, false, true
	case errB == nil:
		return b, nativeMetaBOff, false, true
	}
	return nativeMeta{}, 0, false, false
}

// nativeMetaErr is why chooseNativeMeta found no current meta: the failure
// of page A, or of page B when A is the valid, older one.
func nativeMetaErr(errA, errB error) error {
	if errA != nil {
		return errA
	}
	return errB
}

func isPow2u64(v uint64) bool { return v != 0 && v&(v-1) == 0 }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
