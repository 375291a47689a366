package etf

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// h turns spaced hex into bytes; tests write encodings the way the format
// docs lay them out.
func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func bigLit(s string) Term {
	v, ok := new(big.Int).SetString(s, 0)
	if !ok {
		panic(s)
	}
	return NewBigInt(v)
}

func zlibBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// compressed builds 131 80 Size zlib(body) with a chosen declared size.
func compressedEnc(body []byte, size uint32) []byte {
	b := binary.BigEndian.AppendUint32([]byte{131, 80}, size)
	return append(b, zlibBytes(body)...)
}

func floatExtBytes(s string) []byte {
	b := make([]byte, 31)
	copy(b, s)
	return append([]byte{131, 99}, b...)
}

const nodeA = "64 0003 614068" // 'a@h' as ATOM_EXT

func TestDecodeValid(t *testing.T) {
	pidRaw := hx("58" + nodeA + "00000001 00000002 00000003")
	tests := []struct {
		name string
		in   []byte
		want Term
	}{
		{"small integer", hx("83 61 05"), Int(5)},
		{"small integer 255", hx("83 61 ff"), Int(255)},
		{"integer -1", hx("83 62 ffffffff"), Int(-1)},
		{"integer min", hx("83 62 80000000"), Int(math.MinInt32)},
		{"small big 2^31", hx("83 6e 04 00 00000080"), Int(1 << 31)},
		{"small big empty is 0", hx("83 6e 00 00"), Int(0)},
		{"small big sign 2 is negative", hx("83 6e 02 02 0100"), Int(-1)},
		{"small big high zero bytes", hx("83 6e 03 00 05 00 00"), Int(5)},
		{"small big max int64", hx("83 6e 08 00 ffffffffffffff7f"), Int(math.MaxInt64)},
		{"small big min int64", hx("83 6e 08 01 0000000000000080"), Int(math.MinInt64)},
		{"small big 2^63", hx("83 6e 08 00 0000000000000080"), bigLit("0x8000000000000000")},
		{"small big -2^63-1", hx("83 6e 08 01 0100000000000080"), bigLit("-0x8000000000000001")},
		{"small big 2^64", hx("83 6e 09 00 000000000000000001"), bigLit("0x10000000000000000")},
		{"large big small value", hx("83 6f 00000001 00 07"), Int(7)},
		{"large big", append(hx("83 6f 00000100 01"), append(make([]byte, 255), 1)...), NewBigInt(new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 2040)))},
		{"new float", hx("83 46 3ff8000000000000"), Float(1.5)},
		{"float text", floatExtBytes("1.50000000000000000000e+00"), Float(1.5)},
		{"float text negative", floatExtBytes("-2.50000000000000000000e-01"), Float(-0.25)},
		{"float text exact", floatExtBytes("1.00000000000000005551e-01"), Float(0.1)},
		{"atom latin1", hx("83 64 0002 6f6b"), Atom("ok")},
		{"atom latin1 high", hx("83 64 0003 e5e4f6"), Atom("åäö")},
		{"atom empty", hx("83 64 0000"), Atom("")},
		{"small atom", hx("83 73 02 6f6b"), Atom("ok")},
		{"small atom latin1", hx("83 73 01 e9"), Atom("é")},
		{"atom utf8", hx("83 76 0002 cea9"), Atom("Ω")},
		{"small atom utf8", hx("83 77 06 e697a5e69cac"), Atom("日本")},
		{"atom 255 chars", append(hx("83 64 00ff"), bytes.Repeat([]byte{'x'}, 255)...), Atom(strings.Repeat("x", 255))},
		{"atom utf8 255 chars", append(hx("83 76 03fc"), bytes.Repeat([]byte("😀"), 255)...), Atom(strings.Repeat("😀", 255))},
		{"small tuple", hx("83 68 02 64 0001 61 61 01"), Tuple{Atom("a"), Int(1)}},
		{"empty tuple", hx("83 68 00"), Tuple{}},
		{"large tuple", hx("83 69 00000002 61 01 61 02"), Tuple{Int(1), Int(2)}},
		{"nil", hx("83 6a"), Nil},
		{"string", hx("83 6b 0003 616263"), Str("abc")},
		{"empty string", hx("83 6b 0000"), Nil},
		{"proper list", hx("83 6c 00000002 61 01 64 0001 61 6a"), List{Int(1), Atom("a")}},
		{"improper list", hx("83 6c 00000002 61 01 61 02 61 03"), &ImproperList{Elems: []Term{Int(1), Int(2)}, Tail: Int(3)}},
		{"list of zero elements is its tail", hx("83 6c 00000000 61 05"), Int(5)},
		{"list of zero elements and nil", hx("83 6c 00000000 6a"), Nil},
		{"list tail list flattened", hx("83 6c 00000001 61 01 6c 00000001 61 02 61 03"), &ImproperList{Elems: []Term{Int(1), Int(2)}, Tail: Int(3)}},
		{"list tail proper list", hx("83 6c 00000001 61 01 6c 00000001 61 02 6a"), List{Int(1), Int(2)}},
		{"list tail string", hx("83 6c 00000001 61 01 6b 0002 6162"), List{Int(1), Int('a'), Int('b')}},
		{"list tail empty list ext", hx("83 6c 00000001 61 01 6c 00000000 6a"), List{Int(1)}},
		{"binary", hx("83 6d 00000003 010203"), Binary{1, 2, 3}},
		{"empty binary", hx("83 6d 00000000"), Binary{}},
		{"bit binary", hx("83 4d 00000001 03 a0"), Bitstring{Bytes: []byte{0xa0}, Bits: 3}},
		{"bit binary low bits masked", hx("83 4d 00000002 03 ffff"), Bitstring{Bytes: []byte{0xff, 0xe0}, Bits: 3}},
		{"bit binary 8 bits", hx("83 4d 00000002 08 0102"), Binary{1, 2}},
		{"bit binary empty", hx("83 4d 00000000 00"), Binary{}},
		{"map", hx("83 74 00000002 64 0001 61 61 01 61 02 64 0001 62"), Map{{Atom("a"), Int(1)}, {Int(2), Atom("b")}}},
		{"empty map", hx("83 74 00000000"), Map{}},
		{"map int and float keys", hx("83 74 00000002 61 01 61 01 46 3ff0000000000000 61 02"), Map{{Int(1), Int(1)}, {Float(1), Int(2)}}},
		{"new pid", append([]byte{131}, pidRaw...), &Opaque{Raw: pidRaw}},
		{"pid in tuple", append(hx("83 68 01"), pidRaw...), Tuple{&Opaque{Raw: pidRaw}}},
		{"compressed", compressedEnc(hx("68 02 64 0001 61 61 01"), 8), Tuple{Atom("a"), Int(1)}},
		{"compressed empty-ish", compressedEnc(hx("6a"), 1), Nil},
		// OTP 25: term_to_binary({hello, lists:duplicate(100, {a,b})}, [compressed])
		{"compressed by OTP", hx("835000 0003f8789ccb604a6160cd48cdc9c9cf616060 48c90072191381386994" +
			"35ca1a650d57561600ca00c89e"), func() Term {
			l := make(List, 100)
			for i := range l {
				l[i] = Tuple{Atom("a"), Atom("b")}
			}
			return Tuple{Atom("hello"), l}
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.in)
			if err != nil {
				t.Fatalf("Decode(%x): %v", tc.in, err)
			}
			if !Equal(got, tc.want) {
				t.Fatalf("Decode(%x) = %#v, want %#v", tc.in, got, tc.want)
			}
			if tc.want.Type() != got.Type() {
				t.Errorf("type %v, want %v", got.Type(), tc.want.Type())
			}
		})
	}
}

