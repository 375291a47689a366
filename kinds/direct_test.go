package kinds

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil"
	"github.com/godets/godets/internal/testutil/tabletest"
)

// termOnly is c without its direct path: handles built with it work as
// they did before the direct path existed.
func termOnly[T any](c Codec[T]) Codec[T] {
	c.appendRaw, c.readRaw = nil, nil
	return c
}

// member is the record of the differential test.
type member struct {
	Name string
	Age  int64
	Blob []byte
}

var memberCodec = Record("user",
	Field(String, func(u *member) *string { return &u.Name }),
	Field(Int, func(u *member) *int64 { return &u.Age }),
	Field(Bytes, func(u *member) *[]byte { return &u.Blob }),
)

func randBytes(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(4)*r.IntN(12))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

func randInt64(r *rand.Rand) int64 {
	switch r.IntN(6) {
	case 0:
		return int64(r.IntN(256))
	case 1:
		return int64(r.Int32()) - int64(r.Int32())
	case 2:
		return []int64{math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32, math.MinInt32 - 1, math.MaxInt32 + 1, 255, 256, -1}[r.IntN(9)]
	}
	return int64(r.Uint64())
}

// wrongTerms are stored terms that the codecs of the test mostly cannot
// read: every one yields a decode error, or a value, through both paths.
var wrongTerms = []etf.Term{
	etf.Atom("x"), etf.Atom("user"), etf.Float(1.5), etf.Int(-1), etf.Int(300), etf.Int(1 << 40),
	etf.NewUint(1<<64 - 1), etf.NewBigInt(new(big.Int).Lsh(big.NewInt(1), 70)), etf.Binary("b"), etf.Binary(""),
	etf.List{etf.Int(1)}, etf.Nil, etf.Tuple{}, etf.Tuple{etf.Atom("user"), etf.Binary("n"), etf.Int(1)},
	etf.Tuple{etf.Atom("user"), etf.Binary("n"), etf.Int(1), etf.Atom("no")},
	etf.Tuple{etf.Atom("other"), etf.Binary("n"), etf.Int(1), etf.Binary("")},
	etf.Tuple{etf.Binary("s"), etf.Int(1 << 62)}, etf.Tuple{etf.Tuple{etf.Int(1), etf.Binary("s")}, etf.Atom("b")},
	etf.Map{{Key: etf.Int(1), Value: etf.Int(2)}},
}

// oddEncode encodes x as etf.Encode would, except that it picks, at
// random, other valid encodings that OTP and older writers produce:
// LARGE_TUPLE_EXT for small tuples, INTEGER_EXT and SMALL_BIG_EXT for
// small integers, BIT_BINARY_EXT for binaries, Latin-1 and long atoms.
// The direct path must step aside for each and the term path read them.
func oddEncode(r *rand.Rand, dst []byte, x etf.Term) []byte {
	switch v := x.(type) {
	case etf.Tuple:
		if r.IntN(3) == 0 {
			dst = binary.BigEndian.AppendUint32(append(dst, 105), uint32(len(v)))
		} else {
			dst = append(dst, tagSmallTuple, byte(len(v)))
		}
		for _, e := range v {
			dst = oddEncode(r, dst, e)
		}
		return dst
	case etf.Int:
		switch r.IntN(3) {
		case 0:
			if v >= math.MinInt32 && v <= math.MaxInt32 {
				return binary.BigEndian.AppendUint32(append(dst, tagInteger), uint32(int32(v)))
			}
		case 1:
			u, neg := uint64(v), v < 0
			if neg {
				u = uint64(-v)
			}
			dst = append(dst, tagSmallBig, 8, b2byte(neg))
			return binary.LittleEndian.AppendUint64(dst, u)
		}
	case etf.Binary:
		if len(v) > 0 && r.IntN(3) == 0 {
			dst = binary.BigEndian.AppendUint32(append(dst, 77), uint32(len(v)))
			return append(append(dst, 8), v...)
		}
	case etf.Atom:
		if r.IntN(2) == 0 && len(v) < 256 {
			tag := byte(100) // ATOM_EXT, Latin-1; ASCII here
			for i := 0; i < len(v); i++ {
				if v[i] >= 0x80 {
					tag = 118 // ATOM_UTF8_EXT, long form
				}
			}
			dst = binary.BigEndian.AppendUint16(append(dst, tag), uint16(len(v)))
			return append(dst, v...)
		}
	}
	enc, err := etf.Encode(x)
	if err != nil {
		panic(err)
	}
	return append(dst, enc[1:]...)
}

