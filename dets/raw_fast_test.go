package dets

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// TestKeySpanMatchesWalk: keySpan, with its header-only shortcut for a
// binary key, gives the general walk's answer over random objects (binary
// and other keys, key positions 1 and 2) with random damage. Seeded: -seed
// or GODETS_SEED.
func TestKeySpanMatchesWalk(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	r := rand.New(rand.NewPCG(seed, 22))
	found, refused := 0, 0
	for i := range 20000 {
		obj := []byte{131, 104, byte(1 + r.IntN(3))}
		for range int(obj[2]) {
			switch r.IntN(3) {
			case 0:
				obj = append(obj, 97, byte(r.IntN(256)))
			case 1:
				obj = append(obj, 104, 0)
			default:
				k := make([]byte, r.IntN(24))
				obj = binary.BigEndian.AppendUint32(append(obj, 109), uint32(len(k)))
				obj = append(obj, k...)
			}
		}
		switch r.IntN(4) {
		case 0:
			obj[1+r.IntN(len(obj)-1)] = byte(r.IntN(256))
		case 1:
			obj = obj[:r.IntN(len(obj))]
		case 2:
			obj = append(obj, byte(r.IntN(256)))
		}
		keyPos := 1 + r.IntN(2)
		var want []byte
		if s, e, ok := encodings.TupleElement(obj, keyPos); ok {
			want = obj[s:e]
		}
		got := keySpan(obj, keyPos)
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) || cap(got) != len(got) {
			t.Fatalf("seed %d, object %d % x, key %d: keySpan % x (cap %d), the walk % x", seed, i, obj, keyPos, got, cap(got), want)
		}
		if want != nil {
			found++
		} else {
			refused++
		}
	}
	if found < 1000 || refused < 1000 {
		t.Fatalf("seed %d: %d keys found, %d refused: the cases are not mixed", seed, found, refused)
	}
}

// TestFlatChecksMatchRawCheck: an object flatArity accepts is one that
// etf.Validate and holdsKey accept, and a bucket flatSetBucket accepts
// is one whose every record parseObjects and the general rawCheck
// accept, over random flat and other objects with random damage.
// Seeded: -seed or GODETS_SEED.
func TestFlatChecksMatchRawCheck(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	r := rand.New(rand.NewPCG(seed, 23))
	general := func(enc []byte, keyPos int) bool {
		return etf.Validate(enc) == nil && holdsKey(enc, keyPos)
	}
	object := func() []byte {
		obj := []byte{131, 104, byte(r.IntN(4))}
		for range int(obj[2]) {
			if r.IntN(8) == 0 {
				obj = append(obj, 97, 1) // not flat
				continue
			}
			k := make([]byte, r.IntN(24))
			obj = binary.BigEndian.AppendUint32(append(obj, 109), uint32(len(k)))
			obj = append(obj, k...)
		}
		switch r.IntN(5) {
		case 0:
			obj[r.IntN(len(obj))] = byte(r.IntN(256))
		case 1:
			obj = obj[:r.IntN(len(obj))]
		case 2:
			obj = append(obj, byte(r.IntN(256)))
		}
		return obj
	}
	flat, other := 0, 0
	for i := range 20000 {
		obj, keyPos := object(), 1+r.IntN(2)
		n := flatArity(obj)
		if n >= keyPos && !general(obj, keyPos) {
			t.Fatalf("seed %d, object %d % x, key %d: flatArity %d, but Validate/holdsKey refuse it", seed, i, obj, keyPos, n)
		}
		if n > 0 && n != int(obj[2]) {
			t.Fatalf("seed %d, object %d % x: flatArity %d", seed, i, obj, n)
		}
		var body []byte
		for range r.IntN(4) {
			o := object()
			body = binary.BigEndian.AppendUint32(body, uint32(4+len(o)))
			body = append(body, o...)
		}
		if r.IntN(4) == 0 && len(body) > 0 {
			body = body[:r.IntN(len(body))]
		}
		if flatSetBucket(body, keyPos) {
			flat++
			if be := parseObjects(body, bucketHeaderSize, func(enc []byte, off int) *bucketError {
				return rawCheck(enc, keyPos, off)
			}); be != nil {
				t.Fatalf("seed %d, bucket %d % x, key %d: flatSetBucket accepts it, the general check says %s", seed, i, body, keyPos, be.reason)
			}
		} else {
			other++
		}
	}
	if flat < 1000 || other < 1000 {
		t.Fatalf("seed %d: %d buckets flat, %d not: the cases are not mixed", seed, flat, other)
	}
}

// TestBinaryEncodingMatchesValidate: what binaryEncoding accepts as a
// key etf.Validate accepts, over random binaries with random damage.
// Seeded: -seed or GODETS_SEED.
func TestBinaryEncodingMatchesValidate(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	r := rand.New(rand.NewPCG(seed, 24))
	yes, no := 0, 0
	for i := range 20000 {
		k := make([]byte, r.IntN(20))
		key := binary.BigEndian.AppendUint32([]byte{131, 109}, uint32(len(k)))
		key = append(key, k...)
		switch r.IntN(4) {
		case 0:
			key[r.IntN(len(key))] = byte(r.IntN(256))
		case 1:
			key = key[:r.IntN(len(key))]
		case 2:
			key = append(key, byte(r.IntN(256)))
		}
		if binaryEncoding(key) {
			yes++
			if err := etf.Validate(key); err != nil {
				t.Fatalf("seed %d, key %d % x: binaryEncoding accepts it, Validate says %v", seed, i, key, err)
			}
		} else {
			no++
		}
	}
	if yes < 1000 || no < 1000 {
		t.Fatalf("seed %d: %d accepted, %d not: the cases are not mixed", seed, yes, no)
	}
}