// The shapes Decode promises: normalized integers, Binary for whole bytes,
// the sign of -0.0 kept, and results that do not alias the input.
func TestDecodeShapes(t *testing.T) {
	if v, _ := Decode(hx("83 6e 08 00 ffffffffffffff7f")); v != Int(math.MaxInt64) {
		t.Errorf("int64 bignum decodes to %T, want Int", v)
	}
	if v, _ := Decode(hx("83 6e 08 00 0000000000000080")); func() bool { _, ok := v.(*BigInt); return !ok }() {
		t.Errorf("2^63 decodes to %T, want *BigInt", v)
	}
	if v, _ := Decode(hx("83 4d 00000001 08 07")); func() bool { _, ok := v.(Binary); return !ok }() {
		t.Errorf("8-bit BIT_BINARY decodes to %T, want Binary", v)
	}
	v, _ := Decode(hx("83 46 8000000000000000"))
	if f, ok := v.(Float); !ok || f != 0 || !math.Signbit(float64(f)) {
		t.Errorf("-0.0 decodes to %#v", v)
	}
	v, _ = Decode(floatExtBytes("-0.00000000000000000000e+00"))
	if f, ok := v.(Float); !ok || !math.Signbit(float64(f)) {
		t.Errorf("FLOAT_EXT -0.0 decodes to %#v", v)
	}
	in := hx("83 68 02 6d 00000002 0102 4d 00000001 04 f0")
	v, _ = Decode(in)
	for i := range in {
		in[i] = 0xEE
	}
	if want := (Tuple{Binary{1, 2}, Bitstring{Bytes: []byte{0xf0}, Bits: 4}}); !Equal(v, want) {
		t.Errorf("decoded term changed with its input: %#v", v)
	}
	pid := hx("83 58" + nodeA + "00000001 00000002 00000003")
	v, _ = Decode(pid)
	o := v.(*Opaque)
	pid[len(pid)-1] = 9
	if o.Raw[len(o.Raw)-1] != 3 {
		t.Error("Opaque.Raw aliases the input")
	}
}