// mutateTerm changes one part of x so that it is likely of a type the
// codec that wrote x cannot read: a record tag of the same length, an
// element of another type or range, a tuple of another arity.
func mutateTerm(r *rand.Rand, x etf.Term) etf.Term {
	switch v := x.(type) {
	case etf.Tuple:
		if len(v) > 0 && r.IntN(4) != 0 {
			c := append(etf.Tuple(nil), v...)
			i := r.IntN(len(c))
			c[i] = mutateTerm(r, c[i])
			return c
		}
		if len(v) > 0 && r.IntN(2) == 0 {
			return v[:len(v)-1]
		}
		return append(append(etf.Tuple(nil), v...), etf.Nil)
	case etf.Atom:
		if rs := []rune(string(v)); len(rs) > 0 {
			return etf.Atom(string(rs[:len(rs)-1]) + "x")
		}
	case etf.Int:
		return []etf.Term{etf.Binary("i"), etf.Int(-v - 1), etf.Int(v + 1<<31), etf.NewUint(1<<63 + uint64(r.IntN(9)))}[r.IntN(4)]
	case etf.Binary:
		return []etf.Term{etf.Int(len(v)), etf.Atom("b"), etf.Bitstring{Bytes: []byte{1}, Bits: 3}}[r.IntN(3)]
	}
	return wrongTerms[r.IntN(len(wrongTerms))]
}

// handlePair is one table read through a direct handle and a term-only
// one, with the calls the test compares.
type handlePair[K, V any] struct {
	lookup func(direct bool, k K) (any, error)
	rows   func(direct bool) []any
	all    func(direct bool) ([]any, error)
	insert func(direct bool, k K, v V) error
}

func newHandlePair[K, V any](t *testing.T, tab *dets.Table, kind dets.Kind, kc Codec[K], vc Codec[V]) handlePair[K, V] {
	t.Helper()
	pick := func(direct bool) (Codec[K], Codec[V]) {
		if direct {
			return kc, vc
		}
		return termOnly(kc), termOnly(vc)
	}
	type ops struct {
		lookup func(K) (any, error)
		rows   func() []any
		all    func() ([]any, error)
		insert func(K, V) error
	}
	mk := func(direct bool) ops {
		k, v := pick(direct)
		var b *base[K, V]
		var o ops
		switch kind {
		case dets.Set:
			s, err := NewSet(tab, k, v)
			must(t, err)
			b = &s.b
			o.lookup = func(key K) (any, error) { return s.Lookup(key) }
		case dets.Bag:
			s, err := NewBag(tab, k, v)
			must(t, err)
			b = &s.b
			o.lookup = func(key K) (any, error) { return s.Lookup(key) }
		default:
			s, err := NewDuplicateBag(tab, k, v)
			must(t, err)
			b = &s.b
			o.lookup = func(key K) (any, error) { return s.Lookup(key) }
		}
		o.rows = func() []any {
			var out []any
			for r, err := range b.rows() {
				out = append(out, r, errState(err))
			}
			return out
		}
		o.all = func() ([]any, error) {
			var out []any
			var err error
			for k, v := range b.all(&err) {
				out = append(out, k, v)
			}
			return out, err
		}
		o.insert = b.insert
		return o
	}
	d, m := mk(true), mk(false)
	choose := func(direct bool) ops {
		if direct {
			return d
		}
		return m
	}
	return handlePair[K, V]{
		lookup: func(direct bool, k K) (any, error) { return choose(direct).lookup(k) },
		rows:   func(direct bool) []any { return choose(direct).rows() },
		all:    func(direct bool) ([]any, error) { return choose(direct).all() },
		insert: func(direct bool, k K, v V) error { return choose(direct).insert(k, v) },
	}
}

