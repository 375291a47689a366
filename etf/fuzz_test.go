package etf

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Seed corpora live in testdata/fuzz/FuzzDecode and
// testdata/fuzz/FuzzRoundTrip: OTP encodings of every tag (including
// compressed, minor version 0 and 2, pids, references and funs) and
// near-miss invalid inputs.

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		"83 68 02 64 0001 61 61 01",
		"83 6c 00000002 61 01 61 02 61 03",
		"83 74 00000002 64 0001 61 61 01 61 02 64 0001 62",
		"83 4d 00000001 03 a0",
		"83 6e 09 00 000000000000000001",
		"83 77 02 cea9",
		"83 58" + nodeA + "00000001 00000002 00000003",
	} {
		f.Add(hx(s))
	}
	f.Add(compressedEnc(hx("68 02 64 0001 61 61 01"), 8))
	f.Add(floatExtBytes("1.50000000000000000000e+00"))
}

// FuzzDecode: Decode never panics, and every failure is a *DecodeError;
// DecodeOne gives the same term, as a slice of one, or the same error;
// and every other walker agrees with Decode (walkerVerdict).
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	for _, c := range limitCases() {
		if len(c.enc) < 1<<12 {
			f.Add(c.enc)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var bd RawBatch
		if _, problems := walkerVerdict(&bd, b); len(problems) > 0 {
			t.Fatal(problems[0])
		}
		term, err := Decode(b)
		one, oerr := raw.DecodeOne(b)
		if (err == nil) != (oerr == nil) || (err != nil && err.Error() != oerr.Error()) {
			t.Fatalf("Decode error %v, DecodeOne error %v", err, oerr)
		}
		if err == nil && (len(one) != 1 || !reflect.DeepEqual(one[0], term)) {
			t.Fatalf("DecodeOne gave %#v, Decode %#v", one, term)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrDecode) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if term != nil {
				t.Fatal("a term returned with an error")
			}
			return
		}
		if term == nil {
			t.Fatal("nil term without an error")
		}
	})
}

// FuzzRoundTrip: whatever decodes re-encodes, and decode -> encode ->
// decode is stable: the same term, the same bytes, the same hash.
func FuzzRoundTrip(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		term, err := Decode(b)
		if err != nil {
			return
		}
		enc, err := Encode(term)
		if err != nil {
			t.Fatalf("decoded term does not encode: %v", err)
		}
		if n, err := EncodedSize(term); err != nil || n != len(enc) {
			t.Fatalf("EncodedSize %d, %v; Encode wrote %d", n, err, len(enc))
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("our encoding %x does not decode: %v", enc, err)
		}
		if !Equal(back, term) || Compare(back, term) != 0 || CompareExact(term, back) != 0 {
			t.Fatalf("round trip changed the term: %x -> %x", b, enc)
		}
		again, err := Encode(back)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable: %x vs %x", enc, again)
		}
		if Phash2(back) != Phash2(term) {
			t.Fatal("hash changed in a round trip")
		}
	})
}
