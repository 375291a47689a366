package etf

import "encoding/binary"

// Pids, ports, references, exports and funs are kept as their raw bytes
// (Opaque), but only after checking them against what OTP 25's
// binary_to_term accepts. These limits were found by feeding crafted
// encodings to erl; TestOTPLimits replays the table in limits_test.go
// against a real erl so that it stays true.
//
//   - The node is any atom (never ATOM_CACHE_REF), checked as atoms are.
//   - A one-byte creation (PID_EXT, PORT_EXT, REFERENCE_EXT,
//     NEW_REFERENCE_EXT) is at most 3.
//   - REFERENCE_EXT and NEW_REFERENCE_EXT keep their first ID word within
//     18 bits; NEWER_REFERENCE_EXT does not have to. NEW and NEWER
//     references have 1..5 ID words. (OTP reads a first word even when
//     there are none: the 4 bytes after the term, or past its end.)
//   - The local node of every non-distributed OTP is 'nonode@nohost' with
//     creation 0, so OTP checks such a term as one of its own: a pid's
//     number fits in 15 bits and its serial in 13, a port's number in 28
//     bits, and a reference has 1..3 ID words, the first within 18 bits.
//     A distributed node does the same for its own name, which a file
//     does not tell; those terms are checked as remote ones.
//   - EXPORT_EXT: module and function atoms, then an arity in any integer
//     encoding, from 0 to the largest small integer.
//   - NEW_FUN_EXT: OTP 25 ignores the Size field, and so does this; at most
//     255 free variables; OldIndex and OldUniq are integers in the small
//     range. OTP reads any term as the creator pid, but then crashes (a
//     segfault) encoding or hashing a fun whose creator is not a pid, and
//     silently turns another node's port or reference there into a pid:
//     here the creator must be a pid (funCreatorReason).
//   - FUN_EXT (funs from before R8) is refused: OTP 25 no longer reads it.
const (
	maxTinyCreation  = 3  // a creation stored in one byte
	maxRefWords      = 5  // ID words of NEW_ and NEWER_REFERENCE_EXT
	oldRefWordBits   = 18 // first ID word of REFERENCE_EXT and NEW_REFERENCE_EXT
	maxLocalRefWords = 3
	localPidNumBits  = 15
	localPidSerBits  = 13
	localPortNumBits = 28
	maxFunFree       = 255 // free variables of a fun
	// OTP's small integers (64-bit emulator): 60-bit signed. Export
	// arities and a fun's OldIndex and OldUniq must be small.
	minSmall = -1 << 59
	maxSmall = 1<<59 - 1
)

// funCreatorReason is why a fun whose creator is not a pid is refused,
// although OTP 25's binary_to_term reads it.
const funCreatorReason = "a fun's creator is not a pid (OTP 25 reads one, then crashes or garbles the fun)"

// refNoWordsReason is why a reference without ID words is refused: OTP
// reads a first word anyway, from the 4 bytes after the term (so that in
// a tuple it fails), or from beyond the end of the input.
const refNoWordsReason = "reference with no ID words (OTP reads one past the term)"

// localNode is the node name of every non-distributed OTP node.
const localNode = "nonode@nohost"

