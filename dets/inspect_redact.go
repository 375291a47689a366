package dets

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	"github.com/godets/godets/etf"
)

// Redaction (dets inspect --redact): a copy of a table file that keeps its
// structure and its damage but none of its data.
//
// Kept byte for byte: the header and part table, the trailer, the parts
// and segments, the free-list records, and in every bucket the bucket
// header, the record sizes and each object's tags, lengths and counts.
// Replaced, with the same number of bytes: every content byte of every
// object (etfItem kinds other than shapeBytes), in the buckets the slot
// table points to and in any other block that frames as a whole ACTIVE or
// FREE bucket (freed buckets keep their old objects). Zeroed: every other
// byte, that is the parts of blocks no bucket uses, and the objects and
// records that do not parse (damaged ones stay damaged: a zero byte is no
// term tag).
//
// The placeholders are an HMAC of the content under a key drawn for each
// redaction and then forgotten: equal contents get equal placeholders
// within one copy (so the objects of a bag's key group keep one key, and
// the counts hold), different ones almost surely differ, and nothing of
// the original can be recovered. Texts become letters, numbers other
// numbers, floats finite floats, identifiers in pids, ports, references
// and funs zeros. An object whose redaction does not decode (two map keys
// that became equal) is redrawn with another salt.
//
// What the copy cannot keep is everything the data decides: which slot a
// key hashes to, the order of keys in a bucket, whether two objects of a
// bag are equal. Table.CheckStructure checks everything else, and gives
// the original and its redacted copy the same verdict.

// ErrCannotRedact: an intact object whose content the redaction cannot
// tell from its shape (a compressed term); nothing is written.
var ErrCannotRedact = errors.New("dets: object cannot be redacted")

// RedactStats counts what a redaction replaced.
type RedactStats struct {
	Buckets      int64 // buckets whose objects were redacted
	Objects      int64 // objects redacted
	ContentBytes int64 // key and value bytes replaced
	ZeroedBytes  int64 // bytes outside the recognized structure, set to zero
}

// Redact returns a redacted copy of the image (see above). im is not
// changed.
func (im *Image) Redact() (*Image, RedactStats, error) {
	r, err := newRedactor(im.b, int64(im.h.keyPos))
	if err != nil {
		return nil, RedactStats{}, err
	}
	r.kind = im.kindOrGuess()
	size := int64(len(im.b))
	r.keep(0, baseAddr)
	r.keep(size-trailerSize, trailerSize)
	for _, p := range im.Parts() {
		if p.Bad == "" {
			r.keep(p.Addr, partSize)
		}
	}
	for _, s := range im.Segments() {
		if s.Bad == "" {
			r.keep(s.Addr, segmentSize)
		}
	}
	ls, flErr := im.FreeLists()
	end := int64(im.h.freelistsPtr)
	for _, l := range ls {
		n := int64(12 + 4*len(l.Addrs))
		r.keep(l.At, n)
		end = l.At + n
	}
	if flErr == nil {
		r.keep(end, 12) // the terminator
	}
	im.slots(func(e SlotEntry) {
		if err == nil && e.Size > 0 && im.inBlock(e.Ptr, e.Size) {
			_, err = r.bucket(e.Ptr, e.Size, false)
		}
	})
	if err != nil {
		return nil, RedactStats{}, err
	}
	// Blocks that frame as whole buckets outside the slot table: freed
	// buckets, or live ones a damaged segment no longer points to.
	for off := int64(baseAddr); off+bucketHeaderSize+5 <= size-trailerSize; off++ {
		if r.covered[off] {
			continue
		}
		st := be.Uint32(im.b[off+4:])
		if st != statusActive && st != statusFree {
			continue
		}
		n := int64(be.Uint32(im.b[off:]))
		if n < bucketHeaderSize+5 || off+n > size-trailerSize || r.anyCovered(off, n) {
			continue
		}
		if ok, _ := r.bucket(off, n, true); ok {
			off += n - 1
		}
	}
	r.zeroRest()
	out, err := NewImage(r.out)
	return out, r.stats, err
}

type redactor struct {
	src     []byte // the original file
	kind    Kind   // otp9: the bucket layout
	out     []byte
	covered []bool // bytes kept or replaced on purpose; the rest is zeroed
	key     [32]byte
	keyPos  int
	stats   RedactStats
}

// newRedactor starts the redaction of a copy of src, a table whose key
// position is keyPos (an unusable one counts as 1).
func newRedactor(src []byte, keyPos int64) (*redactor, error) {
	r := &redactor{src: src, out: append([]byte(nil), src...), covered: make([]bool, len(src)), keyPos: int(keyPos)}
	if _, err := rand.Read(r.key[:]); err != nil {
		return nil, err
	}
	if keyPos < 1 || keyPos > 1<<20 {
		r.keyPos = 1
	}
	return r, nil
}

// zeroRest zeroes every byte that no keep covered.
func (r *redactor) zeroRest() {
	for i, c := range r.covered {
		if !c && r.out[i] != 0 {
			r.out[i] = 0
			r.stats.ZeroedBytes++
		}
	}
}

func (r *redactor) keep(off, n int64) {
	off, end := max(off, 0), min(off+n, int64(len(r.covered)))
	for i := off; i < end; i++ {
		r.covered[i] = true
	}
}

func (r *redactor) anyCovered(off, n int64) bool {
	off, end := max(off, 0), min(off+n, int64(len(r.covered)))
	for i := off; i < end; i++ {
		if r.covered[i] {
			return true
		}
	}
	return false
}

