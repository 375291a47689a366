package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/godets/godets/etf"
)

// looksLikeJSON reports whether the input is JSON Lines (dump --format json):
// its first non-blank line is one JSON object. Erlang text never is: a
// consulted term ends with a dot, and a tuple of Erlang terms has no
// "name": pairs.
func looksLikeJSON(data []byte) bool {
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		return line[0] == '{' && (json.Valid(line) || startsJSONObject(line))
	}
	return false
}

// startsJSONObject reports whether line opens a JSON object: a brace, a
// string, then the colon of a key, which Erlang text never has after a
// brace (a tuple's string is followed by a comma or the closing brace).
// It lets a JSON line that is not valid as a whole (nested too deep, two
// objects on one line) be reported as bad JSON, not as bad Erlang.
func startsJSONObject(line []byte) bool {
	d := json.NewDecoder(bytes.NewReader(line))
	for range 3 { // '{', the key, and the token after the colon
		if _, err := d.Token(); err != nil {
			return false
		}
	}
	return true
}

// parseJSONLines reads the JSON Lines that dump --format json writes, one
// term a line (blank lines are skipped), with the mapping of
// jsonMappingHelp. An error names the line.
func parseJSONLines(data []byte) ([]consultObject, error) {
	var out []consultObject
	n := 0
	for line := range bytes.Lines(data) {
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		t, err := decodeJSONLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		out = append(out, consultObject{term: t, line: n})
	}
	return out, nil
}

func decodeJSONLine(line []byte) (etf.Term, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value on the line")
	}
	if err := checkJSONText(line); err != nil {
		return nil, err
	}
	return termFromJSON(v)
}

// checkJSONText refuses the strings that encoding/json reads as U+FFFD
// without a word: bytes that are not UTF-8, and a \u escape of a UTF-16
// surrogate that is not a high one (D800-DBFF) followed at once by a low
// one (DC00-DFFF). Such a string names no text, so loading it as U+FFFD
// would store an object that the input did not name. line is one valid
// JSON value; columns count bytes from 1.
func checkJSONText(line []byte) error {
	if !utf8.Valid(line) {
		i := 0
		for i < len(line) {
			r, n := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("column %d: byte 0x%02x is not UTF-8, which JSON text must be", i+1, line[i])
	}
	if !bytes.Contains(line, []byte(`\u`)) {
		return nil
	}
	inString := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 < len(line) && line[i+1] == 'u' {
				r, ok := hex4(line, i+2)
				if ok && utf16.IsSurrogate(r) {
					low, lok := rune(0), false
					if r < 0xdc00 && i+7 < len(line) && line[i+6] == '\\' && line[i+7] == 'u' {
						low, lok = hex4(line, i+8)
					}
					if !lok || low < 0xdc00 || low > 0xdfff {
						return fmt.Errorf("column %d: %s is a UTF-16 surrogate without its pair, which is no character", i+1, line[i:i+6])
					}
					i += 6 // past the high half: the low one is skipped below
				}
				i += 4 // the hex digits
			}
			i++ // the escaped byte ('u' for a \u escape)
		}
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// termFromJSON inverts appendJSON.
func termFromJSON(v any) (etf.Term, error) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return nil, fmt.Errorf("number %s has a fraction or an exponent: floats are written {\"float\": %s}", s, s)
		}
		b, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("bad integer %s", s)
		}
		return etf.NewBigInt(b), nil
	case bool:
		return etf.Bool(x), nil
	case []any:
		elems, err := termsFromJSON(x, make(etf.List, 0, len(x)))
		return etf.List(elems), err
	case map[string]any:
		return objectFromJSON(x)
	case string:
		return nil, fmt.Errorf("bare string %q: binaries are {\"binary\": ...}, strings {\"string\": ...}", clip(x))
	case nil:
		return nil, errors.New("null is no term")
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}

