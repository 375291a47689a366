package etf

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
)

// The limits of OTP 25's binary_to_term, one case each, as this package
// must reproduce them. TestLimits runs every walker over the table;
// TestOTPLimits asks a real erl, so that the table is a record of OTP's
// behaviour and not of our beliefs.

type limitCase struct {
	name string
	enc  []byte
	ok   bool // one complete term for binary_to_term
	// differs, when set, is the reason in our error for deliberately
	// refusing what OTP reads.
	differs string
	// crashes: OTP reads it, then segfaults on the term (TestOTPLimits
	// asks erl only whether binary_to_term succeeds).
	crashes bool
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// cat joins byte strings; a string part is taken as its bytes.
func cat(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case []byte:
			b = append(b, v...)
		case string:
			b = append(b, v...)
		case int:
			b = append(b, byte(v))
		case byte:
			b = append(b, v)
		default:
			panic("cat: bad part")
		}
	}
	return b
}

// ext is a complete encoding: the version byte, then parts.
func ext(parts ...any) []byte { return cat(append([]any{131}, parts...)...) }

func atomExt(s string) []byte { return cat(tagAtom, u16(uint16(len(s))), s) }

func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = append(b, u32(w)...)
	}
	return b
}

func floatExt(s string) []byte {
	return ext(tagFloat, s, make([]byte, floatExtLen-len(s)))
}

// limitPid is an external NEW_PID_EXT for the slots that want a pid.
var limitPid = cat(tagNewPid, atomExt("a@h"), words(1, 0, 0))

// newFunExt builds NEW_FUN_EXT with a correct Size field, plus sizeDelta.
func newFunExt(sizeDelta int, arity byte, numFree uint32, module, oldIndex, oldUniq, pid, free []byte) []byte {
	body := cat(int(arity), make([]byte, 16), u32(0), u32(numFree), module, oldIndex, oldUniq, pid, free)
	return ext(tagNewFun, u32(uint32(len(body)+4+sizeDelta)), body)
}

func plainFun(sizeDelta int) []byte {
	return newFunExt(sizeDelta, 1, 0, atomExt("m"), []byte{97, 0}, []byte{97, 0}, limitPid, nil)
}