func TestDecodeOpaque(t *testing.T) {
	oldPid := "67" + nodeA + "00000001 00000000 02"
	newPid := "58" + nodeA + "00000001 00000000 00000002"
	tests := []struct {
		name string
		raw  string
		typ  Type
	}{
		{"PID_EXT", oldPid, TypePid},
		{"NEW_PID_EXT", newPid, TypePid},
		{"pid with utf8 node", "58 77 03 614068 00000001 00000000 00000002", TypePid},
		{"PORT_EXT", "66" + nodeA + "00000005 01", TypePort},
		{"NEW_PORT_EXT", "59" + nodeA + "00000005 00000001", TypePort},
		{"V4_PORT_EXT", "78" + nodeA + "0000000100000005 00000001", TypePort},
		{"REFERENCE_EXT", "65" + nodeA + "00000005 01", TypeReference},
		{"NEW_REFERENCE_EXT", "72 0002" + nodeA + "01 00000001 00000002", TypeReference},
		{"NEWER_REFERENCE_EXT", "5a 0003" + nodeA + "00000001 00000001 00000002 00000003", TypeReference},
		{"EXPORT_EXT", "71 64 0005 6c69737473 64 0003 6d6170 61 02", TypeFun},
		{"NEW_FUN_EXT", newFunHex(newPid, "61 07 6b 0002 7879", 2), TypeFun},
		{"NEW_FUN_EXT no free vars", newFunHex(newPid, "", 0), TypeFun},
		{"EXPORT_EXT, INTEGER_EXT arity", "71 64 0001 6d 64 0001 66 62 00000100", TypeFun},
		{"NEW_FUN_EXT, Size ignored", strings.Replace(newFunHex(newPid, "", 0), "70000000", "70000001", 1), TypeFun},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := hx(tc.raw)
			got, err := Decode(append([]byte{131}, raw...))
			if err != nil {
				t.Fatal(err)
			}
			o, ok := got.(*Opaque)
			if !ok || !bytes.Equal(o.Raw, raw) {
				t.Fatalf("got %#v, want Opaque %x", got, raw)
			}
			if o.Type() != tc.typ {
				t.Errorf("Type %v, want %v", o.Type(), tc.typ)
			}
			enc, err := Encode(o)
			if err != nil || !bytes.Equal(enc[1:], raw) {
				t.Errorf("Encode = %x, %v", enc, err)
			}
		})
	}
}

// newFunHex builds a NEW_FUN_EXT with the given pid and free variables.
func newFunHex(pid, free string, numFree uint32) string {
	body := "01" + strings.Repeat("ab", 16) + "00000003" + hex.EncodeToString(binary.BigEndian.AppendUint32(nil, numFree)) +
		"64 0001 6d 61 03 62 0000002a" + pid + free
	size := len(hx(body)) + 4
	return "70" + hex.EncodeToString(binary.BigEndian.AppendUint32(nil, uint32(size))) + body
}