// errState is what the test compares of an error: its text, the
// sentinels it matches, and a RowError's key.
func errState(err error) any {
	if err == nil {
		return nil
	}
	s := fmt.Sprintf("%v decode=%v notfound=%v", err, errors.Is(err, ErrDecode), errors.Is(err, ErrNotFound))
	var re *RowError
	if errors.As(err, &re) {
		s += fmt.Sprintf(" key=%s decoded=%v", etf.Format(re.Key), re.KeyDecoded)
	}
	var de *DecodeError
	if errors.As(err, &de) {
		s += fmt.Sprintf(" path=%q expected=%q got=%q", de.Path, de.Expected, de.Got)
	}
	return s
}

// checkDirect runs the differential test for one pair of codecs over
// every table kind.
func checkDirect[K, V any](t *testing.T, seed uint64, kc Codec[K], vc Codec[V], genK func(*rand.Rand) K, genV func(*rand.Rand) V) {
	if kc.appendRaw == nil || kc.readRaw == nil || vc.appendRaw == nil || vc.readRaw == nil {
		t.Fatal("a codec of the test has no direct path")
	}
	for _, kind := range []dets.Kind{dets.Set, dets.Bag, dets.DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(kind)))
			dir := t.TempDir()
			var tabs [2]*dets.Table
			var paths [2]string
			for i := range tabs {
				paths[i] = filepath.Join(dir, fmt.Sprint(i, ".dets"))
				tab, err := dets.Open(paths[i], dets.Options{Kind: kind, KeyPos: 1})
				must(t, err)
				tabs[i] = tab
			}
			direct := newHandlePair(t, tabs[0], kind, kc, vc)
			term := newHandlePair(t, tabs[1], kind, kc, vc)

			// Insert writes the same bytes either way.
			var keys []K
			for range 300 {
				k, v := genK(r), genV(r)
				keys = append(keys, k)
				if b, ok := (&base[K, V]{kc: kc, vc: vc}).directObject(nil, k, v); ok {
					kt, _ := kc.Encode(k)
					vt, _ := vc.Encode(v)
					want, err := etf.Encode(etf.Tuple{kt, vt})
					must(t, err)
					if !bytes.Equal(b, want) {
						t.Fatalf("direct encoding of %v, %v:\n%x\nwant\n%x", k, v, b, want)
					}
				}
				must(t, direct.insert(true, k, v))
				must(t, term.insert(false, k, v))
			}
			for i := range tabs {
				must(t, tabs[i].Close())
			}
			if !bytes.Equal(fileBytesAt(t, paths[0]), fileBytesAt(t, paths[1])) {
				t.Fatal("Insert through the direct path wrote another file than through terms")
			}
			tab := tabletest.OpenT(t, paths[0], dets.Options{})
			h := newHandlePair(t, tab, kind, kc, vc)

			// Objects the codecs cannot read, and good ones in unusual
			// encodings, stored by other writers.
			for range 200 {
				kt, _ := kc.Encode(genK(r))
				vt, _ := vc.Encode(genV(r))
				w := wrongTerms[r.IntN(len(wrongTerms))]
				var obj etf.Term
				switch r.IntN(7) {
				case 5:
					obj = etf.Tuple{kt, mutateTerm(r, vt)}
				case 6:
					obj = etf.Tuple{mutateTerm(r, kt), vt}
				case 0:
					obj = etf.Tuple{kt, w}
				case 1:
					obj = etf.Tuple{w, vt}
				case 2:
					obj = etf.Tuple{kt, vt, w}
				case 3:
					obj = etf.Tuple{kt}
				default:
					obj = etf.Tuple{kt, vt}
				}
				if r.IntN(2) == 0 {
					must(t, tab.Insert(obj))
				} else {
					must(t, tab.InsertRaw(oddEncode(r, []byte{tagVersion}, obj)))
				}
			}

			for i := range 400 {
				k := keys[r.IntN(len(keys))]
				if i%4 == 0 {
					k = genK(r)
				}
				v1, e1 := h.lookup(true, k)
				v2, e2 := h.lookup(false, k)
				if !reflect.DeepEqual(v1, v2) || !reflect.DeepEqual(errState(e1), errState(e2)) {
					t.Fatalf("Lookup(%v): direct %#v, %v; terms %#v, %v", k, v1, e1, v2, e2)
				}
			}
			if r1, r2 := h.rows(true), h.rows(false); !reflect.DeepEqual(r1, r2) {
				t.Fatalf("Rows differ: direct %d entries, terms %d", len(r1), len(r2))
			}
			a1, e1 := h.all(true)
			a2, e2 := h.all(false)
			if !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(errState(e1), errState(e2)) {
				t.Fatalf("All differs: direct %d entries, %v; terms %d, %v", len(a1), e1, len(a2), e2)
			}
		})
	}
}

