package etf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// generalDecode is Decode without the flat fast path.
func generalDecode(b []byte) (Term, error) { return decodeWhole(b, nil) }

// flatEncoding builds <<131, 104, N, (109, Len, Bytes)*N>> by hand.
func flatEncoding(rng *rand.Rand, n int) []byte {
	b := []byte{tagVersion, tagSmallTuple, byte(n)}
	for range n {
		l := rng.Intn(300)
		if rng.Intn(5) == 0 {
			l = 0
		}
		b = append(b, tagBinary)
		b = binary.BigEndian.AppendUint32(b, uint32(l))
		for range l {
			b = append(b, byte(rng.Intn(256)))
		}
	}
	return b
}

// TestDecodeFlatMatchesGeneral: for tuples of 0..6 binaries, whole,
// truncated, extended or with a wrong tag, Decode (fast path or not) gives
// what the general decoder gives: the same values, types and capacities,
// or the same error.
func TestDecodeFlatMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	fast := 0
	for i := range 5000 {
		b := flatEncoding(rng, rng.Intn(7))
		switch rng.Intn(4) {
		case 0:
			b = b[:rng.Intn(len(b)+1)]
		case 1:
			b = append(b, byte(rng.Intn(256)))
		case 2:
			b[rng.Intn(len(b))] ^= byte(1 << rng.Intn(8))
		}
		if decodeFlat(b) != nil {
			fast++
		}
		got, gerr := Decode(b)
		if len(b) < 2 || b[0] != tagVersion || b[1] == tagCompressed {
			continue // Decode's own checks, before either path
		}
		want, werr := generalDecode(b)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("case %d (% x): errors %v and %v", i, b, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d (% x): %#v, want %#v", i, b, got, want)
		}
		sameCaps(t, i, got, want)
	}
	if fast < 500 {
		t.Fatalf("only %d of 5000 cases took the fast path", fast)
	}
}

// sameCaps fails case i unless the tuple got and its binaries have the
// capacities of those of want (equal terms).
func sameCaps(t *testing.T, i int, got, want Term) {
	t.Helper()
	tg, ok := got.(Tuple)
	if !ok {
		return
	}
	tw := want.(Tuple)
	if cap(tg) != cap(tw) {
		t.Fatalf("case %d: tuple capacity %d, want %d", i, cap(tg), cap(tw))
	}
	for j := range tg {
		if bg, ok := tg[j].(Binary); ok && cap(bg) != cap(tw[j].(Binary)) {
			t.Fatalf("case %d: binary %d capacity %d, want %d", i, j, cap(bg), cap(tw[j].(Binary)))
		}
	}
}

// TestDecodeFlatAllocs: a {Binary, Binary} decodes with two allocations.
func TestDecodeFlatAllocs(t *testing.T) {
	if !boxOK {
		t.Skip("boxing self-check failed: no fast path on this runtime")
	}
	b, err := Encode(Tuple{Binary("0123456789abcdef"), Binary(make([]byte, 100))})
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(200, func() {
		if _, err := Decode(b); err != nil {
			t.Fatal(err)
		}
	})
	if n > 2 {
		t.Fatalf("%.1f allocations per Decode of a pair of binaries, want 2", n)
	}
}

// TestDecodeFlatIsolation: terms from the fast path share nothing with the
// input or with each other.
func TestDecodeFlatIsolation(t *testing.T) {
	b, _ := Encode(Tuple{Binary("key"), Binary("value"), Binary("x")})
	t1, _ := Decode(b)
	t2, _ := Decode(b)
	for i := range b {
		b[i] = 0
	}
	t1.(Tuple)[1].(Binary)[0] = 'V'
	if string(t2.(Tuple)[1].(Binary)) != "value" || string(t1.(Tuple)[0].(Binary)) != "key" {
		t.Fatalf("terms alias each other or the input: %v %v", t1, t2)
	}
}

// TestDecodeFlatSurvivesGC keeps some fast-path terms while the collector
// runs and freed memory is refilled, then checks them.
func TestDecodeFlatSurvivesGC(t *testing.T) {
	keep := keepThroughGC(t, func(i int) (Term, error) {
		b, err := Encode(Tuple{Binary(fmt.Sprint("k", i)), Binary(fmt.Sprint("value ", i)), Binary{}})
		if err != nil {
			return nil, err
		}
		return Decode(b)
	})
	for i, x := range keep {
		tu := x.(Tuple)
		if len(tu) != 3 || string(tu[0].(Binary)) != fmt.Sprint("k", i) || string(tu[1].(Binary)) != fmt.Sprint("value ", i) || len(tu[2].(Binary)) != 0 {
			t.Fatalf("term %d after GC: %v", i, x)
		}
	}
}

