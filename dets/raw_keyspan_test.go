package dets

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// TestFlatKeySpanMatchesKeySpan: the header-only key span a raw lookup
// takes gives keySpan's answer over random objects (binary and other
// keys, key positions 1 and 2) with random damage. Seeded: -seed or
// GODETS_SEED.
func TestFlatKeySpanMatchesKeySpan(t *testing.T) {
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
		want, got := keySpan(obj, keyPos), flatKeySpan(obj, keyPos)
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) || cap(got) != len(got) {
			t.Fatalf("seed %d, object %d % x, key %d: flatKeySpan % x (cap %d), keySpan % x", seed, i, obj, keyPos, got, cap(got), want)
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
