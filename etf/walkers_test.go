package etf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/godets/godets/internal/testutil"
)

// Every function that walks encoded bytes must accept exactly what Decode
// accepts. walkerVerdict runs them all over one input; the mutation tests
// here and in mutant_otp_test.go feed it random damage of valid encodings.

// walkerVerdict reports whether Decode accepts b, and every way in which
// another walker (Validate, DecodeOne, RawBatch, DecodeBody,
// TupleElement, Phash2Body, CompareBodies, and Encode of the result)
// disagrees with it.
func walkerVerdict(bd *RawBatch, b []byte) (bool, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	term, err := Decode(b)
	ok := err == nil
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrDecode) {
			bad("Decode error %T %v is not a *DecodeError", err, err)
		}
		if strings.Contains(err.Error(), "\n") {
			bad("Decode error %q is not one line", err)
		}
	}
	same := func(name string, e error) {
		if (e == nil) != ok {
			bad("%s says %v, Decode %v", name, e, err)
		}
	}
	verr := Validate(b)
	same("Validate", verr)
	switch {
	case errors.Is(verr, ErrTooDeep):
		// Sound but for its nesting: Decode names the same byte.
		if verr.Error() != err.Error() {
			bad("Validate error %q, Decode %q", verr, err)
		}
	case errors.Is(err, ErrTooDeep):
		// Decode stops at the first byte too deep; Validate walks on
		// to the damage.
		if verr == nil {
			bad("Validate accepts a term Decode calls too deep")
		}
	case verr != nil && err != nil && verr.Error() != err.Error():
		bad("Validate error %q, Decode %q", verr, err)
	}
	one, oerr := raw.DecodeOne(b)
	same("DecodeOne", oerr)
	if oerr == nil && ok && (len(one) != 1 || !Equal(one[0], term)) {
		bad("DecodeOne gives another term")
	}
	bt, berr := bd.Decode(b)
	same("RawBatch.Decode", berr)
	if berr == nil && ok && !Equal(bt, term) {
		bad("RawBatch.Decode gives another term")
	}
	if len(b) >= 2 && b[0] == tagVersion && b[1] != tagCompressed {
		walkBody(b, ok, term, bad)
	}
	if ok {
		enc, eerr := Encode(term)
		if eerr != nil {
			bad("the decoded term does not encode: %v", eerr)
		} else if back, err := Decode(enc); err != nil || !Equal(back, term) || Phash2(back) != Phash2(term) {
			bad("the re-encoding %s decodes to another term (%v)", shortHex(enc), err)
		}
	}
	return ok, problems
}

// walkBody checks the functions on bodies of an uncompressed encoding b,
// of which Decode said ok (with term).
func walkBody(b []byte, ok bool, term Term, bad func(string, ...any)) {
	body := b[1:]
	bt, berr := raw.DecodeBody(body)
	if (berr == nil) != ok {
		bad("DecodeBody says %v, Decode the opposite", berr)
	}
	if berr == nil && ok && !Equal(bt, term) {
		bad("DecodeBody gives another term")
	}
	if h, hok := raw.Phash2Body(body); hok && (!ok || h != Phash2(term)) {
		bad("Phash2Body hashes to %d, Decode accepts %v", h, ok)
	}
	if c, cok := raw.CompareBodies(body, body); cok && (!ok || c != 0) {
		bad("CompareBodies of the body with itself: %d, Decode accepts %v", c, ok)
	}
	if body[0] != tagSmallTuple && body[0] != tagLargeTuple {
		return
	}
	_, _, arity, hok := headerOf(body)
	if !hok {
		return
	}
	if !ok {
		// Walking every element to the end is validating the whole.
		if arity > 0 && arity < 1<<16 {
			// Except for a sound term too deep for Decode.
			if _, end, tok := raw.TupleElement(b, int(arity)); tok && end == len(b) && !errors.Is(Validate(b), ErrTooDeep) {
				bad("TupleElement walks all of an encoding that Decode refuses")
			}
		}
		return
	}
	tup, isTuple := term.(Tuple)
	if !isTuple {
		bad("a tuple encoding decodes to %T", term)
		return
	}
	for pos := 1; pos <= len(tup); pos++ {
		s, e, tok := raw.TupleElement(b, pos)
		if !tok {
			bad("raw.TupleElement(%d) fails on a valid tuple", pos)
			return
		}
		if el, err := raw.DecodeBody(b[s:e]); err != nil || !Equal(el, tup[pos-1]) {
			bad("raw.TupleElement(%d) spans another term (%v)", pos, err)
		}
		if pos == len(tup) && e != len(b) {
			bad("the last element ends at %d of %d", e, len(b))
		}
	}
}