func fileBytesAt(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}

// TestDirectMatchesTerm: the direct path gives exactly the term path's
// results and errors, for Lookup, Rows and All of every kind, over random
// values, stored terms of the wrong type and unusual encodings, and
// Insert writes the same file. Seeded: -seed or GODETS_SEED.
func TestDirectMatchesTerm(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	str := func(r *rand.Rand) string { return string(randBytes(r)) }
	t.Run("String,String", func(t *testing.T) {
		checkDirect(t, seed, String, String, str, str)
	})
	t.Run("Int,Bytes", func(t *testing.T) {
		checkDirect(t, seed, Int, Bytes, randInt64, randBytes)
	})
	t.Run("uint8,int8", func(t *testing.T) {
		checkDirect(t, seed, Integer[uint8](), Integer[int8](),
			func(r *rand.Rand) uint8 { return uint8(r.IntN(256)) },
			func(r *rand.Rand) int8 { return int8(r.IntN(256)) })
	})
	t.Run("uint64,int32", func(t *testing.T) {
		checkDirect(t, seed, Integer[uint64](), Integer[int32](),
			func(r *rand.Rand) uint64 { return uint64(randInt64(r)) },
			func(r *rand.Rand) int32 { return int32(randInt64(r)) })
	})
	t.Run("String,Record", func(t *testing.T) {
		checkDirect(t, seed, String, memberCodec, str, func(r *rand.Rand) member {
			return member{Name: str(r), Age: randInt64(r), Blob: randBytes(r)}
		})
	})
	atom := func(r *rand.Rand) string {
		parts := []string{"a", "ok", "é", "ÿ", "日本", "\u00ff\u0100", strings.Repeat("x", 200)}
		s := ""
		for range r.IntN(3) {
			s += parts[r.IntN(len(parts))]
		}
		if utf8.RuneCountInString(s) > 255 {
			s = s[:100]
		}
		return s
	}
	float := func(r *rand.Rand) float64 {
		return []float64{0, math.Copysign(0, -1), 1.5, -2, 1e308, 5e-324, math.MaxFloat64, r.NormFloat64()}[r.IntN(8)]
	}
	t.Run("Atom,Float", func(t *testing.T) {
		checkDirect(t, seed, Atom, Float, atom, float)
	})
	t.Run("Bool,Record of atoms", func(t *testing.T) {
		type tagged struct {
			Kind string
			On   bool
		}
		rec := Record("tagged", Field(Atom, func(x *tagged) *string { return &x.Kind }), Field(Bool, func(x *tagged) *bool { return &x.On }))
		checkDirect(t, seed, Bool, rec, func(r *rand.Rand) bool { return r.IntN(2) == 0 },
			func(r *rand.Rand) tagged { return tagged{atom(r), r.IntN(2) == 0} })
	})
	t.Run("Tuple2,Tuple2", func(t *testing.T) {
		checkDirect(t, seed, Tuple2(String, Int), Tuple2(Tuple2(Int, String), Bytes),
			func(r *rand.Rand) Pair[string, int64] { return Pair[string, int64]{str(r), randInt64(r) % 4} },
			func(r *rand.Rand) Pair[Pair[int64, string], []byte] {
				return Pair[Pair[int64, string], []byte]{Pair[int64, string]{randInt64(r), str(r)}, randBytes(r)}
			})
	})
}

