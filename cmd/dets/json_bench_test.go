package main

// BenchmarkJSON compares the hand-written JSON writer of dump --format json
// (appendJSON) with the same mapping through encoding/json (stdJSON
// below), on the objects of a typical table, and puts both next to the
// rest of a dump's work per object: decoding it (etf.Decode) and writing
// it in Erlang syntax.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/godets/godets/etf"
)

type (
	stdFloat float64
	stdAtom  struct {
		Atom string `json:"atom"`
	}
	stdBinary struct {
		Binary string `json:"binary"`
	}
	stdBase64 struct {
		Base64 []byte `json:"base64"`
	}
	stdBits struct {
		Bitstring []byte `json:"bitstring"`
		Bits      int    `json:"bits"`
	}
	stdTuple struct {
		Tuple []any `json:"tuple"`
	}
	stdString struct {
		String string `json:"string"`
	}
	stdImproper struct {
		Improper []any `json:"improper"`
		Tail     any   `json:"tail"`
	}
	stdMap struct {
		Map [][2]any `json:"map"`
	}
	stdETF struct {
		ETF []byte `json:"etf"`
	}
)

func (f stdFloat) MarshalJSON() ([]byte, error) {
	b := append([]byte(`{"float":`), appendFloat(nil, float64(f))...)
	return append(b, '}'), nil
}

// stdValue maps a term to values that encoding/json writes in the
// documented mapping.
func stdValue(t etf.Term) (any, error) {
	list := func(elems []etf.Term) ([]any, error) {
		out := make([]any, len(elems))
		for i, e := range elems {
			v, err := stdValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	switch v := t.(type) {
	case etf.Int:
		return int64(v), nil
	case *etf.BigInt:
		return json.Number(v.Big().String()), nil
	case etf.Float:
		return stdFloat(v), nil
	case etf.Atom:
		switch v {
		case etf.True:
			return true, nil
		case etf.False:
			return false, nil
		}
		return stdAtom{string(v)}, nil
	case etf.Binary:
		if utf8.Valid(v) {
			return stdBinary{string(v)}, nil
		}
		return stdBase64{v}, nil
	case etf.Bitstring:
		return stdBits{v.Bytes, (len(v.Bytes)-1)*8 + int(v.Bits)}, nil
	case etf.Tuple:
		l, err := list(v)
		return stdTuple{l}, err
	case etf.List:
		if s, ok := printable(v); ok {
			return stdString{s}, nil
		}
		return list(v)
	case *etf.ImproperList:
		l, err := list(v.Elems)
		if err != nil {
			return nil, err
		}
		tail, err := stdValue(v.Tail)
		return stdImproper{l, tail}, err
	case etf.Map:
		pairs := slices.Clone(v)
		slices.SortFunc(pairs, func(p, q etf.Pair) int { return etf.CompareExact(p.Key, q.Key) })
		m := stdMap{Map: make([][2]any, len(pairs))}
		for i, p := range pairs {
			k, err := stdValue(p.Key)
			if err != nil {
				return nil, err
			}
			val, err := stdValue(p.Value)
			if err != nil {
				return nil, err
			}
			m.Map[i] = [2]any{k, val}
		}
		return m, nil
	case *etf.Opaque:
		return stdETF{append([]byte{131}, v.Raw...)}, nil
	}
	return nil, fmt.Errorf("unknown term %T", t)
}

func benchObjects() []etf.Term {
	var objs []etf.Term
	for i := range 1000 {
		objs = append(objs, etf.Tuple{
			etf.Binary(fmt.Sprintf("user:%08d", i)),
			etf.Atom("active"),
			etf.Int(i * 37),
			etf.Float(float64(i) / 3),
			etf.Str(strings.Repeat("name", 1+i%4)),
			etf.List{etf.Int(1), etf.Int(2), etf.Atom("x")},
			etf.Map{{Key: etf.Atom("seen"), Value: etf.Int(i)}, {Key: etf.Binary("tag"), Value: etf.Binary("blue")}},
			etf.NewBigInt(new(big.Int).Lsh(big.NewInt(int64(i+1)), 80)),
		})
	}
	return objs
}

// TestStdJSONSameMapping: the encoding/json version benchmarked writes the
// same JSON values (so the comparison is fair).
func TestStdJSONSameMapping(t *testing.T) {
	for _, o := range benchObjects()[:50] {
		mine, err := appendJSON(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		v, err := stdValue(o)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(buf.String(), "\n"); got != string(mine) {
			t.Fatalf("encoding/json %s, appendJSON %s", got, mine)
		}
	}
}

func BenchmarkJSON(b *testing.B) {
	objs := benchObjects()
	encs := make([][]byte, len(objs))
	for i, o := range objs {
		encs[i], _ = etf.Encode(o)
	}
	per := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(objs)), "ns/object")
	}
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var line []byte
		for range b.N {
			for _, o := range objs {
				line, _ = appendJSON(line[:0], o)
			}
		}
		per(b)
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for range b.N {
			for _, o := range objs {
				buf.Reset()
				v, _ := stdValue(o)
				_ = enc.Encode(v)
			}
		}
		per(b)
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for _, e := range encs {
				_, _ = etf.Decode(e)
			}
		}
		per(b)
	})
	b.Run("erlang-text", func(b *testing.B) {
		b.ReportAllocs()
		var line []byte
		for range b.N {
			for _, o := range objs {
				line, _ = etf.AppendFormatStrict(line[:0], o)
			}
		}
		per(b)
	})
}
