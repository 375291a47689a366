package kinds

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
)

// TestKeyEndMatchesTupleElement: directValue's skip of the key by its
// header gives the value the general skip (etf.Raw.TupleElement) gives,
// or refuses where it refuses, over random keys and values with random
// damage. Seeded: -seed or GODETS_SEED.
func TestKeyEndMatchesTupleElement(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	r := rand.New(rand.NewPCG(seed, 22))
	b := &base[string, string]{kc: String, vc: String}
	viaTupleElement := func(obj []byte) (string, bool) {
		if len(obj) < 3 || [3]byte(obj) != objectHead {
			return "", false
		}
		var raw etf.Raw
		s, e, ok := raw.TupleElement(obj, 2)
		if !ok || e != len(obj) {
			return "", false
		}
		v, n, ok := String.readRaw(obj[s:], nil)
		if !ok || s+n != len(obj) {
			return "", false
		}
		return v, true
	}
	agreed, refused := 0, 0
	for i := range 20000 {
		obj := append([]byte{}, objectHead[:]...)
		switch r.IntN(5) {
		case 0:
			obj = append(obj, tagSmallInteger, byte(r.IntN(256)))
		case 1:
			obj = binary.BigEndian.AppendUint32(append(obj, tagInteger), r.Uint32())
		case 2:
			obj = append(obj, tagSmallAtomUTF8, 2, 'o', 'k')
		case 3:
			obj = append(obj, tagSmallTuple, 1, tagSmallInteger, 7)
		default:
			k := make([]byte, r.IntN(20))
			obj = binary.BigEndian.AppendUint32(append(obj, tagBinary), uint32(len(k)))
			obj = append(obj, k...)
		}
		v := make([]byte, r.IntN(40))
		for j := range v {
			v[j] = byte(r.IntN(256))
		}
		obj = binary.BigEndian.AppendUint32(append(obj, tagBinary), uint32(len(v)))
		obj = append(obj, v...)
		switch r.IntN(4) {
		case 0: // a byte changed
			obj[3+r.IntN(len(obj)-3)] = byte(r.IntN(256))
		case 1: // cut short
			obj = obj[:3+r.IntN(len(obj)-3)]
		case 2: // trailing bytes
			obj = append(obj, byte(r.IntN(256)))
		}
		want, wantOK := viaTupleElement(obj)
		got, gotOK := b.directValue(obj)
		if got != want || gotOK != wantOK {
			t.Fatalf("seed %d, object %d % x: directValue %q, %v; TupleElement's path %q, %v", seed, i, obj, got, gotOK, want, wantOK)
		}
		if wantOK {
			agreed++
		} else {
			refused++
		}
	}
	if agreed < 1000 || refused < 1000 {
		t.Fatalf("seed %d: %d objects read, %d refused: the cases are not mixed", seed, agreed, refused)
	}
}