// TestDirectPathCoverage: the codecs that must have a direct path have
// one, and those built over codecs without one (member codecs, List,
// Convert) keep the term path.
func TestDirectPathCoverage(t *testing.T) {
	has := func(name string, appendRaw, readRaw bool, want bool) {
		if appendRaw != want || readRaw != want {
			t.Errorf("%s: direct encode %v, decode %v; want %v", name, appendRaw, readRaw, want)
		}
	}
	has("String", String.appendRaw != nil, String.readRaw != nil, true)
	has("Bytes", Bytes.appendRaw != nil, Bytes.readRaw != nil, true)
	has("Int", Int.appendRaw != nil, Int.readRaw != nil, true)
	has("Record", memberCodec.appendRaw != nil, memberCodec.readRaw != nil, true)
	t2 := Tuple2(String, Int)
	has("Tuple2", t2.appendRaw != nil, t2.readRaw != nil, true)
	mixed := Tuple2(String, List(String))
	has("Tuple2 with a List", mixed.appendRaw != nil, mixed.readRaw != nil, false)
	has("Float", Float.appendRaw != nil, Float.readRaw != nil, true)
	has("Bool", Bool.appendRaw != nil, Bool.readRaw != nil, true)
	has("Atom", Atom.appendRaw != nil, Atom.readRaw != nil, true)
	has("Charlist", Charlist.appendRaw != nil, Charlist.readRaw != nil, false)
	has("Term", Term.appendRaw != nil, Term.readRaw != nil, false)
	l := List(String)
	has("List", l.appendRaw != nil, l.readRaw != nil, false)
	conv := Convert(String, func(s string) (string, error) { return s, nil }, func(s string) (string, error) { return s, nil })
	has("Convert", conv.appendRaw != nil, conv.readRaw != nil, false)
	bad := Record(string(make([]byte, 300)), Field(String, func(s *string) *string { return s }))
	has("Record with a tag that is no atom", bad.appendRaw != nil, bad.readRaw != nil, false)
}

// TestDirectReadersNeverPanic: the direct readers refuse, without a panic,
// every prefix of a valid body and random bytes.
func TestDirectReadersNeverPanic(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	r := rand.New(rand.NewPCG(seed, 1))
	a := &arena{}
	codecsRead := []func([]byte) bool{
		func(b []byte) bool { _, _, ok := String.readRaw(b, a); return ok },
		func(b []byte) bool { _, _, ok := Bytes.readRaw(b, a); return ok },
		func(b []byte) bool { _, _, ok := Int.readRaw(b, a); return ok },
		func(b []byte) bool { _, _, ok := memberCodec.readRaw(b, a); return ok },
	}
	good, _ := memberCodec.appendRaw(nil, member{Name: "n", Age: 1 << 20, Blob: []byte("blob")})
	for _, read := range codecsRead {
		for i := range len(good) {
			read(good[:i])
		}
		for range 2000 {
			b := make([]byte, r.IntN(16))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			if r.IntN(2) == 0 && len(b) > 0 {
				b[0] = []byte{tagBinary, tagInteger, tagSmallInteger, tagSmallTuple}[r.IntN(4)]
			}
			read(b)
		}
	}
	if _, _, ok := memberCodec.readRaw(good[:len(good)-1], nil); ok {
		t.Fatal("a truncated record decoded")
	}
}