// Random encodings, in more forms than Encode writes: FLOAT_EXT text,
// atoms in every tag, non-canonical bignums, bit strings with unused bits
// set, pids, ports, references, exports and funs near OTP's limits, and
// compressed terms.

var mutantNodes = []string{"a@h", localNode, localNode, "b@host.example", "", "é@h"}

// nearLimits are ID values around the bit widths that OTP checks.
var nearLimits = []uint32{0, 1, 2, 3, 4, 1<<13 - 1, 1 << 13, 1<<15 - 1, 1 << 15, 1<<18 - 1, 1 << 18, 1<<28 - 1, 1 << 28, 1<<32 - 1}

func nearLimit(r *rand.Rand) uint32 {
	if r.Intn(4) == 0 {
		return r.Uint32()
	}
	return nearLimits[r.Intn(len(nearLimits))]
}

// atomBody encodes s in a random one of the atom tags that can hold it.
func atomBody(r *rand.Rand, s string) []byte {
	latin1 := utf8.ValidString(s)
	var l1 []byte
	for _, c := range s {
		if c > 0xff {
			latin1 = false
		}
		l1 = append(l1, byte(c))
	}
	switch k := r.Intn(4); {
	case k == 0 && latin1:
		return cat(tagAtom, u16(uint16(len(l1))), l1)
	case k == 1 && latin1 && len(l1) < 256:
		return cat(tagSmallAtom, len(l1), l1)
	case k == 2 || len(s) > 255:
		return cat(tagAtomUTF8, u16(uint16(len(s))), s)
	}
	return cat(tagSmallAtomUTF8, len(s), s)
}

func randomOpaqueBody(r *rand.Rand) []byte {
	node := atomBody(r, mutantNodes[r.Intn(len(mutantNodes))])
	tiny := byte(r.Intn(5))
	wide := []uint32{0, 0, 1, 5, r.Uint32()}[r.Intn(5)]
	switch r.Intn(10) {
	case 0:
		return cat(tagPid, node, u32(nearLimit(r)), u32(nearLimit(r)), tiny)
	case 1:
		return cat(tagNewPid, node, u32(nearLimit(r)), u32(nearLimit(r)), u32(wide))
	case 2:
		return cat(tagPort, node, u32(nearLimit(r)), tiny)
	case 3:
		return cat(tagNewPort, node, u32(nearLimit(r)), u32(wide))
	case 4:
		return cat(tagV4Port, node, u64(uint64(nearLimit(r))<<(32*r.Intn(2))), u32(wide))
	case 5:
		return cat(tagReference, node, u32(nearLimit(r)), tiny)
	case 6, 7:
		n := r.Intn(7)
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = nearLimit(r)
		}
		if r.Intn(2) == 0 {
			return cat(tagNewReference, u16(uint16(n)), node, tiny, words(ids...))
		}
		return cat(tagNewerReference, u16(uint16(n)), node, u32(wide), words(ids...))
	case 8:
		return cat(tagExport, atomBody(r, string(randomAtom(r))), atomBody(r, string(randomAtom(r))), intBody(r, int64(r.Intn(300))))
	default:
		free := r.Intn(3)
		var vars []byte
		for range free {
			vars = append(vars, randomBody(r, 0)...)
		}
		var pid []byte
		if r.Intn(4) == 0 {
			pid = randomBody(r, 0)
		} else {
			pid = cat(tagNewPid, node, u32(nearLimit(r)), u32(nearLimit(r)), u32(wide))
		}
		fun := newFunExt(0, byte(r.Intn(256)), uint32(free), atomBody(r, string(randomAtom(r))),
			intBody(r, int64(r.Intn(1000))), intBody(r, r.Int63n(1<<40)-1<<39), pid, vars)
		return fun[1:]
	}
}

