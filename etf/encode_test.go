package etf

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// Expected bytes follow OTP 25's term_to_binary/1; the OTP-checked ones are
// marked, the rest follow the layouts in decode.go and are re-checked
// against erl by TestOTPDifferential and TestOTPEdgeEncodings.
func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		in   Term
		want string
	}{
		{"{a,1} (OTP)", Tuple{Atom("a"), Int(1)}, "83 68 02 64 0001 61 61 01"},
		{"{42,\"str\"} (OTP)", Tuple{Int(42), Str("str")}, "83 68 02 61 2a 6b 0003 737472"},
		{"0", Int(0), "83 61 00"},
		{"255", Int(255), "83 61 ff"},
		{"256", Int(256), "83 62 00000100"},
		{"-1", Int(-1), "83 62 ffffffff"},
		{"-2^31", Int(math.MinInt32), "83 62 80000000"},
		{"2^31 (OTP)", Int(1 << 31), "83 6e 04 00 00000080"},
		{"-2^31-1 (OTP)", Int(math.MinInt32 - 1), "83 6e 04 01 01000080"},
		{"2^63 (OTP)", bigLit("0x8000000000000000"), "83 6e 08 00 0000000000000080"},
		{"-2^63", Int(math.MinInt64), "83 6e 08 01 0000000000000080"},
		{"2^64 (OTP)", bigLit("0x10000000000000000"), "83 6e 09 00 000000000000000001"},
		{"-2^64 (OTP)", bigLit("-0x10000000000000000"), "83 6e 09 01 000000000000000001"},
		{"2^2040", NewBigInt(new(big.Int).Lsh(big.NewInt(1), 2040)), "83 6f 00000100 00" + strings.Repeat("00", 255) + "01"},
		{"2^2039 fits SMALL_BIG", NewBigInt(new(big.Int).Lsh(big.NewInt(1), 2039)), "83 6e ff 00" + strings.Repeat("00", 254) + "80"},
		{"unnormalized BigInt", func() Term { b := new(BigInt); b.v.SetInt64(300); return b }(), "83 62 0000012c"},
		{"1.5 (OTP)", Float(1.5), "83 46 3ff8000000000000"},
		{"-0.0 (OTP)", Float(math.Copysign(0, -1)), "83 46 8000000000000000"},
		{"atom", Atom("ok"), "83 64 0002 6f6b"},
		{"empty atom (OTP)", Atom(""), "83 64 0000"},
		{"latin1 atom (OTP)", Atom("é"), "83 64 0001 e9"},
		{"utf8 atom (OTP)", Atom("Ω"), "83 77 02 cea9"},
		{"utf8 atom 255 bytes", Atom(strings.Repeat("Ω", 127) + "a"), "83 77 ff" + strings.Repeat("cea9", 127) + "61"},
		{"utf8 atom 256 bytes", Atom(strings.Repeat("Ω", 128)), "83 76 0100" + strings.Repeat("cea9", 128)},
		{"255-char latin1 atom (OTP)", Atom(strings.Repeat("x", 255)), "83 64 00ff" + strings.Repeat("78", 255)},
		{"nil", Nil, "83 6a"},
		{"empty list", List{}, "83 6a"},
		{"string", Str("abc"), "83 6b 0003 616263"},
		{"string with 0 and 255", List{Int(0), Int(255)}, "83 6b 0002 00ff"},
		{"list with 256 (OTP)", List{Int(256)}, "83 6c 00000001 62 00000100 6a"},
		{"list with -1", List{Int(-1)}, "83 6c 00000001 62 ffffffff 6a"},
		{"mixed list", List{Int(1), Atom("a")}, "83 6c 00000002 61 01 64 0001 61 6a"},
		{"improper [1,2|3] (OTP)", &ImproperList{Elems: []Term{Int(1), Int(2)}, Tail: Int(3)}, "83 6c 00000002 61 01 61 02 61 03"},
		{"binary", Binary{1, 2, 3}, "83 6d 00000003 010203"},
		{"empty binary (OTP)", Binary{}, "83 6d 00000000"},
		{"nil binary", Binary(nil), "83 6d 00000000"},
		{"<<5:3>> (OTP)", Bitstring{Bytes: []byte{0xa0}, Bits: 3}, "83 4d 00000001 03 a0"},
		{"bitstring low bits zeroed", Bitstring{Bytes: []byte{0xff, 0xff}, Bits: 3}, "83 4d 00000002 03 ffe0"},
		{"{} (OTP)", Tuple{}, "83 68 00"},
		{"nil tuple", Tuple(nil), "83 68 00"},
		{"empty map", Map{}, "83 74 00000000"},
		{"map sorted (OTP order)", Map{{Atom("b"), Int(2)}, {Float(1), Int(3)}, {Atom("a"), Int(1)}, {Int(2), Int(4)}},
			"83 74 00000004 61 02 61 04 46 3ff0000000000000 61 03 64 0001 61 61 01 64 0001 62 61 02"},
		{"opaque", &Opaque{Raw: hx("58" + nodeA + "00000001 00000000 00000000")}, "83 58" + nodeA + "00000001 00000000 00000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := hx(tc.want)
			got, err := Encode(tc.in)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode = %x\nwant     %x", got, want)
			}
			if n, err := EncodedSize(tc.in); err != nil || n != len(want) {
				t.Errorf("EncodedSize = %d, %v; want %d", n, err, len(want))
			}
			app, err := AppendEncode([]byte("prefix"), tc.in)
			if err != nil || string(app[:6]) != "prefix" || !bytes.Equal(app[6:], want) {
				t.Errorf("AppendEncode = %x, %v", app, err)
			}
		})
	}
}

