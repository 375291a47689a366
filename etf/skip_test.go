package etf

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// raw is the receiver of the byte-level calls under test.
var raw Raw

// skipInputs returns encodings to check the encoded-term functions against
// Decode: random terms, their mutations and truncations, and the fuzz seeds.
func skipInputs(t *testing.T) [][]byte {
	t.Helper()
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var ins [][]byte
	for range 3000 {
		enc, err := Encode(randomTerm(r, 3))
		if err != nil {
			continue
		}
		ins = append(ins, enc)
		m := bytes.Clone(enc)
		m[r.Intn(len(m))] ^= byte(1 << r.Intn(8))
		ins = append(ins, m, enc[:r.Intn(len(enc))])
	}
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				if v, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					ins = append(ins, []byte(v))
				}
			}
		}
	}
	return ins
}

func TestValidateMatchesDecode(t *testing.T) {
	for _, b := range skipInputs(t) {
		_, derr := Decode(b)
		verr := Validate(b)
		if (derr == nil) != (verr == nil) {
			t.Fatalf("%x: Decode error %v, Validate error %v", b, derr, verr)
		}
		if derr != nil && derr.Error() != verr.Error() {
			t.Fatalf("%x: Decode error %q, Validate error %q", b, derr, verr)
		}
	}
}

func TestTupleElement(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	for range 2000 {
		tup := Tuple{randomTerm(r, 2), randomTerm(r, 2), randomTerm(r, 2)}
		enc, err := Encode(tup)
		if err != nil {
			continue
		}
		for pos := 1; pos <= 4; pos++ {
			s, e, ok := raw.TupleElement(enc, pos)
			if pos == 4 {
				if ok {
					t.Fatalf("%v: element 4 found", tup)
				}
				continue
			}
			if !ok {
				t.Fatalf("%v: element %d not found", tup, pos)
			}
			got, err := raw.DecodeBody(enc[s:e])
			if err != nil || !Equal(got, tup[pos-1]) {
				t.Fatalf("%v: element %d decodes to %v, %v", tup, pos, got, err)
			}
		}
	}
	if _, _, ok := raw.TupleElement([]byte{131, 104, 2, 97, 5}, 1); !ok {
		t.Fatal("element 1 of a truncated tuple whose first element is whole")
	}
	if _, _, ok := raw.TupleElement([]byte{131, 104, 2, 98, 0}, 1); ok {
		t.Fatal("truncated element accepted")
	}
	if _, _, ok := raw.TupleElement([]byte{131, 106}, 1); ok {
		t.Fatal("[] is not a tuple")
	}
}

// TestBodyEnd: BodyEnd finds each element's end inside a list of random
// terms, and refuses truncated or out-of-range input.
func TestBodyEnd(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	for range 2000 {
		x := randomTerm(r, 3)
		enc, err := Encode(Tuple{x, Atom("end")})
		if err != nil {
			continue
		}
		s, e, ok := raw.TupleElement(enc, 1)
		if !ok {
			t.Fatalf("%v: no element 1", x)
		}
		if end, ok := raw.BodyEnd(enc, s); !ok || end != e {
			t.Fatalf("%v: BodyEnd %d, %v; want %d", x, end, ok, e)
		}
		if _, ok := raw.BodyEnd(enc[:e-1], s); ok {
			t.Fatalf("%v: a truncated term accepted", x)
		}
	}
	for _, off := range []int{-1, 2, 100} {
		if _, ok := raw.BodyEnd([]byte{131, 106}, off); ok {
			t.Fatalf("offset %d accepted", off)
		}
	}
}

// bodyOf returns the encoding of t without the version byte.
func bodyOf(t *testing.T, x Term) []byte {
	t.Helper()
	enc, err := Encode(x)
	if err != nil {
		t.Fatal(err)
	}
	return enc[1:]
}

func TestPhash2Body(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	handled := 0
	check := func(x Term, body []byte) {
		h, ok := raw.Phash2Body(body)
		if ok {
			handled++
			if want := Phash2(x); h != want {
				t.Fatalf("%v (%x): Phash2Body %d, Phash2 %d", x, body, h, want)
			}
		}
	}
	for range 5000 {
		x := randomTerm(r, 3)
		enc, err := Encode(x)
		if err != nil {
			continue
		}
		check(x, enc[1:])
	}
	// Encodings OTP may write but Encode does not.
	latin1 := []byte{tagSmallAtom, 3, 'a', 0xE9, 'b'}
	check(Atom("aéb"), latin1)
	check(Atom("aéb"), []byte{tagAtom, 0, 3, 'a', 0xE9, 'b'})
	check(Int(5), []byte{tagInteger, 0, 0, 0, 5})
	check(Tuple{Binary("k"), Int(-1)}, []byte{tagLargeTuple, 0, 0, 0, 2, tagBinary, 0, 0, 0, 1, 'k', tagInteger, 255, 255, 255, 255})
	if handled < 500 {
		t.Fatalf("only %d terms hashed from their encoding", handled)
	}
	for _, bad := range [][]byte{nil, {tagBinary, 0, 0, 0, 9, 1}, {tagSmallTuple, 2, tagNil}, {tagNil, tagNil}, {tagSmallAtomUTF8, 1, 0xff}} {
		if _, ok := raw.Phash2Body(bad); ok {
			t.Fatalf("%x: hashed", bad)
		}
	}
}

func TestCompareBodies(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	handled := 0
	for range 20000 {
		x, y := randomTerm(r, 2), randomTerm(r, 2)
		if r.Intn(4) == 0 {
			y = x
		}
		bx, err1 := Encode(x)
		by, err2 := Encode(y)
		if err1 != nil || err2 != nil {
			continue
		}
		c, ok := raw.CompareBodies(bx[1:], by[1:])
		if !ok {
			continue
		}
		handled++
		if want := CompareExact(x, y); c != want {
			t.Fatalf("raw.CompareBodies(%v, %v) = %d, CompareExact %d", x, y, c, want)
		}
	}
	if handled < 1000 {
		t.Fatalf("only %d pairs compared from their encodings", handled)
	}
	// Equal terms in different encodings.
	if c, ok := raw.CompareBodies([]byte{tagSmallAtom, 2, 'o', 'k'}, bodyOf(t, Atom("ok"))); !ok || c != 0 {
		t.Fatalf("ok vs ok: %d %v", c, ok)
	}
	if c, ok := raw.CompareBodies([]byte{tagInteger, 0, 0, 0, 7}, bodyOf(t, Int(7))); !ok || c != 0 {
		t.Fatalf("7 vs 7: %d %v", c, ok)
	}
	if _, ok := raw.CompareBodies([]byte{tagSmallAtom, 1, 0xE9}, bodyOf(t, Atom("é"))); ok {
		t.Fatal("Latin-1 atom compared as bytes")
	}
	if _, ok := raw.CompareBodies(bodyOf(t, Float(1)), bodyOf(t, Int(1))); ok {
		t.Fatal("float and integer compared")
	}
}

func TestEncodedFuncsDoNotAllocate(t *testing.T) {
	enc, err := Encode(Tuple{Binary(make([]byte, 16)), Binary(make([]byte, 100)), Atom("x"), Int(300)})
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		s, e, ok := raw.TupleElement(enc, 2)
		if !ok || Validate(enc) != nil {
			t.Fatal("bad")
		}
		if _, ok := raw.Phash2Body(enc[s:e]); !ok {
			t.Fatal("not hashed")
		}
		if _, ok := raw.CompareBodies(enc[1:], enc[1:]); !ok {
			t.Fatal("not compared")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
