package etf

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// erlang:phash2 is Bob Jenkins' lookup2 mixing applied along a walk of the
// term (OTP's make_hash2). The constants are multiples of the golden ratio
// 0x9e3779b9; each term type mixes with its own multiple so that, say, the
// tuple {} and the integer 0 do not collide.
const (
	hconst   uint32 = 0x9e3779b9
	hconst2  uint32 = 0x3c6ef372
	hconst3  uint32 = 0xdaa66d2b
	hconst4  uint32 = 0x78dde6e4
	hconst5  uint32 = 0x1715609d
	hconst6  uint32 = 0xb54cda56
	hconst7  uint32 = 0x5384540f
	hconst9  uint32 = 0x8ff34781
	hconst10 uint32 = 0x2e2ac13a
	hconst11 uint32 = 0xcc623af3
	hconst12 uint32 = 0x6a99b4ac
	hconst13 uint32 = 0x08d12e65
	hconst14 uint32 = 0xa708a81e
	hconst15 uint32 = 0x454021d7
	hconst16 uint32 = 0xe3779b90
	hconst19 uint32 = 0xbe1e08bb

	// nilHash is what [] hashes to when nothing has been mixed yet.
	nilHash uint32 = 3468870702
	// nilDef is OTP's internal type number for [], mixed in otherwise.
	nilDef uint32 = 2

	phash2Mask = 1<<27 - 1
	// smallHashLimit: integers in [-2^27, 2^27) hash as one signed word.
	smallHashLimit = 1 << 27
)

// Phash2 returns erlang:phash2(T): a 27-bit hash of the term that is equal
// for Equal terms and identical to OTP's for every modelled type. DETS
// (format 9) places keys by it.
//
// Opaque terms hash as in OTP 25 too: pids by their number, ports by
// their ID, references by their first ID word (node and creation do not
// take part), and funs by module, arity or free-variable count, index and
// uniq, then their free variables. Only the pre-R8 FUN_EXT encoding (tag
// 117, which OTP 25 no longer reads) hashes over its raw bytes instead.
//
// Phash2 does not allocate, except to decode the free variables of a fun.
func Phash2(t Term) uint32 { return hash2(t, 0) & phash2Mask }

// Phash2Range returns erlang:phash2(T, N), a hash in [0, n). OTP accepts
// 1 <= n <= 2^32; here n == 0 and n > 2^32 are treated as 2^32 (the full
// 32-bit hash) rather than failing.
func Phash2Range(t Term, n uint64) uint32 {
	h := hash2(t, 0)
	if n == 0 || n >= 1<<32 {
		return h
	}
	return uint32(uint64(h) % n)
}

// mix is lookup2's mix(a, b, c); it returns the new c.
func mix(a, b, c uint32) uint32 {
	_, _, c = mix3(a, b, c)
	return c
}

func uint32Hash2(x, y, k, h uint32) uint32 { return mix(k+x, k+y, h) }

func uint32Hash(x, k, h uint32) uint32 { return mix(k+x, k, h) }

func sint32Hash(x int32, h uint32) uint32 {
	if x < 0 {
		// OTP mixes negative numbers twice: first their magnitude.
		h = uint32Hash(uint32(-x), hconst, h)
	}
	return uint32Hash(uint32(x), hconst, h)
}

// blockHash is lookup2's hash over bytes, seeded with init.
func blockHash(k []byte, init uint32) uint32 {
	a, b, c := hconst, hconst, init
	n := len(k)
	for len(k) >= 12 {
		a += binary.LittleEndian.Uint32(k[0:])
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = mix3(a, b, c)
		k = k[12:]
	}
	c += uint32(n)
	switch len(k) {
	case 11:
		c += uint32(k[10]) << 24
		fallthrough
	case 10:
		c += uint32(k[9]) << 16
		fallthrough
	case 9:
		c += uint32(k[8]) << 8
		fallthrough
	case 8:
		b += uint32(k[7]) << 24
		fallthrough
	case 7:
		b += uint32(k[6]) << 16
		fallthrough
	case 6:
		b += uint32(k[5]) << 8
		fallthrough
	case 5:
		b += uint32(k[4])
		fallthrough
	case 4:
		a += uint32(k[3]) << 24
		fallthrough
	case 3:
		a += uint32(k[2]) << 16
		fallthrough
	case 2:
		a += uint32(k[1]) << 8
		fallthrough
	case 1:
		a += uint32(k[0])
	}
	return mix(a, b, c)
}