// skipOpaque validates the pid, port, reference or fun at d.off and moves
// past it.
func (d *decoder) skipOpaque(depth int) error {
	start := d.off
	tag := d.u8()
	switch tag {
	case tagPid, tagNewPid, tagPort, tagNewPort, tagV4Port:
		return d.identity(start, tag, 0)
	case tagReference:
		return d.identity(start, tag, 1)
	case tagNewReference, tagNewerReference:
		if err := d.need(2, "reference"); err != nil {
			return err
		}
		n := int(d.u16())
		if n == 0 {
			return d.errf(start, "%s", refNoWordsReason)
		}
		if n > maxRefWords {
			return d.errf(start, "reference with %d ID words (OTP reads at most %d)", n, maxRefWords)
		}
		return d.identity(start, tag, n)
	case tagExport:
		for range 2 {
			if _, _, err := d.atomName(); err != nil {
				return err
			}
		}
		arity, err := d.smallInt("export arity", depth)
		if err != nil {
			return err
		}
		if arity < 0 {
			return d.errf(start, "export arity %d is negative", arity)
		}
		return nil
	case tagNewFun:
		// Size:u32 Arity:u8 Uniq[16] Index:u32 NumFree:u32, then terms.
		if err := d.need(4+1+16+4+4, "NEW_FUN_EXT"); err != nil {
			return err
		}
		d.off += 4 + 1 + 16 + 4
		numFree := d.u32()
		if numFree > maxFunFree {
			return d.errf(start, "fun with %d free variables (OTP reads at most %d)", numFree, maxFunFree)
		}
		if _, _, err := d.atomName(); err != nil {
			return err
		}
		for _, what := range [...]string{"fun OldIndex", "fun OldUniq"} {
			if _, err := d.smallInt(what, depth); err != nil {
				return err
			}
		}
		if err := d.need(1, "fun creator"); err != nil {
			return err
		}
		if c := d.b[d.off]; c != tagPid && c != tagNewPid {
			return d.errf(d.off, "%s", funCreatorReason)
		}
		if err := d.skipOpaque(depth + 1); err != nil {
			return err
		}
		for range numFree {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case tagFun:
		return d.errf(start, "FUN_EXT (a fun from before OTP R8) is not read by OTP 25")
	}
	return d.errf(start, "unknown tag %d", tag)
}

// identity checks the node atom and fields of a pid, port or reference
// whose tag (at start) and, for NEW_ and NEWER_REFERENCE_EXT, word count
// have been read.
func (d *decoder) identity(start int, tag byte, words int) error {
	node, _, err := d.atomName()
	if err != nil {
		return err
	}
	size := identitySize(tag, words)
	if err := d.need(uint64(size), "pid, port or reference"); err != nil {
		return err
	}
	f := d.take(size)
	var id uint64
	var serial, creation uint32
	var ids []byte // a reference's ID words
	tiny := false  // a one-byte creation
	switch tag {
	case tagPid:
		id, serial, creation, tiny = uint64(be32(f)), be32(f[4:]), uint32(f[8]), true
	case tagNewPid:
		id, serial, creation = uint64(be32(f)), be32(f[4:]), be32(f[8:])
	case tagPort:
		id, creation, tiny = uint64(be32(f)), uint32(f[4]), true
	case tagNewPort:
		id, creation = uint64(be32(f)), be32(f[4:])
	case tagV4Port:
		id, creation = binary.BigEndian.Uint64(f), be32(f[8:])
	case tagReference:
		ids, creation, tiny = f[:4], uint32(f[4]), true
	case tagNewReference:
		ids, creation, tiny = f[1:], uint32(f[0]), true
	default: // tagNewerReference
		ids, creation = f[4:], be32(f)
	}
	if tiny && creation > maxTinyCreation {
		return d.errf(start, "creation %d in a one-byte field (OTP reads at most %d)", creation, maxTinyCreation)
	}
	local := creation == 0 && string(node) == localNode
	switch tag {
	case tagPid, tagNewPid:
		if local && (id>>localPidNumBits != 0 || serial>>localPidSerBits != 0) {
			return d.errf(start, "local pid <0.%d.%d> is beyond %d-bit numbers and %d-bit serials", id, serial, localPidNumBits, localPidSerBits)
		}
	case tagPort, tagNewPort, tagV4Port:
		if local && id>>localPortNumBits != 0 {
			return d.errf(start, "local port number %d is beyond %d bits", id, localPortNumBits)
		}
	default:
		if local && words > maxLocalRefWords {
			return d.errf(start, "local reference with %d ID words (OTP makes 1..%d)", words, maxLocalRefWords)
		}
		if len(ids) > 0 && (tag != tagNewerReference || local) && be32(ids)>>oldRefWordBits != 0 {
			return d.errf(start, "reference's first ID word %#x is beyond %d bits", be32(ids), oldRefWordBits)
		}
	}
	return nil
}

// identitySize is the size of a pid's, port's or reference's fields after
// its node atom.
func identitySize(tag byte, words int) int {
	switch tag {
	case tagPid:
		return 4 + 4 + 1
	case tagNewPid:
		return 4 + 4 + 4
	case tagPort, tagReference:
		return 4 + 1
	case tagNewPort:
		return 4 + 4
	case tagV4Port:
		return 8 + 4
	case tagNewReference:
		return 1 + 4*words
	default: // tagNewerReference
		return 4 + 4*words
	}
}

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// smallInt reads an integer term in OTP's small range, in any of the four
// integer encodings, where OTP requires one (what names the field).
func (d *decoder) smallInt(what string, depth int) (int64, error) {
	if err := d.need(1, what); err != nil {
		return 0, err
	}
	start := d.off
	switch tag := d.b[start]; tag {
	case tagSmallInteger, tagInteger, tagSmallBig, tagLargeBig:
	default:
		return 0, d.errf(start, "%s is not an integer (tag %d)", what, tag)
	}
	t, err := d.term(depth + 1)
	if err != nil {
		return 0, err
	}
	i, ok := t.(Int)
	if !ok || i < minSmall || i > maxSmall {
		return 0, d.errf(start, "%s is outside OTP's small integers", what)
	}
	return int64(i), nil
}