// The old seed variable of the kinds tests still replays (the kit's are
// -seed and GODETS_SEED).
var _ = testutil.SeedAlias("", "KINDS_SEED")

// TestDirectConcurrent: goroutines sharing a handle, and so the pooled
// buffers and the table, each read back exactly what they wrote while the
// others insert, look up and traverse (run it with -race).
func TestDirectConcurrent(t *testing.T) {
	s, err := NewSet(openTable(t, dets.Set, 1), String, memberCodec)
	must(t, err)
	const workers, each = 4, 300
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				for i := range each {
					k := fmt.Sprintf("w%d-%d", w, i)
					want := member{Name: k, Age: int64(i), Blob: []byte(k)}
					if err := s.Insert(k, want); err != nil {
						return err
					}
					got, err := s.Lookup(k)
					if err != nil || !reflect.DeepEqual(got, want) {
						return fmt.Errorf("Lookup(%s) = %+v, %v; want %+v", k, got, err, want)
					}
					if i%100 == 0 {
						var err error
						for k, v := range s.All(&err) {
							if v.Name != k || string(v.Blob) != k {
								return fmt.Errorf("All yielded %s => %+v", k, v)
							}
						}
						if err != nil {
							return err
						}
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirectEncodeErrors: a value the codec cannot encode (an atom too
// long or not UTF-8, a NaN) gives the same error through a direct handle
// as through a term-only one, and writes nothing.
func TestDirectEncodeErrors(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	d, err := NewSet(tab, Atom, Float)
	must(t, err)
	m, err := NewSet(tab, termOnly(Atom), termOnly(Float))
	must(t, err)
	for _, c := range []struct {
		k string
		v float64
	}{
		{strings.Repeat("é", 256), 1},
		{"bad\xff", 1},
		{"ok", math.NaN()},
		{"ok", math.Inf(-1)},
	} {
		e1, e2 := d.Insert(c.k, c.v), m.Insert(c.k, c.v)
		if e1 == nil || !reflect.DeepEqual(errState(e1), errState(e2)) || !errors.Is(e1, ErrEncode) {
			t.Errorf("Insert(%q, %v): direct %v, terms %v; want the same ErrEncode", c.k, c.v, e1, e2)
		}
	}
	if n, err := d.Size(); n != 0 || err != nil {
		t.Fatalf("refused inserts stored %d objects (%v)", n, err)
	}
}

// TestDirectNoCodecUnderLock: the direct path runs no codec code while
// the table is locked: a record's field accessor that calls the table
// (a stand-in for any user code) neither deadlocks Lookup, Select nor All.
func TestDirectNoCodecUnderLock(t *testing.T) {
	// Not openTable: its cleanup's Close would wait forever for a
	// deadlocked table, and the failure would be a hang.
	tab, err := dets.Open(filepath.Join(t.TempDir(), "lock.dets"), dets.Options{Kind: dets.Set, KeyPos: 1})
	must(t, err)
	type rec struct{ Name string }
	rc := Record("rec", Field(String, func(r *rec) *string {
		if _, err := tab.Info(); err != nil { // locks the table
			t.Error(err)
		}
		return &r.Name
	}))
	s, err := NewSet(tab, String, rc)
	must(t, err)
	if rc.readRaw == nil {
		t.Fatal("the record has no direct path: the test would check nothing")
	}
	must(t, s.Insert("k", rec{"v"}))
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if v, err := s.Lookup("k"); err != nil || v.Name != "v" {
				return fmt.Errorf("Lookup: %v, %v", v, err)
			}
			if rows, err := s.Select(func(string, rec) bool { return true }); err != nil || len(rows) != 1 {
				return fmt.Errorf("Select: %v, %v", rows, err)
			}
			return nil
		}()
	}()
	select {
	case err := <-done:
		must(t, err)
		must(t, tab.Close())
	case <-time.After(20 * time.Second):
		t.Fatal("a typed read deadlocked: codec code ran under the table's lock")
	}
}