func TestDecodeErrors(t *testing.T) {
	nested := func(depth int) []byte {
		b := []byte{131}
		for range depth {
			b = append(b, 0x68, 1)
		}
		return append(b, 0x6a)
	}
	badZlib := compressedEnc(hx("61 01"), 2)
	badZlib[len(badZlib)-1] ^= 0xff // adler32 checksum
	newPid := "58" + nodeA + "00000001 00000000 00000002"
	tests := []struct {
		name string
		in   []byte
		why  string // part of the reason
	}{
		{"empty", nil, "empty"},
		{"version", hx("82 61 01"), "version"},
		{"version only", hx("83"), "tag"},
		{"trailing", hx("83 61 01 00"), "trailing"},
		{"unknown tag", hx("83 00"), "unknown tag"},
		{"unknown tag 200", hx("83 c8"), "unknown tag"},
		{"atom cache ref", hx("83 52 00"), "ATOM_CACHE_REF"},
		{"nested version", hx("83 68 01 83 61 01"), "version byte inside"},
		{"nested compressed", hx("83 68 01 50 00000001 00"), "compressed term not at top"},
		{"small int short", hx("83 61"), "SMALL_INTEGER"},
		{"int short", hx("83 62 0000"), "INTEGER"},
		{"small big short", hx("83 6e 04 00 0102"), "magnitude"},
		{"small big no sign", hx("83 6e 01"), "SMALL_BIG"},
		{"large big huge", hx("83 6f ffffffff 00 01"), "LARGE_BIG_EXT"},
		{"large big short", hx("83 6f 00000100 00 01"), "magnitude"},
		{"float short", hx("83 46 3ff0"), "NEW_FLOAT"},
		{"float nan", hx("83 46 7ff8000000000000"), "not finite"},
		{"float inf", hx("83 46 fff0000000000000"), "not finite"},
		{"float text short", hx("83 63 3130"), "FLOAT_EXT"},
		{"float text junk", floatExtBytes("1.5xyz"), "FLOAT_EXT"},
		{"float text space", floatExtBytes(" 1.5"), "FLOAT_EXT"},
		{"float text empty", floatExtBytes(""), "FLOAT_EXT"},
		{"float text inf", floatExtBytes("inf"), "FLOAT_EXT"},
		{"float text overflow", floatExtBytes("1e999"), "FLOAT_EXT"},
		{"float text hex", floatExtBytes("0x1p3"), "FLOAT_EXT"},
		{"float text without NUL", append(hx("83 63"), strings.Repeat("1", 31)...), "no NUL"},
		{"float text no point", floatExtBytes("1e5"), "FLOAT_EXT"},
		{"atom short", hx("83 64 0003 6162"), "atom text"},
		{"atom no length", hx("83 64 00"), "atom length"},
		{"atom too long latin1", append(hx("83 64 0100"), bytes.Repeat([]byte{'x'}, 256)...), "longer than 255"},
		{"atom too long utf8", append(hx("83 76 0100"), bytes.Repeat([]byte{'x'}, 256)...), "longer than 255"},
		{"atom bad utf8", hx("83 77 01 ff"), "UTF-8"},
		{"atom overlong utf8", hx("83 76 0002 c080"), "UTF-8"},
		{"atom surrogate", hx("83 76 0003 eda080"), "UTF-8"},
		{"tuple huge arity", hx("83 69 ffffffff 61 01 61"), "tuple elements"},
		{"tuple short", hx("83 68 03 61 01 61 02"), "tag"},
		{"small tuple no arity", hx("83 68"), "SMALL_TUPLE"},
		{"large tuple no arity", hx("83 69 0000"), "LARGE_TUPLE"},
		{"string short", hx("83 6b 0005 6162"), "STRING_EXT"},
		{"string no length", hx("83 6b 00"), "STRING_EXT"},
		{"list huge", hx("83 6c ffffffff 61 01 6a"), "list elements"},
		{"list no tail", hx("83 6c 00000001 61 01"), "tag"},
		{"list missing tail after elements", hx("83 6c 00000001 62 00000001"), "tag"},
		{"list no length", hx("83 6c 0000"), "LIST_EXT"},
		{"list tail chain truncated", hx("83 6c 00000001 61 01 6c 0000"), "LIST_EXT"},
		{"binary short", hx("83 6d 00000004 0102"), "BINARY_EXT"},
		{"binary huge", hx("83 6d ffffffff 00"), "BINARY_EXT"},
		{"binary no length", hx("83 6d 00"), "BINARY_EXT"},
		{"bit binary 9 bits", hx("83 4d 00000001 09 ff"), "bits"},
		{"bit binary 0 bits", hx("83 4d 00000001 00 ff"), "bits"},
		{"bit binary empty with bits", hx("83 4d 00000000 03"), "bits"},
		{"bit binary short", hx("83 4d 00000002 03 ff"), "BIT_BINARY"},
		{"bit binary no header", hx("83 4d 000000"), "BIT_BINARY"},
		{"map huge", hx("83 74 ffffffff 61 01 61 01"), "map pairs"},
		{"map duplicate keys", hx("83 74 00000002 61 01 61 01 61 01 61 02"), "duplicate"},
		{"map duplicate zero keys", hx("83 74 00000002 46 0000000000000000 61 01 46 8000000000000000 61 02"), "duplicate"},
		{"map no arity", hx("83 74 00"), "MAP_EXT"},
		{"map missing value", hx("83 74 00000001 61 01 61"), "SMALL_INTEGER"},
		{"pid short", hx("83 58" + nodeA + "00000001"), "pid"},
		{"pid node not atom", hx("83 58 61 01 00000001 00000000 00000000"), "atom is required"},
		{"pid node atom cache", hx("83 58 52 01 00000001 00000000 00000000"), "ATOM_CACHE_REF"},
		{"pid no node", hx("83 58"), "atom"},
		{"reference too many words", hx("83 5a 0006" + nodeA + "00000001" + strings.Repeat("00000001", 6)), "ID words"},
		{"reference short", hx("83 5a 0002" + nodeA + "00000001 00000001"), "reference"},
		{"reference no length", hx("83 72 00"), "reference"},
		{"export arity not an integer", hx("83 71 64 0001 6d 64 0001 66 46 4000000000000000"), "not an integer"},
		{"export arity negative", hx("83 71 64 0001 6d 64 0001 66 62 ffffffff"), "negative"},
		{"export arity not small", hx("83 71 64 0001 6d 64 0001 66 6e 08 00 0000000000000008"), "small integers"},
		{"export short", hx("83 71 64 0001 6d 64 0001 66"), "export arity"},
		{"new fun too many free vars", hx("83 70 00000005" + strings.Repeat("30", 25)), "free variables"},
		{"new fun header short", hx("83 70 00000010 01"), "NEW_FUN_EXT"},
		{"new fun free vars missing", hx("83" + newFunHex(newPid, "", 2)), "tag"},
		{"new fun creator not a pid", hx("83" + newFunHex("61 01", "", 0)), "creator is not a pid"},
		{"new fun creator invalid", hx("83" + newFunHex("58 61 01", "", 0)), "atom is required"},
		{"new fun index not integer", hx("83" + strings.Replace(newFunHex(newPid, "", 0), "61 03 62", "6a 03 62", 1)), "not an integer"},
		{"fun ext", hx("83 75 00000001" + newPid + "64 0001 6d 61 01 61 02 61 2a"), "FUN_EXT"},
		{"fun ext short", hx("83 75 0000"), "FUN_EXT"},
		{"compressed header short", hx("83 50 0000"), "header truncated"},
		{"compressed bad zlib header", hx("83 50 00000002 0000"), "zlib"},
		{"compressed size too large", compressedEnc(hx("61 01"), 3), "declared uncompressed size"},
		{"compressed size too small", compressedEnc(hx("61 01"), 1), "declared uncompressed size"},
		{"compressed size impossible", append(hx("83 50 ffffffff"), zlibBytes(hx("61 01"))...), "impossible"},
		{"compressed checksum", badZlib, "zlib"},
		{"compressed truncated stream", compressedEnc(hx("61 01"), 2)[:12], "zlib"},
		{"compressed trailing after stream", append(compressedEnc(hx("61 01"), 2), 0), "trailing"},
		{"compressed trailing in data", compressedEnc(hx("61 01 61"), 3), "trailing"},
		{"compressed nested", compressedEnc(hx("50 00000001 61"), 6), "nested compressed"},
		{"compressed bad term", compressedEnc(hx("68 05 61"), 3), "decompressed data"},
		{"too deep", nested(MaxDepth + 1), "nested deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.in)
			if err == nil {
				t.Fatalf("Decode(%x) = %#v, want an error", tc.in, got)
			}
			if !errors.Is(err, ErrDecode) {
				t.Errorf("error %v does not match ErrDecode", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %q does not mention %q", err, tc.why)
			}
			if de.Offset < 0 || de.Offset > len(tc.in)+1<<20 {
				t.Errorf("offset %d out of range", de.Offset)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "etf: ") {
				t.Errorf("error message %q is not one line with the package prefix", err)
			}
		})
	}
}