// mix3 is lookup2's mix, returning all three words (needed between blocks).
func mix3(a, b, c uint32) (uint32, uint32, uint32) {
	a -= b
	a -= c
	a ^= c >> 13
	b -= c
	b -= a
	b ^= a << 8
	c -= a
	c -= b
	c ^= b >> 13
	a -= b
	a -= c
	a ^= c >> 12
	b -= c
	b -= a
	b ^= a << 16
	c -= a
	c -= b
	c ^= b >> 5
	a -= b
	a -= c
	a ^= c >> 3
	b -= c
	b -= a
	b ^= a << 10
	c -= a
	c -= b
	c ^= b >> 15
	return a, b, c
}

// atomHash is OTP's atom table hash (hashpjw over the UTF-8 text), with
// the twist that two-byte UTF-8 sequences for U+0080..U+00FF count as the
// single Latin-1 byte, so Latin-1 atoms keep their pre-UTF-8 hash.
func atomHash(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		v := uint32(s[i])
		if i+1 < len(s) && v&0xFE == 0xC2 && s[i+1]&0xC0 == 0x80 {
			v = (v<<6 | uint32(s[i+1])&0x3F) & 0xFF
			i++
		}
		h = h<<4 + v
		if g := h & 0xf0000000; g != 0 {
			h ^= g >> 24
			h ^= g
		}
	}
	return h
}

func hashInt64(x int64, h uint32) uint32 {
	if x >= -smallHashLimit && x < smallHashLimit {
		return sint32Hash(int32(x), h)
	}
	k := hconst11
	if x < 0 {
		k = hconst10
	}
	u := abs64(x)
	return uint32Hash2(uint32(u), uint32(u>>32), k, h)
}

func hashBig(x *BigInt, h uint32) uint32 {
	if x.v.IsInt64() {
		return hashInt64(x.v.Int64(), h)
	}
	k := hconst11
	if x.v.Sign() < 0 {
		k = hconst10
	}
	// One 64-bit limb at a time, least significant first.
	words := x.v.Bits()
	if bits.UintSize == 64 {
		for _, w := range words {
			h = uint32Hash2(uint32(w), uint32(uint64(w)>>32), k, h)
		}
		return h
	}
	for i := 0; i < len(words); i += 2 {
		var hi uint32
		if i+1 < len(words) {
			hi = uint32(words[i+1])
		}
		h = uint32Hash2(uint32(words[i]), hi, k, h)
	}
	return h
}

// hashBits hashes the first nbits bits of data (int64: 8 times a length
// overflows int on 32-bit platforms).
func hashBits(data []byte, nbits int64, h uint32) uint32 {
	full := int(nbits / 8)
	rem := int(nbits % 8)
	con := hconst13 + h
	if nbits == 0 {
		return con
	}
	h = blockHash(data[:full], con)
	if rem > 0 {
		h = uint32Hash2(uint32(rem), uint32(data[full]>>(8-rem)), hconst15, h)
	}
	return h
}

// hash2 mixes t into the running hash h.
func hash2(t Term, h uint32) uint32 {
	switch v := t.(type) {
	case Atom:
		if h == 0 {
			return atomHash(string(v))
		}
		return uint32Hash(atomHash(string(v)), hconst3, h)
	case Int:
		return hashInt64(int64(v), h)
	case *BigInt:
		if v == nil {
			return h
		}
		return hashBig(v, h)
	case Float:
		f := float64(v)
		if f == 0 {
			f = 0 // -0.0 hashes as 0.0, as they are =:= in OTP 25
		}
		u := math.Float64bits(f)
		return uint32Hash2(uint32(u>>32), uint32(u), hconst12, h)
	case Binary:
		return hashBits(v, 8*int64(len(v)), h)
	case Bitstring:
		data, n := bitsOf(v)
		return hashBits(data, n, h)
	case Tuple:
		h = uint32Hash(uint32(len(v)), hconst9, h)
		for _, e := range v {
			h = hash2(e, h)
		}
		return h
	case List:
		if len(v) == 0 {
			return hashNil(h)
		}
		return hashList(v, h)
	case *ImproperList:
		if v == nil {
			return h
		}
		return hashList(v, h)
	case Map:
		h = uint32Hash(uint32(len(v)), hconst16, h)
		if len(v) == 0 {
			return h
		}
		// Pairs hash independently and combine with xor, so order
		// does not matter.
		var x uint32
		for _, p := range v {
			x ^= hash2(p.Value, hash2(p.Key, 0))
		}
		return uint32Hash(x, hconst19, h)
	case *Opaque:
		if v == nil {
			return h
		}
		return hashOpaque(v.Raw, h)
	}
	return h
}

