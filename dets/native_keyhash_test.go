package dets

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
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

// TestNativeKeyHashZeros: keys that differ only in the sign of a zero
// float are one key (=:= in OTP 25), so they hash alike; other keys,
// including binaries holding the NEW_FLOAT_EXT tag byte, hash their own
// bytes.
func TestNativeKeyHashZeros(t *testing.T) {
	negZero := etf.Float(math.Copysign(0, -1))
	pairs := [][2]etf.Term{
		{negZero, etf.Float(0)},
		{etf.Tuple{etf.Atom("a"), negZero}, etf.Tuple{etf.Atom("a"), etf.Float(0)}},
		{etf.List{etf.Int(1), etf.Map{{Key: negZero, Value: negZero}}}, etf.List{etf.Int(1), etf.Map{{Key: etf.Float(0), Value: etf.Float(0)}}}},
		{etf.NewImproperList(negZero, etf.Binary("F")), etf.NewImproperList(etf.Float(0), etf.Binary("F"))},
	}
	body := func(k etf.Term) []byte {
		b, err := etf.Encode(k)
		if err != nil {
			t.Fatal(err)
		}
		return b[1:]
	}
	for _, p := range pairs {
		a, b := body(p[0]), body(p[1])
		if bytes.Equal(a, b) {
			t.Fatalf("%v and %v encode alike", p[0], p[1])
		}
		if nativeKeyHash(a) != nativeKeyHash(b) {
			t.Errorf("%v and %v hash apart", p[0], p[1])
		}
		if !bytes.Equal(keyForHash(b), b) {
			t.Errorf("%v: hashed through a copy", p[1])
		}
	}
	for _, k := range []etf.Term{etf.Binary("FFF"), etf.Tuple{etf.Int(70), etf.Str("F")}, etf.Float(-1.5)} {
		b := body(k)
		if got := keyForHash(b); !bytes.Equal(got, b) {
			t.Errorf("%v: hashed %x, want its own bytes", k, got)
		}
		if has, ok := hasNegZero(b); has || !ok {
			t.Errorf("%v: hasNegZero %v %v", k, has, ok)
		}
	}
	fff := body(etf.Binary("FFF"))
	if n := testing.AllocsPerRun(100, func() { nativeKeyHash(fff) }); n != 0 {
		t.Errorf("hashing a binary key with an F in it: %v allocations", n)
	}
}

// TestZeroSignKeysOneGroup: in a bag or duplicate_bag, objects whose keys
// are 0.0 and -0.0 are one key (=:= in OTP 25), in both formats alike:
// a lookup gives them in insertion order, a delete of either removes them
// all, the counts say one key, Check passes, and conversion both ways
// keeps them. A native bucket grouped its records by the key's bytes, so
// it held two groups: the order became a, c, b, Delete left objects
// behind with the key count at 0, the meta disagreed with Check, and
// native to otp9 refused the sound table as corrupt. Found by an audit
// helper.
func TestZeroSignKeysOneGroup(t *testing.T) {
	negZero := etf.Float(math.Copysign(0, -1))
	objs := []etf.Term{tup(etf.Float(0), etf.Atom("a")), tup(negZero, etf.Atom("b")), tup(etf.Float(0), etf.Atom("c"))}
	for _, kind := range []Kind{Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			looked := map[Format]string{}
			for _, format := range []Format{OTP9, Native} {
				path := filepath.Join(dir, format.String()+".dets")
				tab := openT(t, path, Options{Kind: kind, Format: format})
				for _, o := range objs {
					must(t, tab.Insert(o)) // one by one: each insert reads the bucket back
				}
				got, err := tab.Lookup(negZero)
				must(t, err)
				looked[format] = fmt.Sprint(got)
				info, err := tab.Info()
				must(t, err)
				if len(got) != 3 || info.Size != 3 || info.NoKeys != 1 {
					t.Fatalf("%v: lookup %v, %d objects, %d keys", format, got, info.Size, info.NoKeys)
				}
				mustCheck(t, tab)
				must(t, tab.Close())

				// Each way of conversion keeps the group whole.
				to := map[Format]Format{OTP9: Native, Native: OTP9}[format]
				conv := filepath.Join(dir, format.String()+"-to-"+to.String()+".dets")
				if _, err := Convert(path, conv, to, ConvertOptions{}); err != nil {
					t.Fatalf("convert %v to %v: %v", format, to, err)
				}
				for _, p := range []string{path, conv} {
					re := openT(t, p, Options{})
					mustCheck(t, re)
					got, err := re.Lookup(etf.Float(0))
					must(t, err)
					if fmt.Sprint(got) != looked[format] {
						t.Fatalf("%s: lookup %v, want %s", p, got, looked[format])
					}
					must(t, re.Delete(negZero))
					left, err := re.Lookup(etf.Float(0))
					must(t, err)
					info, err := re.Info()
					must(t, err)
					if len(left) != 0 || info.Size != 0 || info.NoKeys != 0 {
						t.Fatalf("%s: after Delete(-0.0): %v, %d objects, %d keys", p, left, info.Size, info.NoKeys)
					}
				}
			}
			if looked[OTP9] != looked[Native] {
				t.Fatalf("otp9 looks up %s, native %s", looked[OTP9], looked[Native])
			}
		})
	}
}