func TestDecodeErrorOffset(t *testing.T) {
	_, err := Decode(hx("83 68 02 61 01 46 7ff0000000000000"))
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 5 {
		t.Errorf("error %v, want offset 5 (the float's tag)", err)
	}
	_, err = Decode(hx("83 61 01 00 00"))
	if !errors.As(err, &de) || de.Offset != 3 {
		t.Errorf("error %v, want offset 3 (first trailing byte)", err)
	}
}

func TestDecodeDepth(t *testing.T) {
	// Exactly MaxDepth levels of nesting decode; lists of any length do not
	// count as nesting.
	b := []byte{131}
	for range MaxDepth {
		b = append(b, 0x6c, 0, 0, 0, 1)
	}
	b = append(b, 0x6a)
	for range MaxDepth {
		b = append(b, 0x6a)
	}
	v, err := Decode(b)
	if err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	if _, err := Encode(v); err != nil {
		t.Errorf("Encode of a MaxDepth term: %v", err)
	}
	// A long improper chain of list tails is flat, not deep.
	long := []byte{131}
	for range 3 * MaxDepth {
		long = append(long, 0x6c, 0, 0, 0, 1, 0x61, 7)
	}
	long = append(long, 0x61, 8)
	v, err = Decode(long)
	if err != nil {
		t.Fatalf("long tail chain: %v", err)
	}
	il, ok := v.(*ImproperList)
	if !ok || len(il.Elems) != 3*MaxDepth || il.Tail != Int(8) {
		t.Errorf("long tail chain decoded to %T", v)
	}
}