func TestEncodeLargeTuple(t *testing.T) {
	tup := make(Tuple, 256)
	for i := range tup {
		tup[i] = Int(1)
	}
	got, err := Encode(tup)
	if err != nil {
		t.Fatal(err)
	}
	want := append(hx("83 69 00000100"), bytes.Repeat([]byte{0x61, 1}, 256)...)
	if !bytes.Equal(got, want) {
		t.Errorf("256-tuple encodes as %x...", got[:8])
	}
}

func TestEncodeStringLimit(t *testing.T) {
	for _, n := range []int{65535, 65536} {
		l := make(List, n)
		for i := range l {
			l[i] = Int(7)
		}
		got, err := Encode(l)
		if err != nil {
			t.Fatal(err)
		}
		wantTag := byte(tagString)
		if n > 65535 {
			wantTag = tagList
		}
		if got[1] != wantTag {
			t.Errorf("list of %d bytes encodes with tag %d, want %d", n, got[1], wantTag)
		}
	}
}

// funIndex is a local fun (no free variables) whose Index is index.
func funIndex(index uint32) *Opaque {
	return opaqueHex(fmt.Sprintf("70 00000033 00 %032x %08x 00000000 6400016d 6100 6100", 0, index) + "58" + nodeA + "00000001 00000000 00000000")
}

func TestEncodeErrors(t *testing.T) {
	pid := hx("58" + nodeA + "00000001 00000000 00000000")
	dupMap := Map{{Int(1), Atom("a")}, {Int(1), Atom("b")}}
	tests := []struct {
		name string
		in   Term
		why  string
	}{
		{"nil term", nil, "nil Term"},
		{"nil in tuple", Tuple{Int(1), nil}, "nil Term"},
		{"nil BigInt", (*BigInt)(nil), "nil *BigInt"},
		{"nil ImproperList", (*ImproperList)(nil), "nil *ImproperList"},
		{"nil Opaque", (*Opaque)(nil), "nil *Opaque"},
		{"NaN", Float(math.NaN()), "not finite"},
		{"+Inf", Float(math.Inf(1)), "not finite"},
		{"-Inf in list", List{Float(math.Inf(-1))}, "not finite"},
		{"long atom", Atom(strings.Repeat("x", 256)), "256 characters"},
		{"long utf8 atom", Atom(strings.Repeat("Ω", 256)), "256 characters"},
		{"invalid utf8 atom", Atom("a\xffb"), "UTF-8"},
		{"bitstring 0 bits", Bitstring{Bytes: []byte{1}, Bits: 0}, "Bits is 0"},
		{"bitstring 8 bits", Bitstring{Bytes: []byte{1}, Bits: 8}, "Bits is 8"},
		{"bitstring no bytes", Bitstring{Bits: 3}, "no bytes"},
		{"improper no elems", &ImproperList{Tail: Int(1)}, "no elements"},
		{"improper nil tail", &ImproperList{Elems: []Term{Int(1)}}, "nil tail"},
		{"improper list tail", &ImproperList{Elems: []Term{Int(1)}, Tail: List{Int(2)}}, "tail is a list"},
		{"improper nil-list tail", &ImproperList{Elems: []Term{Int(1)}, Tail: Nil}, "tail is a list"},
		{"improper improper tail", &ImproperList{Elems: []Term{Int(1)}, Tail: &ImproperList{Elems: []Term{Int(2)}, Tail: Int(3)}}, "tail is a list"},
		{"improper bad elem", &ImproperList{Elems: []Term{Float(math.NaN())}, Tail: Int(3)}, "not finite"},
		{"improper bad tail", &ImproperList{Elems: []Term{Int(1)}, Tail: Float(math.NaN())}, "not finite"},
		{"duplicate keys", dupMap, "duplicate"},
		{"duplicate keys unsorted", Map{{Int(2), Int(0)}, {Int(1), Atom("a")}, {Int(1), Atom("b")}}, "duplicate"},
		{"duplicate zero keys", Map{{Float(0), Int(0)}, {Float(math.Copysign(0, -1)), Int(1)}}, "duplicate"},
		{"bad map value", Map{{Int(1), nil}}, "nil Term"},
		{"map keys OTP misorders", Map{{funIndex(0), Int(1)}, {funIndex(1 << 31), Int(2)}}, "misorders"},
		{"nested map keys OTP misorders", List{Map{{Tuple{funIndex(1 << 31)}, Int(1)}, {Tuple{funIndex(0)}, Int(2)}}}, "misorders"},
		{"bad map key", Map{{Float(math.NaN()), Int(1)}}, "not finite"},
		{"empty opaque", &Opaque{}, "no bytes"},
		{"opaque wrong tag", &Opaque{Raw: []byte{0x61, 1}}, "tag 97"},
		{"opaque truncated", &Opaque{Raw: pid[:len(pid)-1]}, "malformed"},
		{"opaque trailing", &Opaque{Raw: append(append([]byte(nil), pid...), 0)}, "after its term"},
		{"too deep", func() Term {
			var t Term = Nil
			for range MaxDepth + 1 {
				t = Tuple{t}
			}
			return t
		}(), "deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.in)
			if err == nil {
				t.Fatalf("Encode = %x, want an error", got)
			}
			var ee *EncodeError
			if !errors.Is(err, ErrEncode) || !errors.As(err, &ee) {
				t.Errorf("error %v is not an *EncodeError matching ErrEncode", err)
			}
			if !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %q does not mention %q", err, tc.why)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "etf: ") {
				t.Errorf("error %q is not one line with the package prefix", err)
			}
			if _, serr := EncodedSize(tc.in); serr == nil {
				t.Error("EncodedSize accepted a term Encode rejects")
			}
			dst := []byte("keep")
			out, aerr := AppendEncode(dst, tc.in)
			if aerr == nil || string(out) != "keep" {
				t.Errorf("AppendEncode = %q, %v; want dst unchanged and an error", out, aerr)
			}
		})
	}
}

