package main

import (
	"bytes"
	"testing"

	"github.com/godets/godets/etf"
)

// FuzzJSONRoundTrip: dump's JSON form of any term (appendJSON) reads back,
// through load's reader (decodeJSONLine), as a term that encodes to the
// same bytes, so dump --json | load loses nothing; and whatever line the
// reader accepts writes and reads back the same way. The input is taken
// first as an encoded term, then as a JSON line.
func FuzzJSONRoundTrip(f *testing.F) {
	for _, x := range []etf.Term{
		etf.Int(-7), etf.Float(-0.0), etf.Float(1e300), etf.Atom("ok"), etf.Binary{0, 0xff},
		etf.Bitstring{Bytes: []byte{0xa0}, Bits: 3}, etf.Str("abc"), etf.List{etf.Int(1)},
		etf.NewImproperList(etf.Atom("b"), etf.Atom("a")), etf.Tuple{etf.True, etf.List{}},
	} {
		b, err := etf.Encode(x)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"tuple":[{"atom":"a"},1,{"float":2.5},{"base64":"AAH/"}]}`))
	f.Add([]byte(`{"improper":[1],"tail":{"string":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if x, err := etf.Decode(data); err == nil {
			jsonRoundTrip(t, x)
		}
		if x, err := decodeJSONLine(data); err == nil {
			jsonRoundTrip(t, x)
		}
	})
}

// jsonRoundTrip writes x as JSON and reads it back; a term with no JSON
// form is refused by the writer, and anything written must read back to
// the same encoding.
func jsonRoundTrip(t *testing.T, x etf.Term) {
	t.Helper()
	want, err := etf.Encode(x)
	if err != nil {
		return
	}
	js, err := appendJSON(nil, x)
	if err != nil {
		return
	}
	y, err := decodeJSONLine(js)
	if err != nil {
		t.Fatalf("%v written as %s does not read back: %v", x, js, err)
	}
	got, err := etf.Encode(y)
	if err != nil {
		t.Fatalf("%v read back from %s as %v, which does not encode: %v", x, js, y, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%v written as %s reads back as %v", x, js, y)
	}
}