// A zip bomb cannot make Decode allocate beyond its declared size.
func TestDecodeZipBomb(t *testing.T) {
	body := append(hx("6d 00a00000"), make([]byte, 10<<20)...) // a 10 MiB binary
	z := zlibBytes(body)
	// Declare 100 KiB: Decode must stop reading soon after it and fail.
	bomb := binary.BigEndian.AppendUint32([]byte{131, 80}, 100<<10)
	bomb = append(bomb, z...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Decode(bomb)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("size mismatch accepted")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 2<<20 {
		t.Errorf("Decode allocated %d bytes for a stream declared as 100 KiB", n)
	}
	// The honest version decodes.
	ok := binary.BigEndian.AppendUint32([]byte{131, 80}, uint32(len(body)))
	ok = append(ok, z...)
	v, err := Decode(ok)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := v.(Binary); len(b) != 10<<20 {
		t.Errorf("decoded %T of %d bytes", v, len(b))
	}
}

// Hostile counts must fail before allocating what they claim.
func TestDecodeNoHugeAlloc(t *testing.T) {
	for _, in := range [][]byte{
		hx("83 69 ffffffff 61 01"),
		hx("83 6c ffffffff 61 01"),
		hx("83 74 ffffffff 61 01"),
		hx("83 6d ffffffff 61 01"),
		hx("83 6f ffffffff 00 01"),
		hx("83 50 ffffffff 789c"),
	} {
		var err error
		allocs := testing.AllocsPerRun(10, func() { _, err = Decode(in) })
		if err == nil {
			t.Errorf("Decode(%x) succeeded", in)
		}
		if allocs > 10 {
			t.Errorf("Decode(%x) made %v allocations", in, allocs)
		}
	}
}

// TestRawBatch: RawBatch.Decode gives Decode's result (or error)
// for random terms and for the fuzz seeds, its results never share memory
// with the input, and later decodes never change earlier results.
func TestRawBatch(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var bd RawBatch
	type done struct {
		enc  []byte
		term Term
	}
	var kept []done
	for i := range 3000 {
		want := randomTerm(r, 0)
		if i%3 == 0 {
			// The shape the dets engine decodes most: {Binary, Binary}.
			want = Tuple{randomBinary(r), randomBinary(r)}
		}
		enc, err := Encode(want)
		if err != nil {
			t.Fatal(err)
		}
		in := bytes.Clone(enc)
		got, err := bd.Decode(in)
		if err != nil {
			t.Fatalf("term %d %v: %v", i, want, err)
		}
		if !Equal(got, want) {
			t.Fatalf("term %d: got %v, want %v", i, got, want)
		}
		clear(in) // a result aliasing its input would change here
		kept = append(kept, done{enc, got})
	}
	for i, k := range kept {
		again, err := Decode(k.enc)
		if err != nil || !Equal(again, k.term) {
			t.Fatalf("term %d changed after later decodes: %v, want %v", i, k.term, again)
		}
	}
	// Appending to a decoded binary must not write into its neighbour.
	a, _ := bd.Decode(mustEncode(t, Tuple{Binary("ab"), Binary("cd")}))
	b, _ := bd.Decode(mustEncode(t, Tuple{Binary("ef")}))
	tup := a.(Tuple)
	_ = append(tup[0].(Binary), 'X')
	_ = append(tup, Atom("x"))
	if !Equal(a, Tuple{Binary("ab"), Binary("cd")}) || !Equal(b, Tuple{Binary("ef")}) {
		t.Fatalf("append through a result changed its neighbour: %v %v", a, b)
	}
	// Errors match Decode's.
	for _, b := range [][]byte{nil, {131}, {131, 104, 2, 97}, {131, 109, 0, 0, 0, 5, 1}, {131, 97, 1, 2}} {
		_, werr := Decode(b)
		got, gerr := bd.Decode(b)
		if got != nil || gerr == nil || werr == nil || gerr.Error() != werr.Error() {
			t.Errorf("%x: got %v, %v; Decode says %v", b, got, gerr, werr)
		}
	}
}

func mustEncode(t *testing.T, x Term) []byte {
	t.Helper()
	b, err := Encode(x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHugeLengthFields: length fields beyond the input, and beyond the int
// range of a 32-bit platform (run GOARCH=386 go test), are typed errors
// in every walker, never wrapped into negative offsets.
func TestHugeLengthFields(t *testing.T) {
	var bd RawBatch
	for _, b := range [][]byte{
		hx("83 68 02 6d fffffff7 00 00 00"), // as an int32, -9: back before the input
		hx("83 68 01 6d ffffffff 00 00 00"),
		hx("83 68 02 6d 80000000 6d 00000000"),
		hx("83 6d ffffffff 00"),
		hx("83 6d 80000000 00"),
		hx("83 4d 80000000 03 00"),
		hx("83 6c 80000000 61 01 6a"),
		hx("83 69 80000000 61 01"),
		hx("83 74 80000000 61 01 61 01"),
		hx("83 6f 80000000 00 01"),
		hx("83 68 01 6f ffffffff 00 01"),
		hx("83 50 80000000 789c"),
		hx("83 70 ffffffff 01" + strings.Repeat("00", 24) + "80000000"),
	} {
		_, err := Decode(b)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Decode(%x): %v, want a *DecodeError", b, err)
		}
		if err := Validate(b); !errors.As(err, &de) {
			t.Errorf("Validate(%x): %v", b, err)
		}
		if _, err := raw.DecodeOne(b); !errors.As(err, &de) {
			t.Errorf("raw.DecodeOne(%x): %v", b, err)
		}
		if _, err := bd.Decode(b); !errors.As(err, &de) {
			t.Errorf("RawBatch.Decode(%x): %v", b, err)
		}
		if _, err := raw.DecodeBody(b[1:]); !errors.As(err, &de) {
			t.Errorf("raw.DecodeBody(%x): %v", b[1:], err)
		}
		if _, ok := raw.Phash2Body(b[1:]); ok {
			t.Errorf("raw.Phash2Body(%x) hashes it", b[1:])
		}
		if _, ok := raw.CompareBodies(b[1:], b[1:]); ok {
			t.Errorf("raw.CompareBodies(%x) compares it", b[1:])
		}
		for pos := 1; pos <= 2; pos++ {
			if _, end, ok := raw.TupleElement(b, pos); ok && end > len(b) {
				t.Errorf("raw.TupleElement(%x, %d) ends at %d", b, pos, end)
			}
		}
	}
}
