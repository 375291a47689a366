package msgen

import (
	"testing"

	"github.com/godets/godets/etf"
)

// TestDeterministic: one seed, one sequence (tests replay from seeds).
func TestDeterministic(t *testing.T) {
	a, b := New(7), New(7)
	for i := 0; i < 200; i++ {
		objs := a.Objects(3)
		x, y := a.Spec(objs), b.Spec(b.Objects(3))
		if etf.Format(x) != etf.Format(y) {
			t.Fatalf("step %d: %s != %s", i, etf.Format(x), etf.Format(y))
		}
	}
}

// TestTermsEncode: everything generated is a valid term OTP can read.
func TestTermsEncode(t *testing.T) {
	g := New(11)
	for i := 0; i < 2000; i++ {
		objs := g.Objects(4)
		for _, term := range []etf.Term{objs[0], g.Spec(objs), g.DeleteSpec(objs), g.Pattern(objs[1])} {
			b, err := etf.Encode(term)
			if err != nil {
				t.Fatalf("step %d: %s: %v", i, etf.Format(term), err)
			}
			back, err := etf.Decode(b)
			if err != nil || !etf.Equal(back, term) {
				t.Fatalf("step %d: %s does not round-trip: %v", i, etf.Format(term), err)
			}
		}
		if k := objs[0].(etf.Tuple)[g.KeyPos-1]; !isPoolKey(g, k) {
			t.Fatalf("object key %s not from the pool", etf.Format(k))
		}
	}
}

func isPoolKey(g *Gen, k etf.Term) bool {
	for _, p := range g.Keys {
		if etf.Equal(p, k) {
			return true
		}
	}
	return false
}
