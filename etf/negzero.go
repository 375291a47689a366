package etf

import "encoding/binary"

// negZeroBits is -0.0's NEW_FLOAT_EXT payload: the sign bit alone.
const negZeroBits = 1 << 63

// hasNegZero is Raw.HasNegativeZero. It walks the body with the tag table
// (headerOf) instead of recursing: in the external format a term's
// sub-terms follow its header in order, so a count of terms still to read
// is all the state a walk needs, and no nesting depth can grow the stack.
func hasNegZero(b []byte) (has, ok bool) {
	p, pending := 0, 1
	for pending > 0 {
		l, hdr, n, ok := headerOf(b[p:])
		if !ok {
			return false, false
		}
		pending--
		left := uint64(len(b) - p - hdr) // bytes after the header
		switch l.body {
		case bodyFixed:
			switch b[p] {
			case tagFloat:
				return false, false // FLOAT_EXT text: the caller decodes it
			case tagNewFloat:
				has = has || binary.BigEndian.Uint64(b[p+1:]) == negZeroBits
			}
		case bodyBytes:
			if n > left {
				return false, false
			}
			hdr += int(n)
		case bodyTerms, bodyList, bodyPairs:
			switch l.body {
			case bodyList:
				n++ // the tail
			case bodyPairs:
				n *= 2 // keys and values
			}
			if n > left { // every sub-term takes a byte at least
				return false, false
			}
			pending += int(n)
		default: // pids, ports, references, funs, and tags no file holds
			return false, false
		}
		p += hdr
	}
	if p != len(b) {
		return false, false
	}
	return has, true
}