func termsFromJSON(elems []any, out []etf.Term) ([]etf.Term, error) {
	for i, e := range elems {
		t, err := termFromJSON(e)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i+1, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// objectFromJSON reads the one-key objects of the mapping (two keys for
// bit strings and improper lists).
func objectFromJSON(m map[string]any) (etf.Term, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	shape := strings.Join(keys, ",")
	str := func(k string) (string, error) {
		s, ok := m[k].(string)
		if !ok {
			return "", fmt.Errorf("{%q: ...} needs a string", k)
		}
		return s, nil
	}
	arr := func(k string) ([]any, error) {
		a, ok := m[k].([]any)
		if !ok {
			return nil, fmt.Errorf("{%q: ...} needs an array", k)
		}
		return a, nil
	}
	b64 := func(k string) ([]byte, error) {
		s, err := str(k)
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("{%q: ...}: bad base64: %v", k, err)
		}
		return b, nil
	}
	switch shape {
	case "float":
		n, ok := m["float"].(json.Number)
		if !ok {
			return nil, errors.New(`{"float": ...} needs a number`)
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return nil, fmt.Errorf("float %s: out of range", n)
		}
		return etf.Float(f), nil
	case "atom":
		s, err := str("atom")
		return etf.Atom(s), err
	case "binary":
		s, err := str("binary")
		return etf.Binary(s), err
	case "base64":
		b, err := b64("base64")
		return etf.Binary(b), err
	case "bits,bitstring":
		return bitstringFromJSON(m, b64)
	case "tuple":
		a, err := arr("tuple")
		if err != nil {
			return nil, err
		}
		elems, err := termsFromJSON(a, make(etf.Tuple, 0, len(a)))
		return etf.Tuple(elems), err
	case "string":
		s, err := str("string")
		return etf.Str(s), err
	case "improper,tail":
		a, err := arr("improper")
		if err != nil {
			return nil, err
		}
		elems, err := termsFromJSON(a, nil)
		if err != nil {
			return nil, err
		}
		tail, err := termFromJSON(m["tail"])
		if err != nil {
			return nil, fmt.Errorf("tail: %w", err)
		}
		if len(elems) == 0 {
			return nil, errors.New(`{"improper": [], ...} has no elements`)
		}
		return etf.NewImproperList(tail, elems...), nil
	case "map":
		a, err := arr("map")
		if err != nil {
			return nil, err
		}
		out := make(etf.Map, 0, len(a))
		for i, p := range a {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return nil, fmt.Errorf("map pair %d is not a [key, value] array", i+1)
			}
			k, err := termFromJSON(kv[0])
			if err != nil {
				return nil, fmt.Errorf("map pair %d key: %w", i+1, err)
			}
			v, err := termFromJSON(kv[1])
			if err != nil {
				return nil, fmt.Errorf("map pair %d value: %w", i+1, err)
			}
			out = append(out, etf.Pair{Key: k, Value: v})
		}
		sorted := slices.Clone(out)
		slices.SortFunc(sorted, func(p, q etf.Pair) int { return etf.CompareExact(p.Key, q.Key) })
		for i := 1; i < len(sorted); i++ {
			if etf.CompareExact(sorted[i-1].Key, sorted[i].Key) == 0 {
				return nil, fmt.Errorf("map has the key %s twice", clip(etf.Format(sorted[i].Key)))
			}
		}
		return out, nil
	case "etf":
		b, err := b64("etf")
		if err != nil {
			return nil, err
		}
		t, err := etf.Decode(b)
		if err != nil {
			return nil, fmt.Errorf(`{"etf": ...}: %v`, err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("object with keys {%s} is no term of the mapping (see 'dets dump --help')", shape)
}

// bitstringFromJSON reads {"bitstring": base64, "bits": N}: N bits, the
// unused low bits of the last byte zero.
func bitstringFromJSON(m map[string]any, b64 func(string) ([]byte, error)) (etf.Term, error) {
	b, err := b64("bitstring")
	if err != nil {
		return nil, err
	}
	n, ok := m["bits"].(json.Number)
	bits, nerr := strconv.ParseInt(string(n), 10, 64)
	if !ok || nerr != nil || bits < 0 || (bits+7)/8 != int64(len(b)) {
		return nil, fmt.Errorf(`{"bitstring": ...} of %d bytes needs "bits" from %d to %d`, len(b), max(len(b)*8-7, 0), len(b)*8)
	}
	tail := uint8(bits % 8)
	if tail == 0 {
		return etf.Binary(b), nil
	}
	if b[len(b)-1]&(0xff>>tail) != 0 {
		return nil, errors.New(`{"bitstring": ...}: the unused low bits of the last byte are not 0`)
	}
	return etf.Bitstring{Bytes: b, Bits: tail}, nil
}
