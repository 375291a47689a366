// Package msgen generates random table objects, match patterns and match
// specifications for differential tests against OTP. The same seed gives
// the same sequence, so a failure replays from the seed a test prints.
//
// Specifications are built from sample objects so that heads often match:
// parts of an object are kept as constants (the key often, which makes a
// bound-key query), replaced by variables (sometimes one variable twice,
// which must then be equal), by '_', or perturbed. Guards and bodies draw
// on every form etf/matchspec supports, including calls that raise, and a
// share of the specifications are made invalid on purpose.
//
// Integers stay far below matchspec.MaxIntBits, no form needs an Erlang
// node (self, node), and map keys in guards and bodies never raise (two
// 'EXIT' keys crash OTP 25.2's VM), so OTP and matchspec must agree on
// every result.
package msgen

import (
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/godets/godets/etf"
)

// Gen is a seeded generator. It is not safe for concurrent use.
type Gen struct {
	r *rand.Rand
	// KeyPos is the 1-based key position of generated objects and of the
	// bound keys in generated heads; New sets 1.
	KeyPos int
	// Keys is the pool object keys are drawn from; a small pool makes
	// bound-key queries hit and bags hold several objects per key.
	Keys []etf.Term
	// InvalidRate is the share of specifications made invalid on purpose.
	InvalidRate float64
}

// New returns a generator for seed with a pool of 40 keys of mixed types.
func New(seed uint64) *Gen {
	g := &Gen{r: rand.New(rand.NewPCG(seed, 0x6d73676e)), KeyPos: 1, InvalidRate: 0.06}
	seen := map[string]bool{}
	for len(g.Keys) < 40 {
		k := g.scalar()
		if g.r.IntN(5) == 0 {
			k = etf.Tuple{g.scalar(), g.scalar()}
		}
		if f, ok := k.(etf.Float); ok && f == 0 {
			continue // -0.0 and 0.0 are =:= but hash apart: keep keys plain
		}
		b, err := etf.Encode(k)
		if err != nil || seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		g.Keys = append(g.Keys, k)
	}
	// Keys on which dets's choice of lookups changes results: 1 and 1.0
	// are one key to it (lists:usort), and a map in a head is looked up
	// as a literal key, not matched as a pattern.
	for _, k := range []etf.Term{etf.Int(1), etf.Float(1), etf.Map{{Key: etf.Atom("a"), Value: etf.Int(1)}},
		etf.Map{{Key: etf.Atom("a"), Value: etf.Int(1)}, {Key: etf.Atom("b"), Value: etf.Int(2)}}} {
		if b, _ := etf.Encode(k); !seen[string(b)] {
			seen[string(b)] = true
			g.Keys = append(g.Keys, k)
		}
	}
	return g
}

// Rand returns the generator's source, for callers that draw their own
// choices from the same seed.
func (g *Gen) Rand() *rand.Rand { return g.r }

// Key returns a key from the pool.
func (g *Gen) Key() etf.Term { return g.Keys[g.r.IntN(len(g.Keys))] }

// Object returns a tuple of arity max(KeyPos, 2..4) whose element KeyPos
// is a pool key.
func (g *Gen) Object() etf.Tuple {
	n := max(2+g.r.IntN(3), g.KeyPos)
	t := make(etf.Tuple, n)
	for i := range t {
		t[i] = g.Term(2)
	}
	t[g.KeyPos-1] = g.Key()
	if g.r.IntN(4) == 0 { // one value twice, or == but not =:=
		i, j := g.r.IntN(n), g.r.IntN(n)
		if i != g.KeyPos-1 && j != g.KeyPos-1 {
			t[i] = t[j]
			if f, ok := t[j].(etf.Float); ok {
				t[i] = g.floatTwin(f)
			} else if n, ok := t[j].(etf.Int); ok && g.r.IntN(2) == 0 {
				t[i] = etf.Float(float64(n))
			}
		}
	}
	return t
}

// Objects returns n objects.
func (g *Gen) Objects(n int) []etf.Term {
	out := make([]etf.Term, n)
	for i := range out {
		out[i] = g.Object()
	}
	return out
}

var atoms = []etf.Atom{"a", "b", "c", "ok", "true", "false", "undefined", "EXIT", "_", "$_", "$$", "$01", "x y", "é"}