// intBody encodes i in a random one of the integer encodings that can
// hold it, bignums with leading zeros sometimes.
func intBody(r *rand.Rand, i int64) []byte {
	switch r.Intn(4) {
	case 0:
		if i >= 0 && i < 256 {
			return []byte{tagSmallInteger, byte(i)}
		}
	case 1:
		if i == int64(int32(i)) {
			return cat(tagInteger, u32(uint32(i)))
		}
	}
	u := abs64(i)
	mag := binary.LittleEndian.AppendUint64(nil, u)
	mag = mag[:magnitudeBytes64(u)+r.Intn(2)]
	sign := b2i(i < 0)
	if sign == 1 && r.Intn(3) == 0 {
		sign = 2 + r.Intn(254) // any nonzero sign byte is negative
	}
	if r.Intn(3) == 0 {
		return cat(tagLargeBig, u32(uint32(len(mag))), sign, mag)
	}
	return cat(tagSmallBig, len(mag), sign, mag)
}

// twinBodies returns two encodings of one random term, often different
// bytes for what OTP takes as the same term (map keys that collide).
func twinBodies(r *rand.Rand) ([]byte, []byte) {
	node := mutantNodes[r.Intn(len(mutantNodes))]
	id, serial, creation := nearLimit(r), nearLimit(r), uint32(r.Intn(4))
	switch r.Intn(6) {
	case 0:
		i := r.Int63() >> r.Intn(63)
		return intBody(r, i), intBody(r, i)
	case 1:
		a := string(randomAtom(r))
		return atomBody(r, a), atomBody(r, a)
	case 2:
		pid := func() []byte {
			if r.Intn(2) == 0 {
				return cat(tagPid, atomBody(r, node), u32(id), u32(serial), byte(creation))
			}
			return cat(tagNewPid, atomBody(r, node), u32(id), u32(serial), u32(creation))
		}
		return pid(), pid()
	case 3:
		ref := func() []byte {
			switch r.Intn(3) {
			case 0:
				return cat(tagReference, atomBody(r, node), u32(id), byte(creation))
			case 1:
				return cat(tagNewReference, u16(2), atomBody(r, node), byte(creation), u32(id), u32(0))
			}
			return cat(tagNewerReference, u16(1), atomBody(r, node), u32(creation), u32(id))
		}
		return ref(), ref()
	case 4:
		m, f, arity := string(randomAtom(r)), string(randomAtom(r)), int64(r.Intn(300))
		exp := func() []byte { return cat(tagExport, atomBody(r, m), atomBody(r, f), intBody(r, arity)) }
		return exp(), exp()
	default:
		m, oldIndex, oldUniq, numFree := string(randomAtom(r)), int64(r.Intn(50)), r.Int63n(1<<40), r.Intn(2)
		free := randomBody(r, 0)
		fun := func() []byte {
			pid := cat(tagNewPid, atomBody(r, node), u32(nearLimit(r)), u32(0), u32(r.Uint32()))
			f := newFunExt(r.Intn(3)-1, byte(r.Intn(4)), uint32(numFree), atomBody(r, m),
				intBody(r, oldIndex), intBody(r, oldUniq), pid, bytes.Repeat(free, numFree))
			return f[1:]
		}
		return fun(), fun()
	}
}

// randomBody returns one term body in one of the less common encodings.
func randomBody(r *rand.Rand, depth int) []byte {
	if r.Intn(12) == 0 {
		// A map of two keys that may be one term in two encodings.
		k1, k2 := twinBodies(r)
		if r.Intn(4) == 0 {
			_, k2 = twinBodies(r)
		}
		return cat(tagMap, u32(2), k1, randomBody(r, 0), k2, randomBody(r, 0))
	}
	switch r.Intn(9) {
	case 0, 1:
		enc, err := Encode(randomTerm(r, depth))
		if err != nil {
			panic(err)
		}
		return enc[1:]
	case 2:
		return randomOpaqueBody(r)
	case 3:
		s := []byte(fmt.Sprintf("%.20e", float64(randomFloat(r))))
		return cat(tagFloat, s, make([]byte, floatExtLen-len(s)))
	case 4:
		return atomBody(r, string(randomAtom(r)))
	case 5:
		return intBody(r, r.Int63()>>r.Intn(63)*int64(1-2*r.Intn(2)))
	case 6:
		b := randomBitstring(r)
		data := bytes.Clone(b.Bytes)
		data[len(data)-1] |= byte(r.Intn(256)) >> b.Bits // unused bits, which OTP ignores
		return cat(tagBitBinary, u32(uint32(len(data))), int(b.Bits), data)
	case 7:
		if depth <= 0 {
			return []byte{tagNil}
		}
		n := r.Intn(3)
		b := cat(tagList, u32(uint32(n)))
		for range n {
			b = append(b, randomBody(r, depth-1)...)
		}
		return append(b, randomBody(r, depth-1)...) // any tail
	default:
		if depth <= 0 {
			return []byte{tagSmallTuple, 0}
		}
		n := r.Intn(4)
		b := []byte{tagSmallTuple, byte(n)}
		for range n {
			b = append(b, randomBody(r, depth-1)...)
		}
		return b
	}
}

