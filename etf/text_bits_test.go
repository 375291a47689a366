package etf

// Tests of the bit-syntax writer.

import (
	"math"
	"strings"
	"testing"
)

func TestFloat16(t *testing.T) {
	// Every half-precision value converts back to its own bits, and values
	// between two halves round to the nearer (even on a tie).
	for h := 0; h < 1<<16; h++ {
		exp := h >> 10 & 0x1F
		if exp == 0x1F {
			continue // infinities and NaNs
		}
		f := decodeHalfFloat(uint16(h))
		if got := float16Bits(f); got != uint16(h) {
			t.Fatalf("float16Bits(%v) = %#04x, want %#04x", f, got, h)
		}
		if h&0x7FFF == 0x7BFF || h&0x8000 != 0 {
			continue
		}
		next := decodeHalfFloat(uint16(h + 1))
		mid := (f + next) / 2
		want := uint16(h)
		if h&1 == 1 {
			want++
		}
		if got := float16Bits(mid); got != want {
			t.Fatalf("float16Bits(%v) (a tie) = %#04x, want %#04x", mid, got, want)
		}
	}
}

// decodeHalfFloat decodes IEEE half-precision bits.
func decodeHalfFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h >> 10 & 0x1F)
	mant := float64(h & 0x3FF)
	if exp == 0 {
		return sign * math.Ldexp(mant, -24)
	}
	return sign * math.Ldexp(1+mant/1024, exp-15)
}

// TestSegmentSpecMessages pins the wording of specifier errors, which name
// the specifiers as the text spelled them (bytes and bits as binary).
func TestSegmentSpecMessages(t *testing.T) {
	cases := []struct{ text, msg string }{
		{"<<1:8/big-little>>", "conflicting type specifiers big and little"},
		{"<<1:8/integer-float>>", "conflicting type specifiers integer and float"},
		{"<<1:8/signed-unsigned>>", "conflicting type specifiers signed and unsigned"},
		{"<<<<1>>/bytes-utf8>>", "conflicting type specifiers binary and utf8"},
		{"<<<<1>>/bytes-bits>>", "conflicting units 8 and 1"},
		{"<<1/utf16-unit:8>>", "bad binary segment: utf16 takes no size or unit"},
		{"<<-1/utf32>>", "bad binary segment: utf32 segment needs a Unicode code point"},
		{"<<1/little-integer-unsigned-little>>", ""},
		{"<<1/native-little>>", "conflicting type specifiers native and little"},
		{"<<1/bogus>>", "unknown type specifier bogus"},
		{"<<1/unit>>", "unknown type specifier unit"},
	}
	for _, c := range cases {
		_, err := Parse(c.text)
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.text, err)
		case c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)):
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.text, err, c.msg)
		}
	}
}

// TestValueBitsLarge: a binary segment value of 256 MiB or more has 2^31
// bits or more, which a 32-bit int cannot hold (GOARCH=386 shows it).
func TestValueBitsLarge(t *testing.T) {
	big := make(Binary, 1<<28) // fresh zero pages: cheap until touched
	if _, n, ok := valueBits(big); !ok || n != 1<<31 {
		t.Errorf("valueBits(256 MiB binary) = %d, %v; want %d", n, ok, int64(1)<<31)
	}
	bs := Bitstring{Bytes: big, Bits: 3}
	if _, n, ok := valueBits(bs); !ok || n != 1<<31-5 {
		t.Errorf("valueBits(256 MiB bitstring) = %d, %v; want %d", n, ok, int64(1)<<31-5)
	}
	if _, _, ok := valueBits(Int(1)); ok {
		t.Error("valueBits(Int) reports a binary")
	}
}