// bucket redacts the bucket of n bytes at ptr. strict (a block found by
// the scan) redacts only a bucket whose every record and object parses,
// and reports whether it did; otherwise what parses is redacted and the
// rest is left to be zeroed. The error is ErrCannotRedact.
func (r *redactor) bucket(ptr, n int64, strict bool) (bool, error) {
	b := r.src
	type span struct{ off, n int64 }
	var sizes, objects []span
	ok := true
	records := func(off, end, minSize int64, fn func(off, n int64)) {
		for off < end {
			if end-off < 4 {
				ok = false
				return
			}
			m := int64(be.Uint32(b[off:]))
			sizes = append(sizes, span{off, 4})
			if m < minSize || off+m > end {
				ok = false
				return
			}
			fn(off, m)
			off += m
		}
	}
	body, end := ptr+bucketHeaderSize, ptr+n
	if r.kind == Set {
		records(body, end, 5, func(off, m int64) { objects = append(objects, span{off + 4, m - 4}) })
	} else {
		records(body, end, 9, func(off, m int64) {
			records(off+4, off+m, 5, func(o, k int64) { objects = append(objects, span{o + 4, k - 4}) })
		})
	}
	if strict {
		for _, o := range objects {
			w := etfWalker{b: b[o.off : o.off+o.n]}
			ok = ok && w.object() == nil
		}
		if !ok {
			return false, nil
		}
	}
	r.keep(ptr, bucketHeaderSize)
	for _, s := range sizes {
		r.keep(s.off, s.n)
	}
	for _, o := range objects {
		if err := r.object(o.off, o.n); err != nil {
			return false, err
		}
	}
	r.stats.Buckets++
	return true, nil
}

// object redacts one object's encoding of n bytes at off. An object that
// does not parse is left to be zeroed, but its version byte, unless it
// is an intact term the walk cannot read (ErrCannotRedact).
func (r *redactor) object(off, n int64) error {
	enc := r.src[off : off+n]
	var items []etfItem
	w := etfWalker{b: enc, fn: func(it etfItem) { items = append(items, it) }}
	if err := w.object(); err != nil {
		if etf.Validate(enc) == nil {
			return fmt.Errorf("%w at offset %d: %v", ErrCannotRedact, off, err)
		}
		if enc[0] == 131 {
			r.keep(off, 1)
		}
		return nil
	}
	ks, ke, isKey := encodings.TupleElement(enc, r.keyPos)
	inKey := func(it etfItem) bool { return isKey && it.off >= ks && it.off+it.n <= ke }
	dst := r.out[off : off+n]
	// The key first, alone, so that equal keys stay equal whatever the
	// rest of their objects; then the rest, until the object decodes.
	keySalt, salt := 0, 1
	if isKey {
		for ; keySalt < 16; keySalt++ {
			r.fill(dst, items, inKey, true, keySalt)
			if etf.Validate(append([]byte{131}, dst[ks:ke]...)) == nil {
				break
			}
		}
	}
	for ; salt < 16; salt++ {
		r.fill(dst, items, inKey, false, salt)
		if etf.Validate(dst) == nil {
			break
		}
	}
	if salt == 16 {
		return fmt.Errorf("%w at offset %d: no redaction of it decodes", ErrCannotRedact, off)
	}
	for _, it := range items {
		if it.kind != shapeBytes {
			r.stats.ContentBytes += int64(it.n)
		}
	}
	r.stats.Objects++
	r.keep(off, n)
	return nil
}

// fill writes the placeholders of the key's items (key true) or of the
// other items into dst.
func (r *redactor) fill(dst []byte, items []etfItem, inKey func(etfItem) bool, key bool, salt int) {
	for _, it := range items {
		if it.kind == shapeBytes || inKey(it) != key {
			continue
		}
		r.placeholder(dst[it.off:it.off+it.n], it.kind, salt)
	}
}

// placeholder overwrites b (original content bytes of the given kind) with
// a same-length replacement derived from them, the key and salt.
func (r *redactor) placeholder(b []byte, kind contentKind, salt int) {
	if kind == idBytes || kind == signByte {
		clear(b)
		return
	}
	m := hmac.New(sha256.New, r.key[:])
	m.Write([]byte{byte(kind), byte(salt)})
	m.Write(b)
	seed := m.Sum(nil)
	stream := make([]byte, 0, len(b)+32)
	for i := uint32(0); len(stream) < len(b); i++ {
		h := hmac.New(sha256.New, seed)
		h.Write(be.AppendUint32(nil, i))
		stream = h.Sum(stream)
	}
	switch kind {
	case textBytes:
		for i := range b {
			b[i] = 'a' + stream[i]%26
		}
	case bigBytes:
		copy(b, stream)
		b[len(b)-1] |= 1 // the most significant digit is not zero
	case newFloatBytes:
		be.PutUint64(b, placeholderFloatBits(stream))
	case oldFloatBytes:
		clear(b)
		copy(b, fmt.Sprintf("%.20e", math.Float64frombits(placeholderFloatBits(stream))))
	default:
		copy(b, stream)
	}
}

// placeholderFloatBits is a float in [1, 2) drawn from the stream.
func placeholderFloatBits(stream []byte) uint64 {
	u := be.Uint64(stream)
	return u&^(0xFFF<<52) | 0x3FF<<52
}