func TestEncodeMapDoesNotMutate(t *testing.T) {
	m := Map{{Atom("z"), Int(1)}, {Int(5), Int(2)}, {Float(0.5), Int(3)}}
	orig := append(Map(nil), m...)
	enc1, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		if !Equal(m[i].Key, orig[i].Key) {
			t.Fatal("Encode reordered the caller's map")
		}
	}
	// Every permutation encodes the same.
	rev := Map{m[2], m[1], m[0]}
	enc2, _ := Encode(rev)
	if !bytes.Equal(enc1, enc2) {
		t.Error("pair order changed the encoding")
	}
}

func TestEncodeRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	buf := make([]byte, 0, 1<<16)
	for range 3000 {
		term := randomTerm(r, 4)
		enc, err := Encode(term)
		if err != nil {
			t.Fatalf("Encode(%s): %v", Format(term), err)
		}
		if n, err := EncodedSize(term); err != nil || n != len(enc) {
			t.Fatalf("EncodedSize = %d, %v; Encode wrote %d", n, err, len(enc))
		}
		buf, err = AppendEncode(buf[:0], term)
		if err != nil || !bytes.Equal(buf, enc) {
			t.Fatalf("AppendEncode differs from Encode")
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(%x)): %v", enc, err)
		}
		if !Equal(back, term) {
			t.Fatalf("round trip changed %x", enc)
		}
		again, _ := Encode(back)
		if !bytes.Equal(again, enc) {
			t.Fatalf("second encoding differs: %x vs %x", again, enc)
		}
	}
}

// AppendEncode into a buffer with room must not allocate.
func TestAppendEncodeNoAlloc(t *testing.T) {
	term := Tuple{Atom("user"), Int(12345), Binary(make([]byte, 100)), Str("name"), List{Float(1.5), NewUint(1 << 63)},
		Map{{Atom("a"), Int(1)}, {Atom("b"), Atom("é")}}, &ImproperList{Elems: []Term{Int(1)}, Tail: Atom("x")}}
	buf := make([]byte, 0, 1024)
	var err error
	if n := testing.AllocsPerRun(100, func() { buf, err = AppendEncode(buf[:0], term) }); n != 0 {
		t.Errorf("AppendEncode allocated %v times", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, err = EncodedSize(term) }); n != 0 {
		t.Errorf("EncodedSize allocated %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, err = Encode(term) }); n != 1 {
		t.Errorf("Encode allocated %v times, want 1", n)
	}
}