// scalar returns a leaf term: small and large integers, floats, atoms,
// binaries.
func (g *Gen) scalar() etf.Term {
	switch g.r.IntN(12) {
	case 0, 1:
		return etf.Int(g.r.IntN(21) - 5)
	case 2:
		return etf.Int(g.r.Int64N(1<<40) - 1<<39)
	case 3:
		return g.bignum()
	case 4:
		return g.float()
	case 5:
		return etf.Float(float64(g.r.IntN(7) - 3)) // integral: == but not =:= an integer
	case 6, 7:
		return atoms[g.r.IntN(len(atoms))]
	case 8, 9:
		b := make(etf.Binary, g.r.IntN(6))
		for i := range b {
			b[i] = byte(g.r.IntN(4) + 'a')
		}
		return b
	case 10:
		return etf.Bitstring{Bytes: []byte{byte(g.r.IntN(256)), byte(g.r.IntN(8)) << 5}, Bits: 3}
	default:
		if g.r.IntN(3) == 0 {
			return g.opaque()
		}
		return etf.Int(255 + g.r.IntN(3)) // around the small-integer boundary
	}
}

// opaque returns a pid, port or reference of node nonode@nohost.
func (g *Gen) opaque() etf.Term {
	node := append([]byte{100, 0, 13}, "nonode@nohost"...) // ATOM_EXT, as OTP 25 writes it
	id := func() []byte { v := g.r.Uint32() & 0x7fff; return []byte{0, 0, byte(v >> 8), byte(v)} }
	var raw []byte
	switch g.r.IntN(3) {
	case 0: // NEW_PID_EXT: node, id, serial, creation
		raw = append(append([]byte{88}, node...), id()...)
		raw = append(append(raw, 0, 0, 0, byte(g.r.IntN(3))), 0, 0, 0, 0)
	case 1: // NEW_PORT_EXT: node, id, creation
		raw = append(append(append([]byte{89}, node...), id()...), 0, 0, 0, 0)
	default: // NEWER_REFERENCE_EXT: 3 words, node, creation, ids
		raw = append(append([]byte{90, 0, 3}, node...), 0, 0, 0, 0)
		for range 3 {
			raw = append(raw, id()...)
		}
	}
	return &etf.Opaque{Raw: raw}
}

func (g *Gen) bignum() etf.Term {
	v := new(big.Int)
	if g.r.IntN(3) == 0 {
		// Two 64-bit digits whose conversion to float rounds twice in
		// OTP: the low digit rounds to half a unit of the result.
		hi := g.r.Int64N(1<<10) + 1
		ulp := new(big.Int).Lsh(big.NewInt(1), uint(64+bitLen(hi)-53))
		v.Lsh(big.NewInt(hi), 64)
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), 63))
		v.Add(v, ulp.Rsh(ulp, 1))
		v.Add(v, big.NewInt(g.r.Int64N(200)-100))
	} else {
		v.Lsh(big.NewInt(1), uint(63+g.r.IntN(140)))
		v.Add(v, big.NewInt(g.r.Int64N(1<<62)))
	}
	if g.r.IntN(2) == 0 {
		v.Neg(v)
	}
	return etf.NewBigInt(v)
}

func bitLen(x int64) int { return big.NewInt(x).BitLen() }

// halves round away from zero in Erlang, to even in IEEE's default.
var halves = []float64{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 4503599627370495.5}

func (g *Gen) float() etf.Term {
	switch g.r.IntN(9) {
	case 6:
		return etf.Float(halves[g.r.IntN(len(halves))])
	case 7:
		return etf.Float(float64(g.r.IntN(9) - 4)) // == an integer
	case 8:
		return etf.Float(float64(g.r.Int64N(1<<60)) * 16) // integral, beyond 2^53
	case 0:
		return etf.Float(0)
	case 1:
		return etf.Float(math.Copysign(0, -1))
	case 2:
		return etf.Float(g.r.NormFloat64() * 1e300)
	case 3:
		return etf.Float(1.7976931348623157e308)
	}
	return etf.Float(math.Round(g.r.NormFloat64()*1000) / 8)
}

// Term returns a random term nested up to depth levels.
func (g *Gen) Term(depth int) etf.Term {
	if depth <= 0 || g.r.IntN(3) > 0 {
		return g.scalar()
	}
	n := g.r.IntN(4)
	switch g.r.IntN(4) {
	case 0:
		t := make(etf.Tuple, n)
		for i := range t {
			t[i] = g.Term(depth - 1)
		}
		return t
	case 1:
		l := make(etf.List, n)
		for i := range l {
			l[i] = g.Term(depth - 1)
		}
		if n > 0 && g.r.IntN(5) == 0 {
			return &etf.ImproperList{Elems: l, Tail: g.scalar()}
		}
		return l
	case 2:
		return g.mapTerm(depth, n)
	}
	return etf.Str(string(rune('a' + g.r.IntN(3))))
}

func (g *Gen) mapTerm(depth, n int) etf.Map {
	m := etf.Map{}
	for i := 0; i < n; i++ {
		k := g.scalar()
		if f, ok := k.(etf.Float); ok && f == 0 {
			continue // 0.0 and -0.0 as map keys differ between OTP releases
		}
		if _, dup := m.Get(k); dup {
			continue
		}
		m = append(m, etf.Pair{Key: k, Value: g.Term(depth - 1)})
	}
	return m
}