func deflateRaw(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func limitCases() []limitCase {
	a := atomExt("a@h")
	local := atomExt(localNode)
	var cs []limitCase
	add := func(name string, ok bool, enc []byte) { cs = append(cs, limitCase{name: name, enc: enc, ok: ok}) }
	differ := func(name, why string, enc []byte) {
		cs = append(cs, limitCase{name: name, enc: enc, differs: why})
	}
	crash := func(name string, enc []byte) {
		cs = append(cs, limitCase{name: name, enc: enc, differs: funCreatorReason, crashes: true})
	}

	// References.
	for n := range 7 {
		ids := bytes.Repeat(u32(1), n)
		add("NEW_REFERENCE_EXT words "+strconv.Itoa(n), n >= 1 && n <= 5, ext(tagNewReference, u16(uint16(n)), a, 0, ids))
		add("NEWER_REFERENCE_EXT words "+strconv.Itoa(n), n >= 1 && n <= 5, ext(tagNewerReference, u16(uint16(n)), a, u32(0), ids))
	}
	// OTP reads a first ID word even where there is none.
	add("NEWER_REFERENCE_EXT words 0, in a tuple", false, ext(tagSmallTuple, 2, tagNewerReference, u16(0), a, u32(0), tagSmallInteger, 7))
	add("NEW_REFERENCE_EXT first word 18 bits", true, ext(tagNewReference, u16(1), a, 0, words(1<<18-1)))
	add("NEW_REFERENCE_EXT first word 19 bits", false, ext(tagNewReference, u16(1), a, 0, words(1<<18)))
	add("NEW_REFERENCE_EXT second word 32 bits", true, ext(tagNewReference, u16(2), a, 0, words(1, 1<<32-1)))
	add("NEWER_REFERENCE_EXT first word 32 bits", true, ext(tagNewerReference, u16(2), a, u32(0), words(1<<32-1, 5)))
	add("NEW_REFERENCE_EXT creation 3", true, ext(tagNewReference, u16(1), a, 3, words(1)))
	add("NEW_REFERENCE_EXT creation 4", false, ext(tagNewReference, u16(1), a, 4, words(1)))
	add("REFERENCE_EXT creation 3", true, ext(tagReference, a, words(1), 3))
	add("REFERENCE_EXT creation 4", false, ext(tagReference, a, words(1), 4))
	add("REFERENCE_EXT word 18 bits", true, ext(tagReference, a, words(1<<18-1), 0))
	add("REFERENCE_EXT word 19 bits", false, ext(tagReference, a, words(1<<18), 0))
	add("NEWER_REFERENCE_EXT creation 32 bits", true, ext(tagNewerReference, u16(1), a, u32(1<<32-1), words(1)))

	// Pids and ports of other nodes.
	add("PID_EXT creation 3", true, ext(tagPid, a, words(0x7fff, 0x1fff), 3))
	add("PID_EXT creation 4", false, ext(tagPid, a, words(0, 0), 4))
	add("PID_EXT 32-bit number", true, ext(tagPid, a, words(1<<32-1, 1<<32-1), 0))
	add("NEW_PID_EXT all ones", true, ext(tagNewPid, a, words(1<<32-1, 1<<32-1, 1<<32-1)))
	add("PORT_EXT creation 4", false, ext(tagPort, a, words(0), 4))
	add("PORT_EXT 32-bit number", true, ext(tagPort, a, words(1<<32-1), 3))
	add("NEW_PORT_EXT all ones", true, ext(tagNewPort, a, words(1<<32-1, 1<<32-1)))
	add("V4_PORT_EXT all ones", true, ext(tagV4Port, a, u64(1<<64-1), words(1<<32-1)))

	// Terms of the local node nonode@nohost, creation 0.
	add("local pid 15/13 bits", true, ext(tagNewPid, local, words(0x7fff, 0x1fff, 0)))
	add("local pid number 16 bits", false, ext(tagNewPid, local, words(0x8000, 0, 0)))
	add("local pid serial 14 bits", false, ext(tagNewPid, local, words(0, 0x2000, 0)))
	add("local PID_EXT number 16 bits", false, ext(tagPid, local, words(0x8000, 0), 0))
	add("nonode pid creation 1", true, ext(tagPid, local, words(0x8000, 1<<32-1), 1))
	add("nonode pid creation 5", true, ext(tagNewPid, local, words(1<<32-1, 1<<32-1, 5)))
	add("local pid, UTF-8 node atom", false, ext(tagNewPid, tagSmallAtomUTF8, len(localNode), localNode, words(1<<28, 0, 0)))
	add("local pid, SMALL_ATOM node", false, ext(tagNewPid, tagSmallAtom, len(localNode), localNode, words(1<<28, 0, 0)))
	add("local V4_PORT_EXT 28 bits", true, ext(tagV4Port, local, u64(1<<28-1), words(0)))
	add("local V4_PORT_EXT 29 bits", false, ext(tagV4Port, local, u64(1<<28), words(0)))
	add("local NEW_PORT_EXT 29 bits", false, ext(tagNewPort, local, words(1<<28, 0)))
	add("local PORT_EXT 29 bits", false, ext(tagPort, local, words(1<<28), 0))
	for n := range 6 {
		ids := words(1, 2, 3, 4, 5)[:4*n]
		add("local reference words "+strconv.Itoa(n), n >= 1 && n <= 3, ext(tagNewerReference, u16(uint16(n)), local, u32(0), ids))
	}
	add("local NEW_REFERENCE_EXT 4 words", false, ext(tagNewReference, u16(4), local, 0, words(1, 2, 3, 4)))
	add("local reference first word 19 bits", false, ext(tagNewerReference, u16(3), local, u32(0), words(1<<18, 0, 0)))
	add("local reference later words 32 bits", true, ext(tagNewerReference, u16(3), local, u32(0), words(1, 1<<32-1, 1<<32-1)))
	add("local REFERENCE_EXT", true, ext(tagReference, local, words(1<<18-1), 0))

	// Node atoms.
	add("node ''", true, ext(tagNewPid, atomExt(""), words(1, 0, 0)))
	add("node SMALL_ATOM_UTF8", true, ext(tagNewPid, tagSmallAtomUTF8, 3, "a@h", words(1, 0, 0)))
	add("node Latin-1", true, ext(tagNewPid, tagAtom, u16(1), 0xe9, words(1, 0, 0)))
	add("node bad UTF-8", false, ext(tagNewPid, tagSmallAtomUTF8, 1, 0xff, words(1, 0, 0)))
	add("node 256 characters", false, ext(tagNewPid, tagAtomUTF8, u16(256), strings.Repeat("x", 256), words(1, 0, 0)))
	add("node an integer", false, ext(tagNewPid, tagSmallInteger, 1, words(1, 0, 0)))
	add("node ATOM_CACHE_REF", false, ext(tagNewPid, tagAtomCacheRef, 0, words(1, 0, 0)))

	// Atoms.
	x := func(n int) string { return strings.Repeat("x", n) }
	emoji := func(n int) string { return strings.Repeat("\U0001F600", n) }
	add("ATOM_EXT 255", true, ext(tagAtom, u16(255), x(255)))
	add("ATOM_EXT 256", false, ext(tagAtom, u16(256), x(256)))
	add("ATOM_UTF8_EXT 255 4-byte characters", true, ext(tagAtomUTF8, u16(1020), emoji(255)))
	add("ATOM_UTF8_EXT 256 4-byte characters", false, ext(tagAtomUTF8, u16(1024), emoji(256)))
	add("ATOM_UTF8_EXT 256 ASCII", false, ext(tagAtomUTF8, u16(256), x(256)))
	add("UTF-8 overlong 2", false, ext(tagSmallAtomUTF8, 2, 0xc0, 0x80))
	add("UTF-8 overlong 3", false, ext(tagSmallAtomUTF8, 3, 0xe0, 0x80, 0x80))
	add("UTF-8 surrogate", false, ext(tagSmallAtomUTF8, 3, 0xed, 0xa0, 0x80))
	add("UTF-8 above U+10FFFF", false, ext(tagSmallAtomUTF8, 4, 0xf4, 0x90, 0x80, 0x80))
	add("UTF-8 U+10FFFF", true, ext(tagSmallAtomUTF8, 4, 0xf4, 0x8f, 0xbf, 0xbf))
	add("UTF-8 U+FFFE", true, ext(tagSmallAtomUTF8, 3, 0xef, 0xbf, 0xbe))
	add("UTF-8 lone continuation", false, ext(tagSmallAtomUTF8, 1, 0x80))
	add("UTF-8 F5 lead", false, ext(tagSmallAtomUTF8, 4, 0xf5, 0x80, 0x80, 0x80))
	add("UTF-8 NUL", true, ext(tagSmallAtomUTF8, 1, 0))
	add("Latin-1 NUL", true, ext(tagAtom, u16(1), 0))
	differ("ATOM_INTERNAL_REF2", internalRefReason, ext(tagAtomInternalRef2, u16(0)))
	differ("ATOM_INTERNAL_REF3", internalRefReason, ext(tagAtomInternalRef3, 0, 0, 1))
	differ("ATOM_INTERNAL_REF2 as a node", internalRefReason, ext(tagNewPid, tagAtomInternalRef2, u16(0), words(1, 0, 0)))
	add("ATOM_INTERNAL_REF2 beyond the table", false, ext(tagAtomInternalRef2, u16(0xffff)))

	// Floats.
	for _, bits := range []uint64{0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000, 0x7ff0000000000001} {
		add("NEW_FLOAT_EXT not finite", false, ext(tagNewFloat, u64(bits)))
	}
	add("NEW_FLOAT_EXT -0.0", true, ext(tagNewFloat, u64(1<<63)))
	add("NEW_FLOAT_EXT denormal", true, ext(tagNewFloat, u64(1)))
	for _, s := range []string{"1.0", "1,5", "+1.5", "-1.5", "1.5e+3", "1.5E-3", "1.0e-400", "2.0e-320",
		"1.0e308", "0.0", "-0.0", "00001.5", "1.5e00000000000000000000003", "1.5e-9999999999999999999999",
		"1.7976931348623157e308", "1.7976931348623158e308", "2.00000000000000000000e+00"} {
		add("FLOAT_EXT "+s, true, floatExt(s))
	}
	for _, s := range []string{"1e5", "1.e5", ".5", "5.", " 1.5", "1.5 ", "1.5e", "1.5e+", "1.0e400", "",
		"inf", "nan", "0x1.0", "1_0.0", "1.5e3.", "1.5ee3", "1.5e9999999999999999999999",
		"1.7976931348623159e308", "1..5", "1.5e3e3", "--1.5", "1.-5"} {
		add("FLOAT_EXT "+s, false, floatExt(s))
	}
	add("FLOAT_EXT junk after NUL", true, ext(tagFloat, "1.5", 0, strings.Repeat("z", 27)))
	add("FLOAT_EXT without NUL", false, ext(tagSmallTuple, 2, tagFloat, "1."+strings.Repeat("0", 29), tagSmallInteger, 1))

	// Bit strings and bignums.
	bits := func(n, b int, last byte) []byte {
		return ext(tagBitBinary, u32(uint32(n)), b, bytes.Repeat([]byte{last}, n))
	}
	add("BIT_BINARY_EXT empty, 0 bits", true, bits(0, 0, 0))
	add("BIT_BINARY_EXT empty, 1 bit", false, bits(0, 1, 0))
	add("BIT_BINARY_EXT empty, 8 bits", false, bits(0, 8, 0))
	add("BIT_BINARY_EXT 0 bits", false, bits(1, 0, 0))
	add("BIT_BINARY_EXT unused bits set", true, bits(1, 1, 0xff))
	add("BIT_BINARY_EXT 8 bits", true, bits(1, 8, 0xff))
	add("BIT_BINARY_EXT 9 bits", false, bits(1, 9, 0))
	add("SMALL_BIG_EXT empty", true, ext(tagSmallBig, 0, 0))
	add("SMALL_BIG_EXT empty negative", true, ext(tagSmallBig, 0, 1))
	add("SMALL_BIG_EXT sign 2", true, ext(tagSmallBig, 1, 2, 1))
	add("SMALL_BIG_EXT sign 255", true, ext(tagSmallBig, 1, 255, 1))
	add("SMALL_BIG_EXT leading zeros", true, ext(tagSmallBig, 10, 0, make([]byte, 10)))
	add("SMALL_BIG_EXT 2^63", true, ext(tagSmallBig, 8, 0, u64(0x80)))
	add("LARGE_BIG_EXT 5", true, ext(tagLargeBig, u32(1), 0, 5))
	big := func(n int) []byte { return ext(tagLargeBig, u32(uint32(n)), 0, make([]byte, n-1), 1) }
	add("LARGE_BIG_EXT largest", true, big(maxBigBytes))
	add("LARGE_BIG_EXT beyond the largest", false, big(maxBigBytes+1))
	add("LARGE_BIG_EXT beyond, all zero", false, ext(tagLargeBig, u32(maxBigBytes+1), 0, make([]byte, maxBigBytes+1)))

	// Maps.
	sint := func(v int) []byte { return []byte{tagSmallInteger, byte(v)} }
	m := func(pairs ...[]byte) []byte { return ext(tagMap, u32(uint32(len(pairs)/2)), cat(anys(pairs)...)) }
	add("map duplicate keys", false, m(sint(1), sint(2), sint(1), sint(3)))
	add("map 1 and 1.0", true, m(sint(1), sint(2), cat(tagNewFloat, u64(0x3ff0000000000000)), sint(3)))
	add("map Latin-1 and UTF-8 atom keys", false, m(atomExt("a"), sint(2), cat(tagSmallAtomUTF8, 1, "a"), sint(3)))
	add("map unsorted keys", true, m(sint(2), sint(2), sint(1), sint(3)))
	add("map 1 and SMALL_BIG 1", false, m(sint(1), sint(2), cat(tagSmallBig, 1, 0, 1), sint(3)))
	add("map 0.0 and -0.0", false, m(cat(tagNewFloat, u64(0)), sint(2), cat(tagNewFloat, u64(1<<63)), sint(3)))
	var many [][]byte
	for i := 1; i <= 32; i++ {
		many = append(many, sint(i), sint(0))
	}
	add("map of 33 keys, one twice", false, m(append(many, sint(5), sint(0))...))
	add("map of duplicate pids", false, m(limitPid, sint(1), cat(tagPid, a, words(1, 0), 0), sint(2)))

	// Exports.
	exp := func(arity ...any) []byte { return ext(tagExport, atomExt("m"), atomExt("f"), cat(arity...)) }
	add("EXPORT_EXT", true, exp(tagSmallInteger, 2))
	add("EXPORT_EXT INTEGER_EXT arity", true, exp(tagInteger, u32(2)))
	add("EXPORT_EXT arity 100000", true, exp(tagInteger, u32(100000)))
	add("EXPORT_EXT negative arity", false, exp(tagInteger, u32(1<<32-1)))
	add("EXPORT_EXT SMALL_BIG_EXT arity", true, exp(tagSmallBig, 1, 0, 2))
	add("EXPORT_EXT arity 2^59-1", true, exp(tagSmallBig, 8, 0, binary.LittleEndian.AppendUint64(nil, 1<<59-1)))
	add("EXPORT_EXT arity 2^59", false, exp(tagSmallBig, 8, 0, binary.LittleEndian.AppendUint64(nil, 1<<59)))
	add("EXPORT_EXT arity -0", true, exp(tagSmallBig, 1, 1, 0))
	add("EXPORT_EXT LARGE_BIG_EXT arity", true, exp(tagLargeBig, u32(4), 0, 255, 255, 255, 255))
	add("EXPORT_EXT float arity", false, exp(tagNewFloat, u64(0x4000000000000000)))
	add("EXPORT_EXT atom arity", false, exp(atomExt("f")))
	add("EXPORT_EXT UTF-8 atoms", true, ext(tagExport, tagSmallAtomUTF8, 1, "m", tagAtomUTF8, u16(1), "f", tagSmallInteger, 1))
	add("EXPORT_EXT module an integer", false, ext(tagExport, tagSmallInteger, 1, atomExt("f"), tagSmallInteger, 1))
	add("EXPORT_EXT module bad UTF-8", false, ext(tagExport, tagSmallAtomUTF8, 1, 0xff, atomExt("f"), tagSmallInteger, 1))

	// Funs.
	mod := atomExt("m")
	zero := []byte{tagSmallInteger, 0}

	// Map keys that OTP takes as one fun: only module, Index, OldUniq (in
	// 32 bits) and the free variables count; exports by module, function
	// and arity (in 32 bits).
	fun := func(sizeDelta int, arity byte, index uint32, oldIndex, oldUniq, pid, free []byte) []byte {
		body := cat(int(arity), bytes.Repeat([]byte{7}, 16), u32(index), u32(uint32(len(free)/2)), mod, oldIndex, oldUniq, pid, free)
		return cat(tagNewFun, u32(uint32(len(body)+4+sizeDelta)), body)
	}
	f1 := fun(0, 1, 3, sint(5), sint(9), limitPid, sint(42))
	other := cat(tagPid, a, words(7, 0), 1)
	add("map of one fun twice (Size, Arity, OldIndex, creator)", false, m(f1, sint(1), fun(2, 2, 3, sint(6), sint(9), other, sint(42)), sint(2)))
	add("map of one fun twice (OldUniq 9 and 2^32+9)", false, m(f1, sint(1), fun(0, 1, 3, sint(5), cat(tagSmallBig, 5, 0, 9, 0, 0, 0, 1), limitPid, sint(42)), sint(2)))
	add("map of funs of another Index", true, m(f1, sint(1), fun(0, 1, 4, sint(5), sint(9), limitPid, sint(42)), sint(2)))
	add("map of funs of another OldUniq", true, m(f1, sint(1), fun(0, 1, 3, sint(5), sint(10), limitPid, sint(42)), sint(2)))
	add("map of funs of another free variable", true, m(f1, sint(1), fun(0, 1, 3, sint(5), sint(9), limitPid, sint(43)), sint(2)))
	add("map of one export twice (arity 2 and 2^32+2)", false, m(exp(tagSmallInteger, 2)[1:], sint(1), exp(tagSmallBig, 5, 0, 2, 0, 0, 0, 1)[1:], sint(2)))
	add("map of one export twice (UTF-8 atoms)", false, m(exp(tagInteger, u32(2))[1:], sint(1),
		cat(tagExport, tagSmallAtomUTF8, 1, "m", tagSmallAtomUTF8, 1, "f", tagSmallInteger, 2), sint(2)))
	add("map of an export and a fun", true, m(exp(tagSmallInteger, 2)[1:], sint(1), f1, sint(2)))
	// OTP orders funs by the 32-bit difference of Index, then of OldUniq,
	// which overflows for values 2^31 or more apart: exactly 2^31 apart,
	// each fun is less than the other, and the map binary_to_term builds
	// depends on the order of the pairs. Decode refuses such keys.
	fIdx := func(index uint32) []byte { return fun(0, 1, index, sint(5), sint(9), limitPid, sint(42)) }
	fUniq := func(u uint32) []byte { return fun(0, 1, 3, sint(5), cat(tagInteger, u32(u)), limitPid, sint(42)) }
	add("map of funs of Index 2^31-1 apart", true, m(fIdx(0), sint(1), fIdx(1<<31-1), sint(2)))
	differ("map of funs of Index 2^31 apart", funKeyOrderReason, m(fIdx(0), sint(1), fIdx(1<<31), sint(2)))
	differ("map of funs of Index 2^31 apart, swapped", funKeyOrderReason, m(fIdx(1<<31), sint(1), fIdx(0), sint(2)))
	differ("map of funs of Index 2^32-2 apart", funKeyOrderReason, m(fIdx(1<<31-1), sint(1), fIdx(1<<31+1), sint(2)))
	differ("map of funs of OldUniq 2^31 apart", funKeyOrderReason, m(fUniq(0), sint(1), fUniq(1<<31), sint(2)))
	add("map of funs of OldUniq 2^31 apart, Index apart", true, m(fIdx(0), sint(1), fun(0, 1, 4, sint(5), cat(tagInteger, u32(1<<31)), limitPid, sint(42)), sint(2)))
	differ("map of tuples of funs of Index 2^31 apart", funKeyOrderReason, m(cat(tagSmallTuple, 1, fIdx(0)), sint(1), cat(tagSmallTuple, 1, fIdx(1<<31)), sint(2)))
	add("tuple of funs of Index 2^31 apart", true, ext(tagSmallTuple, 2, fIdx(0), fIdx(1<<31)))
	// TestOTPMutants, seed 1796218435900672236: two funs of Index 0 and
	// 2^31 (arity 0 and 6, with one OldUniq in 5 and in 6 bytes).
	differ("map of funs of Index 2^31 apart (mutant)", funKeyOrderReason, hx("8374000000027000000051000000000000000000000000000000000000000000"+
		"000000007703612e626e020014006f0000000500d2d80fd2545864000e6240686f73742e6578616d706c650004000000"+
		"000000bd77825946c084200000000000700000005006000000000000000000000000000000008000000000000000640003"+
		"612e626f000000020014006e0600d2d80fd2540058730e6240686f73742e6578616d706c65b072827f0000000007a5ea4d"+
		"4d00000002060078"))
	add("NEW_FUN_EXT", true, plainFun(0))
	for _, d := range []int{-1, 1, -10} {
		add("NEW_FUN_EXT Size off by "+strconv.Itoa(d), true, plainFun(d))
	}
	add("NEW_FUN_EXT Size 0", true, withSize(plainFun(0), 0))
	add("NEW_FUN_EXT Size 2^32-1", true, withSize(plainFun(0), 1<<32-1))
	add("NEW_FUN_EXT one free variable", true, newFunExt(0, 1, 1, mod, zero, zero, limitPid, sint(5)))
	add("NEW_FUN_EXT 255 free variables", true, newFunExt(0, 1, 255, mod, zero, zero, limitPid, bytes.Repeat(sint(5), 255)))
	add("NEW_FUN_EXT 256 free variables", false, newFunExt(0, 1, 256, mod, zero, zero, limitPid, bytes.Repeat(sint(5), 256)))
	add("NEW_FUN_EXT free variable invalid", false, newFunExt(0, 1, 1, mod, zero, zero, limitPid, []byte{0}))
	add("NEW_FUN_EXT arity 255", true, newFunExt(0, 255, 0, mod, zero, zero, limitPid, nil))
	add("NEW_FUN_EXT OldIndex negative INTEGER_EXT", true, newFunExt(0, 1, 0, mod, cat(tagInteger, u32(1<<32-5)), zero, limitPid, nil))
	add("NEW_FUN_EXT OldIndex SMALL_BIG_EXT", true, newFunExt(0, 1, 0, mod, cat(tagSmallBig, 1, 0, 5), zero, limitPid, nil))
	le := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	add("NEW_FUN_EXT OldIndex 2^59-1", true, newFunExt(0, 1, 0, mod, cat(tagSmallBig, 8, 0, le(1<<59-1)), zero, limitPid, nil))
	add("NEW_FUN_EXT OldIndex 2^59", false, newFunExt(0, 1, 0, mod, cat(tagSmallBig, 8, 0, le(1<<59)), zero, limitPid, nil))
	add("NEW_FUN_EXT OldIndex -2^59", true, newFunExt(0, 1, 0, mod, cat(tagSmallBig, 8, 1, le(1<<59)), zero, limitPid, nil))
	add("NEW_FUN_EXT OldIndex -2^59-1", false, newFunExt(0, 1, 0, mod, cat(tagSmallBig, 8, 1, le(1<<59+1)), zero, limitPid, nil))
	add("NEW_FUN_EXT OldUniq a float", false, newFunExt(0, 1, 0, mod, zero, cat(tagNewFloat, u64(0x3ff0000000000000)), limitPid, nil))
	add("NEW_FUN_EXT OldUniq an atom", false, newFunExt(0, 1, 0, mod, zero, atomExt("x"), limitPid, nil))
	add("NEW_FUN_EXT PID_EXT creator", true, newFunExt(0, 1, 0, mod, zero, zero, cat(tagPid, a, words(1, 0), 0), nil))
	add("NEW_FUN_EXT PID_EXT creator creation 4", false, newFunExt(0, 1, 0, mod, zero, zero, cat(tagPid, a, words(1, 0), 4), nil))
	add("NEW_FUN_EXT local creator out of range", false, newFunExt(0, 1, 0, mod, zero, zero, cat(tagNewPid, local, words(0xffff, 0, 0)), nil))
	for _, c := range []struct {
		name string
		pid  []byte
	}{{"an atom", atomExt("x")}, {"an integer", sint(1)}, {"[]", []byte{tagNil}}, {"a tuple", []byte{tagSmallTuple, 0}},
		{"a float", cat(tagNewFloat, u64(0x3ff0000000000000))}, {"an export", cat(exp(tagSmallInteger, 1)[1:])},
		{"a local port", cat(tagNewPort, local, words(1, 0))}, {"a local reference", cat(tagNewerReference, u16(3), local, words(0, 1, 2, 3))}} {
		crash("NEW_FUN_EXT creator "+c.name, newFunExt(0, 1, 0, mod, zero, zero, c.pid, nil))
	}
	differ("NEW_FUN_EXT creator a port", funCreatorReason, newFunExt(0, 1, 0, mod, zero, zero, cat(tagNewPort, a, words(1, 0)), nil))
	differ("NEW_FUN_EXT creator a reference", funCreatorReason, newFunExt(0, 1, 0, mod, zero, zero, cat(tagNewerReference, u16(1), a, words(0, 1)), nil))
	add("NEW_FUN_EXT creator invalid", false, newFunExt(0, 1, 0, mod, zero, zero, []byte{0}, nil))
	add("NEW_FUN_EXT module UTF-8", true, newFunExt(0, 1, 0, cat(tagSmallAtomUTF8, 1, "m"), zero, zero, limitPid, nil))
	add("NEW_FUN_EXT module an integer", false, newFunExt(0, 1, 0, sint(1), zero, zero, limitPid, nil))
	add("NEW_FUN_EXT module ATOM_CACHE_REF", false, newFunExt(0, 1, 0, []byte{tagAtomCacheRef, 0}, zero, zero, limitPid, nil))
	add("FUN_EXT", false, ext(tagFun, u32(0), limitPid, mod, zero, zero))
	add("FUN_EXT with a free variable", false, ext(tagFun, u32(1), limitPid, mod, zero, zero, sint(1)))

	// Lists, tuples and the envelope.
	add("LIST_EXT of 0 with a tail", true, ext(tagList, u32(0), sint(1)))
	add("LIST_EXT improper", true, ext(tagList, u32(1), sint(1), sint(2)))
	add("LIST_EXT tail a list", true, ext(tagList, u32(1), sint(1), tagList, u32(1), sint(2), tagNil))
	add("STRING_EXT empty", true, ext(tagString, u16(0)))
	add("LARGE_TUPLE_EXT empty", true, ext(tagLargeTuple, u32(0)))
	for _, tag := range []int{0, 68, 69, 71, 72, 74, 76, 78, 79, 81, 83, 84, 85, 86, 87, 91, 92, 96, 121, 122, 255} {
		add("tag "+strconv.Itoa(tag), false, ext(tag, make([]byte, 8)))
	}
	add("version byte inside", false, ext(tagSmallTuple, 1, 131, tagSmallInteger, 1))
	add("no version byte", false, []byte{tagSmallInteger, 1})
	add("version 130", false, []byte{130, tagSmallInteger, 1})
	add("trailing bytes", false, ext(tagSmallInteger, 1, 0))
	body := []byte{tagSmallInteger, 1}
	z := zlibBytes(body)
	add("compressed", true, ext(tagCompressed, u32(2), z))
	add("compressed size too large", false, ext(tagCompressed, u32(3), z))
	add("compressed size too small", false, ext(tagCompressed, u32(1), z))
	add("compressed size 0", false, ext(tagCompressed, u32(0), zlibBytes(nil)))
	add("compressed trailing after the stream", false, ext(tagCompressed, u32(2), z, 0))
	add("compressed trailing after the term", false, ext(tagCompressed, u32(3), zlibBytes([]byte{tagSmallInteger, 1, 0})))
	add("compressed nested", false, ext(tagCompressed, u32(8), zlibBytes(cat(tagCompressed, u32(2), body, 0))))
	add("compressed version inside", false, ext(tagCompressed, u32(3), zlibBytes(cat(131, body))))
	add("compressed raw deflate", false, ext(tagCompressed, u32(2), deflateRaw(body)))
	add("compressed gzip", false, ext(tagCompressed, u32(2), gzipBytes(body)))
	bad := bytes.Clone(z)
	bad[len(bad)-1] ^= 1
	add("compressed bad checksum", false, ext(tagCompressed, u32(2), bad))
	add("compressed truncated", false, ext(tagCompressed, u32(2), z[:len(z)-1]))

	// Nesting deeper than MaxDepth, which OTP reads (deep_test.go).
	const deepWhy = "nested deeper than"
	leaf := atomExt("x")
	differ("list nested past MaxDepth", deepWhy, deepList(MaxDepth+1, leaf))
	differ("tuple nested past MaxDepth", deepWhy, deepTuple(MaxDepth+1, leaf))
	differ("pairs nested past MaxDepth", deepWhy, deepPairs(MaxDepth+1, leaf))
	differ("map past MaxDepth", deepWhy, deepList(MaxDepth+1, cat(tagMap, u32(1), leaf, leaf)))
	differ("fun whose free variable is nested past MaxDepth", deepWhy,
		newFunExt(0, 0, 1, atomExt("m"), cat(tagSmallInteger, 0), cat(tagSmallInteger, 0), limitPid, deepList(MaxDepth, leaf)[1:]))
	differ("compressed list nested past MaxDepth", deepWhy,
		ext(tagCompressed, u32(uint32(len(deepList(MaxDepth+1, leaf))-1)), zlibBytes(deepList(MaxDepth+1, leaf)[1:])))
	add("list nested past MaxDepth, then a bad tag", false, append(deepList(MaxDepth+1, leaf)[:len(deepList(MaxDepth+1, leaf))-1], 99))
	add("list split into LIST_EXT tails", true, splitList(3*MaxDepth))
	return cs
}

func anys(bs [][]byte) []any {
	out := make([]any, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

func withSize(fun []byte, size uint32) []byte {
	out := bytes.Clone(fun)
	binary.BigEndian.PutUint32(out[2:], size)
	return out
}

func TestLimits(t *testing.T) {
	var bd RawBatch
	for _, c := range limitCases() {
		got, problems := walkerVerdict(&bd, c.enc)
		for _, p := range problems {
			t.Errorf("%s (%s): %s", c.name, shortHex(c.enc), p)
		}
		if got != c.ok {
			t.Errorf("%s (%s): accepted %v, want %v", c.name, shortHex(c.enc), got, c.ok)
		}
		if _, err := Decode(c.enc); c.differs != "" && (err == nil || !strings.Contains(err.Error(), c.differs)) {
			t.Errorf("%s: error %v, want one giving %q", c.name, err, c.differs)
		}
	}
}
