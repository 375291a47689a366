package main

import (
	"bytes"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/godets/godets/etf"
)

// TestJSONMapping checks each row of the documented mapping against JSON
// written by hand from the table in jsonMappingHelp.
func TestJSONMapping(t *testing.T) {
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	cases := []struct {
		term etf.Term
		want string
	}{
		{etf.Int(42), `42`},
		{etf.Int(-7), `-7`},
		{etf.NewBigInt(huge), `-123456789012345678901234567890`},
		{etf.Float(1.5), `{"float":1.5}`},
		{etf.Float(3), `{"float":3.0}`},
		{etf.Float(1e300), `{"float":1e+300}`},
		{etf.True, `true`},
		{etf.False, `false`},
		{etf.Atom("ok"), `{"atom":"ok"}`},
		{etf.Atom("say \"hi\"\n"), `{"atom":"say \"hi\"\n"}`},
		{etf.Binary("héllo"), `{"binary":"héllo"}`},
		{etf.Binary{0, 1, 0xff}, `{"base64":"AAH/"}`},
		{etf.Binary{}, `{"binary":""}`},
		{etf.Bitstring{Bytes: []byte{0xa0}, Bits: 3}, `{"bitstring":"oA==","bits":3}`},
		{etf.Tuple{}, `{"tuple":[]}`},
		{etf.Tuple{etf.Atom("a"), etf.Int(1)}, `{"tuple":[{"atom":"a"},1]}`},
		{etf.List{}, `[]`},
		{etf.List{etf.Int(1), etf.Atom("a")}, `[1,{"atom":"a"}]`},
		{etf.Str("abc\tλ"), `{"string":"abc\tλ"}`},
		{etf.List{etf.Int(1), etf.Int(2)}, `[1,2]`}, // not printable
		{etf.NewImproperList(etf.Atom("b"), etf.Atom("a")), `{"improper":[{"atom":"a"}],"tail":{"atom":"b"}}`},
		{etf.Map{{Key: etf.Atom("b"), Value: etf.Int(2)}, {Key: etf.Int(1), Value: etf.Nil}},
			`{"map":[[1,[]],[{"atom":"b"},2]]}`}, // number < atom in term order
		{&etf.Opaque{Raw: []byte{103, 100, 0, 1, 'a', 0, 0, 0, 1, 0, 0, 0, 0, 0}}, `{"etf":"g2dkAAFhAAAAAQAAAAAA"}`},
	}
	for _, c := range cases {
		got, err := appendJSON(nil, c.term)
		if err != nil {
			t.Errorf("%s: %v", etf.Format(c.term), err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", etf.Format(c.term), got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON %s", etf.Format(c.term), got)
		}
	}
}

func TestJSONStringEscapes(t *testing.T) {
	got, err := appendJSON(nil, etf.Binary("a\x00\x1f\u2028\\\"z"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if v["binary"] != "a\x00\x1f\u2028\\\"z" {
		t.Errorf("round trip through encoding/json: %q", v["binary"])
	}
	if bytes.ContainsRune(got, 0) {
		t.Error("raw NUL in JSON output")
	}
}