func hashNil(h uint32) uint32 {
	if h == 0 {
		return nilHash
	}
	return uint32Hash(nilDef, hconst2, h)
}

// hashList follows OTP: runs of small integers 0..255 are packed four to
// a word; any other element is hashed on its own and the rest of the list
// starts a new run; finally the tail is hashed.
func hashList(t Term, h uint32) uint32 {
	c := newListCursor(t)
	for len(c.elems) > 0 {
		var sh uint32
		n := 0
		for len(c.elems) > 0 {
			i, ok := c.elems[0].(Int)
			if !ok || i < 0 || i > 255 {
				break
			}
			sh = sh<<8 + uint32(i)
			if n == 3 {
				h = uint32Hash(sh, hconst4, h)
				sh, n = 0, 0
			} else {
				n++
			}
			c.elems = c.elems[1:]
			c.fill()
		}
		if n > 0 {
			h = uint32Hash(sh, hconst4, h)
		}
		if len(c.elems) == 0 {
			break
		}
		h = hash2(c.elems[0], h)
		c.elems = c.elems[1:]
		c.fill()
	}
	if c.tail == nil {
		return hashNil(h)
	}
	return hash2(c.tail, h)
}

// hashOpaque hashes a pid, port, reference or fun as OTP does: by the
// pid's ID word, the port's ID, a reference's first ID word, or a fun's
// module, arity/free-variable count, index and uniq, then its free
// variables. The node name and creation do not take part. Raw was
// validated by Decode or Encode; anything unexpected falls back to a
// plain byte hash so that Phash2 stays total.
func hashOpaque(raw []byte, h uint32) uint32 {
	fallback := func() uint32 { return blockHash(raw, hconst13+h) }
	d := decoder{b: raw}
	if len(raw) == 0 {
		return fallback()
	}
	tag := d.u8()
	u32 := func() (uint32, bool) {
		if len(d.b)-d.off < 4 {
			return 0, false
		}
		return d.u32(), true
	}
	switch tag {
	case tagPid, tagNewPid:
		if _, _, err := d.atomBytes(); err != nil {
			return fallback()
		}
		id, ok := u32()
		if !ok {
			return fallback()
		}
		return uint32Hash(id, hconst5, h)
	case tagPort, tagNewPort, tagV4Port:
		if _, _, err := d.atomBytes(); err != nil {
			return fallback()
		}
		hi, ok := u32()
		if !ok {
			return fallback()
		}
		if tag != tagV4Port {
			return uint32Hash(hi, hconst6, h)
		}
		lo, ok := u32()
		if !ok {
			return fallback()
		}
		return uint32Hash2(lo, hi, hconst6, h)
	case tagReference, tagNewReference, tagNewerReference:
		creation := 0
		switch tag {
		case tagNewReference:
			d.off += 2
			creation = 1
		case tagNewerReference:
			d.off += 2
			creation = 4
		}
		if d.off > len(d.b) {
			return fallback()
		}
		if _, _, err := d.atomBytes(); err != nil {
			return fallback()
		}
		d.off += creation
		id, ok := u32()
		if !ok || d.off > len(d.b) {
			return fallback()
		}
		return uint32Hash(id, hconst7, h)
	case tagExport:
		mod, err1 := d.atom()
		fun, err2 := d.atom()
		if err1 != nil || err2 != nil {
			return fallback()
		}
		arity, err := d.smallInt("export arity", 0)
		if err != nil || d.off != len(d.b) {
			return fallback()
		}
		// OTP keeps the arity in 32 bits.
		h = uint32Hash2(uint32(arity), atomHash(string(mod)), hconst, h)
		return uint32Hash(atomHash(string(fun)), hconst14, h)
	case tagNewFun:
		if len(d.b) < 1+4+1+16+4+4 {
			return fallback()
		}
		d.off = 1 + 4 + 1 + 16
		index, _ := u32()
		numFree, _ := u32()
		mod, err := d.atom()
		if err != nil {
			return fallback()
		}
		var oldUniq uint32
		for i := range 2 {
			t, err := d.term(0)
			n, ok := t.(Int)
			if err != nil || !ok {
				return fallback()
			}
			if i == 1 {
				oldUniq = uint32(n)
			}
		}
		if err := d.skip(0); err != nil { // the creator pid
			return fallback()
		}
		h = uint32Hash2(numFree, atomHash(string(mod)), hconst, h)
		h = uint32Hash2(index, oldUniq, hconst, h)
		for range numFree {
			t, err := d.term(0)
			if err != nil {
				return fallback()
			}
			h = hash2(t, h)
		}
		return h
	}
	return fallback()
}
