package main

import (
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/godets/godets/etf"
)

// jsonMappingHelp documents the term-to-JSON mapping used by dump --format json.
// It is shown by `dets dump --help` and repeated in the package doc.
const jsonMappingHelp = `JSON mapping (dump --format json): one JSON value per line (JSON Lines), one
line per object. Every Erlang term maps to exactly one JSON shape, and no two
different terms map to the same JSON text, so the mapping is lossless:

  integer              a JSON number with no fraction or exponent, exact at any
                       size (big integers too): 42, -7, 123456789012345678901234
  float                {"float": 1.5}; the number is the shortest decimal that
                       reads back as the same double
  true, false          JSON true, false (Erlang booleans are these atoms)
  any other atom       {"atom": "name"}
  binary               {"binary": "text"} when the bytes are valid UTF-8,
                       otherwise {"base64": "AAEC"} (standard base64, padded)
  bit string           {"bitstring": "base64 of the bytes", "bits": N}, N the
                       total number of bits; unused low bits of the last byte are 0
  tuple                {"tuple": [elements...]}
  [] and proper lists  a JSON array of the elements: [], [1, {"atom": "a"}]
  printable string     {"string": "text"} for a non-empty list whose elements
                       are all printable Unicode code points (a list is the same
                       term whichever way it is written)
  improper list        {"improper": [elements...], "tail": tail}
  map                  {"map": [[key, value], ...]}, pairs sorted in Erlang term order
  pid, port, ref, fun  {"etf": "base64 of term_to_binary(Term)"}

Objects are DETS records, so each line is a {"tuple": [...]}.`

// appendJSON appends the JSON form of t (see jsonMappingHelp) to b.
func appendJSON(b []byte, t etf.Term) ([]byte, error) {
	switch v := t.(type) {
	case etf.Int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case *etf.BigInt:
		return v.Big().Append(b, 10), nil
	case etf.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return b, errors.New("float is not finite")
		}
		b = append(b, `{"float":`...)
		b = appendFloat(b, f)
		return append(b, '}'), nil
	case etf.Atom:
		switch v {
		case etf.True:
			return append(b, "true"...), nil
		case etf.False:
			return append(b, "false"...), nil
		}
		b = append(b, `{"atom":`...)
		b = appendJSONString(b, string(v))
		return append(b, '}'), nil
	case etf.Binary:
		if utf8.Valid(v) {
			b = append(b, `{"binary":`...)
			b = appendJSONString(b, string(v))
		} else {
			b = append(b, `{"base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, v)
			b = append(b, '"')
		}
		return append(b, '}'), nil
	case etf.Bitstring:
		bits := len(v.Bytes) * 8
		if v.Bits > 0 && len(v.Bytes) > 0 {
			bits = (len(v.Bytes)-1)*8 + int(v.Bits)
		}
		b = append(b, `{"bitstring":"`...)
		b = base64.StdEncoding.AppendEncode(b, v.Bytes)
		b = append(b, `","bits":`...)
		b = strconv.AppendInt(b, int64(bits), 10)
		return append(b, '}'), nil
	case etf.Tuple:
		b = append(b, `{"tuple":`...)
		b, err := appendJSONArray(b, v)
		if err != nil {
			return b, err
		}
		return append(b, '}'), nil
	case etf.List:
		if s, ok := printable(v); ok {
			b = append(b, `{"string":`...)
			b = appendJSONString(b, s)
			return append(b, '}'), nil
		}
		return appendJSONArray(b, v)
	case *etf.ImproperList:
		b = append(b, `{"improper":`...)
		b, err := appendJSONArray(b, v.Elems)
		if err != nil {
			return b, err
		}
		b = append(b, `,"tail":`...)
		if b, err = appendJSON(b, v.Tail); err != nil {
			return b, err
		}
		return append(b, '}'), nil
	case etf.Map:
		pairs := slices.Clone(v)
		slices.SortFunc(pairs, func(p, q etf.Pair) int { return etf.CompareExact(p.Key, q.Key) })
		b = append(b, `{"map":[`...)
		for i, p := range pairs {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			b = append(b, '[')
			if b, err = appendJSON(b, p.Key); err != nil {
				return b, err
			}
			b = append(b, ',')
			if b, err = appendJSON(b, p.Value); err != nil {
				return b, err
			}
			b = append(b, ']')
		}
		return append(b, "]}"...), nil
	case *etf.Opaque:
		raw := append([]byte{131}, v.Raw...)
		b = append(b, `{"etf":"`...)
		b = base64.StdEncoding.AppendEncode(b, raw)
		return append(b, `"}`...), nil
	case nil:
		return b, errors.New("nil term")
	}
	return b, errors.New("unknown term type")
}

func appendJSONArray(b []byte, elems []etf.Term) ([]byte, error) {
	b = append(b, '[')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSON(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendFloat writes f as a JSON number that always has a fraction or an
// exponent, so that a reader never mistakes it for an integer.
func appendFloat(b []byte, f float64) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' || c == 'E' {
			return b
		}
	}
	return append(b, ".0"...)
}

// printable reports whether l is a non-empty list of printable code points,
// returning it as text.
func printable(l etf.List) (string, bool) {
	if len(l) == 0 {
		return "", false
	}
	s, ok := l.AsString()
	if !ok {
		return "", false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return "", false
		}
	}
	return s, true
}

// appendJSONString writes s (valid UTF-8) as a JSON string. Only the
// characters JSON requires are escaped, so the output stays readable.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20 || r == 0x2028 || r == 0x2029 || r == 0x7f:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
