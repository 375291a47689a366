package dets

import (
	"math"
	"math/big"
	"testing"

	"github.com/godets/godets/etf"
)

// nativeKeyVectors are keys of every kind of term, for the pinned hashes.
func nativeKeyVectors() []etf.Term {
	big1, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	node := append([]byte{119, 13}, "nonode@nohost"...)
	pid := etf.Opaque{Raw: append(append([]byte{88}, node...), 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, 0)}
	ref := etf.Opaque{Raw: append(append([]byte{90, 0, 3}, node...), 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 9)}
	large := etf.Map{}
	for i := range 33 {
		large = append(large, etf.Pair{Key: etf.Int(i), Value: etf.Atom("v")})
	}
	return []etf.Term{
		etf.Int(0), etf.Int(255), etf.Int(256), etf.Int(-1), etf.Int(math.MaxInt64), etf.NewBigInt(big1),
		etf.Float(1.0), etf.Float(-2.5), etf.Atom("key"), etf.Atom("clé"), etf.Atom("ключ"),
		etf.Binary("user:42"), etf.Binary{}, etf.Bitstring{Bytes: []byte{0xa0}, Bits: 3},
		etf.List{}, etf.Str("abc"), etf.List{etf.Int(1), etf.Atom("a")},
		&etf.ImproperList{Elems: []etf.Term{etf.Int(1)}, Tail: etf.Int(2)},
		etf.Tuple{}, etf.Tuple{etf.Int(1), etf.Binary("x")},
		etf.Map{{Key: etf.Atom("b"), Value: etf.Int(2)}, {Key: etf.Atom("a"), Value: etf.Int(1)}}, large,
		&pid, &ref,
	}
}

// TestNativeKeyHashVectors pins H (§9) for a vector set: the key hash is
// part of the native format, so a change in etf.Encode's output for any
// term, or in the hash, must fail here rather than move keys of existing
// tables to other slots. It also checks that E[1:] is the key's span
// inside a stored object, which lets the engine hash stored keys as they
// are.
func TestNativeKeyHashVectors(t *testing.T) {
	want := []uint64{
		0x9828e73e717d875c, 0xa09924cc6492d01e, 0x151f585db0b21859, 0x43886e38068f8804,
		0xc9a0b430f6190f9d, 0x249b4de2d0440d58, 0xa21c5495d0201412, 0x37664ccbdc1fafd4,
		0x3fb69d4f19fcde0f, 0x92a6c564ccc88f7a, 0xcf423c3ce76501e3, 0x3f5cda8d6efde57e,
		0xd1ef382f55902e0a, 0x97c95b4eb40127d3, 0xf592025a96e41782, 0x0acbbdd90dd0cbcb,
		0x6bc8be35146b818d, 0xd2aba88e634472cd, 0x74e5da4bd8cddc49, 0x0988d8df388ef98b,
		0xea95c21ed4eb16f1, 0xc4af00d7f86b6361, 0xeb5e95906ea7117b, 0xfca025498088ad2f,
	}
	keys := nativeKeyVectors()
	for i, k := range keys {
		e, err := etf.Encode(k)
		must(t, err)
		obj, err := etf.Encode(etf.Tuple{k, etf.Atom("value")})
		must(t, err)
		if span := keySpan(obj, 1); string(span) != string(e[1:]) {
			t.Errorf("key %d (%v): its span in an object is not its encoding", i, k)
		}
		h := nativeKeyHash(e[1:])
		if i >= len(want) {
			t.Errorf("key %d (%v): H = %#016x, not pinned", i, k, h)
			continue
		}
		if h != want[i] {
			t.Errorf("key %d (%v): H = %#016x, pinned %#016x", i, k, h, want[i])
		}
	}
	if len(want) != len(keys) {
		t.Errorf("%d keys, %d pinned hashes", len(keys), len(want))
	}
}