// randomEncoding returns a complete encoding, sometimes compressed.
func randomEncoding(r *rand.Rand) []byte {
	body := randomBody(r, 3)
	if r.Intn(12) == 0 {
		return ext(tagCompressed, u32(uint32(len(body))), zlibBytes(body))
	}
	return ext(body)
}

// interestingBytes are values that cross OTP's limits or make tags.
var interestingBytes = []byte{0, 1, 2, 3, 4, 5, 0x7f, 0x80, 0xfe, 0xff,
	tagNewFloat, tagBitBinary, tagCompressed, tagAtomCacheRef, tagNewPid, tagNewPort, tagNewerReference,
	tagAtomInternalRef2, tagAtomInternalRef3, tagVersion, tagV4Port, tagFun, tagNewFun, tagExport, tagMap}

func init() {
	for tag := byte(tagSmallInteger); tag <= tagSmallAtomUTF8; tag++ {
		interestingBytes = append(interestingBytes, tag)
	}
}

// mutateEncoding damages a copy of b once or twice: a flipped bit, a
// changed byte, a cut, inserted or deleted bytes, a length field made
// larger or smaller, or a piece copied from elsewhere.
func mutateEncoding(r *rand.Rand, b []byte) []byte {
	m := bytes.Clone(b)
	for range 1 + r.Intn(2) {
		m = mutateOnce(r, m)
	}
	return m
}

func mutateOnce(r *rand.Rand, m []byte) []byte {
	if len(m) < 2 {
		return append(m, interestingBytes[r.Intn(len(interestingBytes))])
	}
	i := 1 + r.Intn(len(m)-1)
	if r.Intn(64) == 0 {
		i = 0
	}
	switch r.Intn(8) {
	case 0, 1:
		m[i] ^= 1 << r.Intn(8)
	case 2:
		m[i] = interestingBytes[r.Intn(len(interestingBytes))]
	case 3:
		return m[:i]
	case 4:
		ins := make([]byte, 1+r.Intn(3))
		r.Read(ins)
		return append(m[:i], append(ins, m[i:]...)...)
	case 5:
		return append(m[:i], m[min(len(m), i+1+r.Intn(3)):]...)
	case 6:
		w := 2 << r.Intn(2) // a 16- or 32-bit length field
		if i+w > len(m) {
			return m
		}
		v := uint32(0)
		for _, c := range m[i : i+w] {
			v = v<<8 | uint32(c)
		}
		v = []uint32{v + 1, v - 1, v + 2, v * 2, 0, 1<<(8*w) - 1, v + 256}[r.Intn(7)]
		for k := w - 1; k >= 0; k-- {
			m[i+k] = byte(v)
			v >>= 8
		}
	default:
		j := r.Intn(len(m))
		piece := bytes.Clone(m[j:min(len(m), j+1+r.Intn(8))])
		return append(m[:i], append(piece, m[i:]...)...)
	}
	return m
}

// TestMutantsWalkersAgree: on random damage of valid encodings, every
// walker accepts or refuses as Decode does (no OTP needed; the OTP
// differential is TestOTPMutants).
func TestMutantsWalkersAgree(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewSource(seed))
	n := 50000
	if testing.Short() {
		n = 5000
	}
	var bd RawBatch
	accepted, failures := 0, 0
	for i := range n {
		base := randomEncoding(r)
		m := base
		if i%8 != 0 { // an eighth stay undamaged
			m = mutateEncoding(r, base)
		}
		ok, problems := walkerVerdict(&bd, m)
		if ok {
			accepted++
		}
		for _, p := range problems {
			failures++
			if failures <= 20 {
				t.Errorf("mutant %s of %s: %s", shortHex(m), shortHex(base), p)
			}
		}
	}
	t.Logf("%d of %d inputs accepted", accepted, n)
	if failures > 0 {
		t.Errorf("%d disagreements (seed %d)", failures, seed)
	}
}
