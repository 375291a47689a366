package etf

import (
	"bufio"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// vectorsPath returns the OTP 25 phash2 vector file: the copy in testdata,
// which is the project's own, or else ../shared/docs next to the module.
func vectorsPath(t *testing.T) string {
	t.Helper()
	if p := filepath.Join("testdata", "phash2-vectors.txt"); fileExists(p) {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !fileExists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "docs", "phash2-vectors.txt")
	if !fileExists(p) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("phash2 vectors missing under CI: %s", p)
		}
		t.Skipf("phash2 vectors not found: %s", p)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestPhash2Vectors checks every line of the OTP 25 vector file:
// HEX(term_to_binary(T)) phash2(T) phash2(T, 2^32) phash2(T, 1000).
func TestPhash2Vectors(t *testing.T) {
	f, err := os.Open(vectorsPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	lines := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 4 {
			t.Fatalf("line %d: %d fields", lines+1, len(fields))
		}
		lines++
		b, err := hex.DecodeString(fields[0])
		if err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		var want [3]uint64
		for i := range want {
			if want[i], err = strconv.ParseUint(fields[i+1], 10, 32); err != nil {
				t.Fatalf("line %d: %v", lines, err)
			}
		}
		term, err := Decode(b)
		if err != nil {
			t.Errorf("line %d: Decode: %v", lines, err)
			continue
		}
		got := [3]uint64{uint64(Phash2(term)), uint64(Phash2Range(term, 1<<32)), uint64(Phash2Range(term, 1000))}
		if got != want {
			t.Errorf("line %d: %s: got %v, want %v", lines, fields[0][:min(60, len(fields[0]))], got, want)
		}
		// The re-encoded term must decode to an equal term with the same hash.
		enc, err := Encode(term)
		if err != nil {
			t.Errorf("line %d: Encode: %v", lines, err)
			continue
		}
		back, err := Decode(enc)
		if err != nil || !Equal(back, term) || Phash2(back) != Phash2(term) {
			t.Errorf("line %d: re-encoding changed the term (err %v)", lines, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != 398 {
		t.Errorf("read %d vectors, want 398", lines)
	}
}

// Golden values from OTP 25: HEX(term_to_binary(T)) and phash2(T, 1 bsl 32)
// for pids, ports, references and funs (see otp_test.go for live checks).
var opaqueHashVectors = []struct {
	hex  string
	hash uint32
}{
	{"835864000D6E6F6E6F6465406E6F686F7374000000090000000000000000", 2414445827},
	{"835864000D6E6F6E6F6465406E6F686F7374000000010000000200000000", 2870503209},
	{"835864000D6E6F6E6F6465406E6F686F737400007FFF00001FFF00000000", 3447426037},
	{"8358640009666F6F406261722E78000000070000000300000005", 591482922},
	{"8358640009666F6F406261722E78000000070000000300000002", 591482922},
	{"835A000364000D6E6F6E6F6465406E6F686F73740000000000016F0055700002D97EB8B7", 1368147711},
	{"835A0003640009666F6F406261722E7800000005000000010000000200000003", 118531908},
	{"835A0003640009666F6F406261722E78000000020000000B0000000200000003", 778779601},
	{"835A0001640009666F6F406261722E78000000010000000C", 813200933},
	{"835964000D6E6F6E6F6465406E6F686F73740000000400000000", 1988022231},
	{"8359640009666F6F406261722E780000000900000005", 3256501370},
	{"8359640009666F6F406261722E780000000900000001", 3256501370},
	{"8378640009666F6F406261722E78000000010000000900000005", 3381782320},
	{"83716400056C697374736400036D61706102", 840287883},
	{"837164000665726C616E676400067068617368326101", 1670096990},
	{"83717705CEA96D6F64640001E96100", 2989792216},
	{"8370000000450063A4D4F71B278CC9D4F8A5E67F82D59200000000000000006400016F610062031D26A75864000D6E6F6E6F6465406E6F686F7374000000090000000000000000", 1703742338},
	// fun with free variables 7 and "xy"
	{"83700000004D0143D9C5E49B3339F02EB9FF40909F16BA00000001000000026400026F32610162021ECE2F5864000D6E6F6E6F6465406E6F686F737400000009000000000000000061076B00027879", 698742903},
	// hand-built funs whose Index differs from OldIndex
	{"83700000004B010000000000000000000000000000000000000003000000036400047A7A7A7A6109614D58640009666F6F406261722E780000000700000003000000056400016161016B000173", 3652089619},
	{"8370000000450100000000000000000000000000000000000186A0000000016400047A7A7A7A610262FFFFFFFB58640009666F6F406261722E780000000700000003000000056A", 1320845740},
	// [Pid, 1, 2 | fun erlang:phash2/1]
	{"836C000000035864000D6E6F6E6F6465406E6F686F7374000000090000000000000000610161027164000665726C616E676400067068617368326101", 3005430101},
}

func TestPhash2Opaque(t *testing.T) {
	for _, v := range opaqueHashVectors {
		b, _ := hex.DecodeString(v.hex)
		term, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", v.hex, err)
		}
		if got := Phash2Range(term, 1<<32); got != v.hash {
			t.Errorf("%s: phash2 = %d, want %d", v.hex, got, v.hash)
		}
	}
}

func TestPhash2Constants(t *testing.T) {
	for n, c := range map[uint32]uint32{2: hconst2, 3: hconst3, 4: hconst4, 5: hconst5, 6: hconst6, 7: hconst7,
		9: hconst9, 10: hconst10, 11: hconst11, 12: hconst12, 13: hconst13, 14: hconst14, 15: hconst15, 16: hconst16, 19: hconst19} {
		if hconst*n != c {
			t.Errorf("HCONST_%d = %#x, want %#x", n, c, hconst*n)
		}
	}
}

func TestPhash2Range(t *testing.T) {
	term := Tuple{Atom("key"), Binary("value"), Int(123456789)}
	full := Phash2Range(term, 1<<32)
	if Phash2(term) != full&(1<<27-1) {
		t.Errorf("Phash2 %d is not the low 27 bits of %d", Phash2(term), full)
	}
	for _, n := range []uint64{1, 2, 7, 1000, 1 << 27, 1<<32 - 1} {
		if got, want := Phash2Range(term, n), uint32(uint64(full)%n); got != want {
			t.Errorf("Phash2Range(n=%d) = %d, want %d", n, got, want)
		}
	}
	// Out-of-range n is documented to mean 2^32.
	for _, n := range []uint64{0, 1<<32 + 1, math.MaxUint64} {
		if got := Phash2Range(term, n); got != full {
			t.Errorf("Phash2Range(n=%d) = %d, want %d", n, got, full)
		}
	}
	if Phash2Range(term, 1) != 0 {
		t.Error("Phash2Range(n=1) must be 0")
	}
}

// Equal terms must hash equally, whatever their Go shape.
func TestPhash2EqualTerms(t *testing.T) {
	neg0 := Float(math.Copysign(0, -1))
	pairs := [][2]Term{
		{Float(0), neg0},
		{Tuple{neg0}, Tuple{Float(0)}},
		{Map{{Atom("a"), Int(1)}, {Atom("b"), Int(2)}}, Map{{Atom("b"), Int(2)}, {Atom("a"), Int(1)}}},
		// Hand-built list tails are flattened.
		{&ImproperList{Elems: []Term{Int(1)}, Tail: List{Int(2), Int(3)}}, List{Int(1), Int(2), Int(3)}},
		{&ImproperList{Elems: []Term{Int(1)}, Tail: &ImproperList{Elems: []Term{Atom("x")}, Tail: Int(2)}},
			&ImproperList{Elems: []Term{Int(1), Atom("x")}, Tail: Int(2)}},
		// An unnormalized BigInt hashes as the Int it equals.
		{NewBigInt(big.NewInt(5)), Int(5)},
		{func() Term { b := new(BigInt); b.v.SetInt64(1 << 40); return b }(), Int(1 << 40)},
		{Bitstring{Bytes: []byte{0xFF}, Bits: 3}, Bitstring{Bytes: []byte{0xE0}, Bits: 3}},
	}
	for _, p := range pairs {
		if Phash2Range(p[0], 1<<32) != Phash2Range(p[1], 1<<32) {
			t.Errorf("phash2(%#v) != phash2(%#v)", p[0], p[1])
		}
	}
	if Phash2(Int(1)) == Phash2(Float(1)) {
		t.Error("1 and 1.0 should hash differently")
	}
}

func TestPhash2Random(t *testing.T) {
	// A decode/encode round trip never changes the hash, and hashing is
	// deterministic.
	seed := testutil.Seed(t)
	r := rand.New(rand.NewSource(seed))
	for range 2000 {
		term := randomTerm(r, 4)
		h := Phash2(term)
		enc, err := Encode(term)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		if Phash2(back) != h || Phash2(term) != h {
			t.Fatalf("hash changed for %#v", term)
		}
	}
}

// Phash2 must not allocate: DETS hashes every key it touches.
func TestPhash2NoAlloc(t *testing.T) {
	term := Tuple{Binary(make([]byte, 16)), Binary(make([]byte, 100))}
	var sink uint32
	if n := testing.AllocsPerRun(100, func() { sink += Phash2(term) }); n != 0 {
		t.Errorf("Phash2 allocated %v times per call", n)
	}
	nested := Tuple{Atom("k"), List{Int(1), Int(300), Atom("x")}, Map{{Int(1), Float(2.5)}}, NewUint(1 << 63)}
	if n := testing.AllocsPerRun(100, func() { sink += Phash2(nested) }); n != 0 {
		t.Errorf("Phash2 allocated %v times per call on a nested term", n)
	}
	_ = sink
}

func TestPhash2Malformed(t *testing.T) {
	// Hand-built malformed terms must not panic.
	for _, term := range []Term{nil, (*BigInt)(nil), (*ImproperList)(nil), (*Opaque)(nil), &Opaque{},
		&Opaque{Raw: []byte{tagNewPid}}, &Opaque{Raw: []byte{tagNewFun, 0, 0}}, &Opaque{Raw: []byte{tagExport, 1}},
		&Opaque{Raw: []byte{tagNewerReference, 0}}, Bitstring{Bits: 3}, Bitstring{Bytes: []byte{1}, Bits: 9},
		Tuple{nil}, Map{{nil, nil}}, &ImproperList{Tail: nil}} {
		Phash2(term)
	}
	_ = errors.New
}