// keepThroughGC makes 20000 terms with mk, keeps every 997th while the
// collector runs and freed memory is refilled, and returns the kept ones
// after a last collection.
func keepThroughGC(t *testing.T, mk func(i int) (Term, error)) map[int]Term {
	t.Helper()
	keep := map[int]Term{}
	for i := range 20000 {
		x, err := mk(i)
		if err != nil {
			t.Fatal(err)
		}
		if i%997 == 0 {
			keep[i] = x
		}
		if i%2000 == 0 {
			runtime.GC()
			junk := make([][]byte, 500)
			for j := range junk {
				junk[j] = bytes.Repeat([]byte{0xEE}, 64)
			}
			_ = junk
		}
	}
	runtime.GC()
	return keep
}

// TestDecodeOneMatchesDecode: DecodeOne returns Decode's term as a slice
// of one, with the same values and capacities, or Decode's error, for
// flat tuples (whole or damaged) and random terms.
func TestDecodeOneMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	one := 0
	for i := range 6000 {
		var b []byte
		if i%3 == 0 {
			var err error
			if b, err = Encode(randomTerm(rng, 0)); err != nil {
				t.Fatal(err)
			}
		} else {
			b = flatEncoding(rng, 1+rng.Intn(3))
		}
		switch rng.Intn(5) {
		case 0:
			b = b[:rng.Intn(len(b)+1)]
		case 1:
			b[rng.Intn(len(b))] ^= byte(1 << rng.Intn(8))
		}
		if decodeOnePair(b) != nil {
			one++
		}
		got, gerr := raw.DecodeOne(b)
		want, werr := Decode(b)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("case %d (% x): errors %v and %v", i, b, gerr, werr)
		}
		if gerr != nil {
			continue
		}
		if len(got) != 1 || cap(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("case %d (% x): %#v, want [%#v]", i, b, got, want)
		}
		sameCaps(t, i, got[0], want)
	}
	if one < 500 {
		t.Fatalf("only %d of 6000 cases took the one-allocation path", one)
	}
}

// TestDecodeOneAllocs: a pair of binaries of up to onePairMax bytes takes
// one allocation, slice included; a larger one at most Decode's two and
// the slice.
func TestDecodeOneAllocs(t *testing.T) {
	if !boxOK {
		t.Skip("boxing self-check failed: no fast path on this runtime")
	}
	for _, n := range []int{0, 40, 59, 100, 123, 200, 251, 400, 507, 600} {
		b, err := Encode(Tuple{Binary("key"), Binary(make([]byte, n))})
		if err != nil {
			t.Fatal(err)
		}
		want := 1.0
		if len(b)-flatData > onePairMax {
			want = 3
		}
		got := testing.AllocsPerRun(200, func() {
			if _, err := raw.DecodeOne(b); err != nil {
				t.Fatal(err)
			}
		})
		if got > want {
			t.Errorf("value of %d bytes: %.1f allocations, want %.0f", n, got, want)
		}
	}
}

// TestDecodeOneIsolation: results share nothing with the input or each
// other, a binary cannot grow into its neighbour, and they survive
// collections while freed memory is refilled.
func TestDecodeOneIsolation(t *testing.T) {
	b, _ := Encode(Tuple{Binary("key"), Binary("value")})
	r1, _ := raw.DecodeOne(b)
	r2, _ := raw.DecodeOne(b)
	clear(b)
	k := r1[0].(Tuple)[0].(Binary)
	_ = append(k, "XXXXXXXX"...) // past the 5 header bytes, into the value if k could grow
	r1[0].(Tuple)[1].(Binary)[0] = 'V'
	if string(r2[0].(Tuple)[1].(Binary)) != "value" || string(r1[0].(Tuple)[1].(Binary)) != "Value" || string(k) != "key" {
		t.Fatalf("results alias each other or the input: %v %v", r1, r2)
	}

	keep := keepThroughGC(t, func(i int) (Term, error) {
		b, err := Encode(Tuple{Binary(fmt.Sprint("k", i)), Binary(bytes.Repeat([]byte{byte(i)}, i%300))})
		if err != nil {
			return nil, err
		}
		one, err := raw.DecodeOne(b)
		if err != nil {
			return nil, err
		}
		return Tuple(one), nil // the slice itself, kept as a term
	})
	for i, x := range keep {
		tu := x.(Tuple)[0].(Tuple)
		if len(tu) != 2 || string(tu[0].(Binary)) != fmt.Sprint("k", i) || !bytes.Equal(tu[1].(Binary), bytes.Repeat([]byte{byte(i)}, i%300)) {
			t.Fatalf("term %d after GC: %v", i, x)
		}
	}
}
