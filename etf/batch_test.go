package etf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// randomBatchTerm returns a term of the shapes RawBatch treats
// specially (tuples of binaries, flat or nested, of every size around the
// limits) or, a third of the time, any random term.
func randomBatchTerm(r *rand.Rand) Term {
	bin := func() Binary {
		switch r.Intn(30) {
		case 0:
			return Binary{}
		case 1:
			b := make(Binary, batchMaxBinary-2+r.Intn(5)) // around the sharing limit
			r.Read(b)
			return b
		case 2:
			b := make(Binary, batchBytes/2+r.Intn(batchBytes)) // too large to share
			r.Read(b)
			return b
		}
		return randomBinary(r)
	}
	switch r.Intn(6) {
	case 0, 1:
		return Tuple{bin(), bin()}
	case 2:
		t := make(Tuple, 1+r.Intn(flatMaxArity+4)) // around flatMaxArity
		for i := range t {
			t[i] = bin()
		}
		return t
	case 3:
		return Tuple{bin(), Tuple{bin(), randomTerm(r, 2)}, List{bin()}}
	}
	return randomTerm(r, 4)
}

// sameTerm fails unless got and want have the same dynamic types all the
// way down and are equal both as Erlang terms and as Go values.
func sameTerm(t *testing.T, what string, got, want Term) {
	t.Helper()
	if !Equal(got, want) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
	var walk func(g, w Term) bool
	walk = func(g, w Term) bool {
		if reflect.TypeOf(g) != reflect.TypeOf(w) {
			return false
		}
		switch w := w.(type) {
		case Binary:
			g := g.(Binary)
			return len(g) == len(w) && cap(g) == len(g) // capped: no writes into a neighbour
		case Tuple:
			g := g.(Tuple)
			if len(g) != len(w) || cap(g) != len(g) {
				return false
			}
			for i := range w {
				if !walk(g[i], w[i]) {
					return false
				}
			}
		}
		return true
	}
	if !walk(got, want) {
		t.Fatalf("%s: types or capacities differ: got %#v, want %#v", what, got, want)
	}
}

// TestBatchBoxing: the unsafe boxing is enabled on this platform, and its
// terms behave as ordinarily boxed ones in type switches, assertions,
// conversions to any and formatting.
func TestBatchBoxing(t *testing.T) {
	if !boxOK {
		t.Fatal("termOfBinary does not build the terms conversions do: RawBatch falls back to allocating")
	}
	var bd RawBatch
	got, err := bd.Decode(mustEncode(t, Tuple{Binary("key"), Binary{}}))
	if err != nil {
		t.Fatal(err)
	}
	var a any = got
	tup, ok := a.(Tuple)
	if !ok || len(tup) != 2 {
		t.Fatalf("as any: %#v", a)
	}
	switch k := tup[0].(type) {
	case Binary:
		if string(k) != "key" {
			t.Fatalf("key %q", k)
		}
	default:
		t.Fatalf("key has type %T", k)
	}
	if v, ok := tup[1].(Binary); !ok || v == nil || len(v) != 0 {
		t.Fatalf("empty binary: %#v", tup[1])
	}
	if s := fmt.Sprint(got); s != `{<<"key">>,<<>>}` {
		t.Fatalf("formatted as %s", s)
	}
	if got.Type() != TypeTuple || tup[0].Type() != TypeBitstring {
		t.Fatalf("types %v %v", got.Type(), tup[0].Type())
	}
}

// TestBatchMatchesDecode: for random terms (seeded: -etf.seed), and for
// truncated and corrupted encodings of them, RawBatch gives exactly
// Decode's result: the same Go types and values, or the same error.
func TestBatchMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var bd RawBatch
	for i := range 4000 {
		enc := mustEncode(t, randomBatchTerm(r))
		inputs := [][]byte{enc, enc[:r.Intn(len(enc))]}
		bad := bytes.Clone(enc)
		bad[r.Intn(len(bad))] ^= byte(1 + r.Intn(255))
		inputs = append(inputs, bad)
		for j, in := range inputs {
			want, werr := Decode(in)
			got, gerr := bd.Decode(bytes.Clone(in))
			what := fmt.Sprintf("term %d input %d (%x)", i, j, in[:min(len(in), 40)])
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("%s: error %v, Decode says %v", what, gerr, werr)
			}
			if werr == nil {
				sameTerm(t, what, got, want)
			}
		}
	}
}

// TestBatchPairMatchesDecode: flatPair, the fast path for {Binary,
// Binary}, gives exactly Decode's result on pairs with lengths around its
// limits and on encodings one step away from its shape (a length field
// rewritten, a tag changed, a byte added or cut), and takes every valid
// pair within its limits. Seeded: -etf.seed.
func TestBatchPairMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	size := func() int {
		switch r.Intn(4) {
		case 0:
			return r.Intn(3)
		case 1:
			return batchMaxBinary - 2 + r.Intn(5)
		}
		return r.Intn(300)
	}
	var bd RawBatch
	for i := range 3000 {
		k, v := make(Binary, size()), make(Binary, size())
		r.Read(k)
		r.Read(v)
		enc := mustEncode(t, Tuple{k, v})
		l2at := flatData + len(k) + 1 // the second length field
		inputs := [][]byte{enc}
		for range 4 {
			bad := bytes.Clone(enc)
			switch r.Intn(6) {
			case 0: // a length field, small change or any value
				at := []int{4, l2at}[r.Intn(2)]
				l := binary.BigEndian.Uint32(bad[at:])
				if r.Intn(2) == 0 {
					l += uint32(r.Intn(5)) - 2
				} else {
					l = r.Uint32()
				}
				binary.BigEndian.PutUint32(bad[at:], l)
			case 1: // a tag or the arity
				bad[[]int{0, 1, 2, 3, l2at - 1}[r.Intn(5)]] ^= byte(1 + r.Intn(255))
			case 2:
				bad = append(bad, byte(r.Intn(256)))
			case 3:
				bad = bad[:r.Intn(len(bad))]
			default:
				bad[r.Intn(len(bad))] ^= byte(1 + r.Intn(255))
			}
			inputs = append(inputs, bad)
		}
		for j, in := range inputs {
			want, werr := Decode(in)
			before := len(bd.pairs)
			got, gerr := bd.Decode(bytes.Clone(in))
			what := fmt.Sprintf("pair %d input %d (%x)", i, j, in[:min(len(in), 40)])
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("%s: error %v, Decode says %v", what, gerr, werr)
			}
			if werr != nil {
				continue
			}
			sameTerm(t, what, got, want)
			tup, isPair := want.(Tuple)
			fast := isPair && len(tup) == 2 && len(in)-flatData <= batchBytes/2
			for _, x := range tup {
				b, ok := x.(Binary)
				fast = fast && ok && len(b) <= batchMaxBinary
			}
			if took := len(bd.pairs) != before; took != fast {
				t.Fatalf("%s: fast path taken %v, want %v", what, took, fast)
			}
		}
	}
}

// TestBatchIsolation: a decoded term shares chunks with its neighbours but
// never memory they can reach: writing through one changes no other.
func TestBatchIsolation(t *testing.T) {
	var bd RawBatch
	var got []Term
	for i := range 300 {
		got = append(got, mustDecodeBatch(t, &bd, Tuple{Binary{byte(i)}, Binary{byte(i), 1}}))
	}
	for i, x := range got {
		tup := x.(Tuple)
		tup[0] = Atom("changed")                   // the tuple's own element
		_ = append(tup[1].(Binary), 9, 9, 9, 9, 9) // cannot grow in place
		_ = append(tup, Atom("x"))
		tup[1].(Binary)[0] = 0xFF
		if i+1 < len(got) {
			next := got[i+1].(Tuple)
			if !Equal(next, Tuple{Binary{byte(i + 1)}, Binary{byte(i + 1), 1}}) {
				t.Fatalf("term %d changed by writes through term %d: %v", i+1, i, next)
			}
		}
	}
}

func mustDecodeBatch(t *testing.T, bd *RawBatch, x Term) Term {
	t.Helper()
	got, err := bd.Decode(mustEncode(t, x))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBatchTermsSurviveGC: terms stay intact when collections run while
// they are decoded (write barriers) and afterwards, when only a few of
// them, and not the RawBatch, keep their chunks alive, and freed
// memory is reused for garbage. Seeded: -etf.seed.
func TestBatchTermsSurviveGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	n := 20000
	if testing.Short() {
		n = 5000
	}
	encs := make([][]byte, n)
	for i := range encs {
		encs[i] = mustEncode(t, randomBatchTerm(r))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // collect continuously while decoding
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	kept := map[int]Term{}
	func() {
		var bd RawBatch
		for i, enc := range encs {
			got, err := bd.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if i%97 == 0 || i >= n-10 {
				kept[i] = got
			}
		}
	}()
	close(stop)
	wg.Wait()
	var junk [][]byte
	for range 5 {
		runtime.GC()
		// Reuse whatever was freed, with a pattern no term holds.
		junk = junk[:0]
		for range 2000 {
			junk = append(junk, bytes.Repeat([]byte{0xEE}, 64+r.Intn(4096)))
		}
	}
	runtime.KeepAlive(junk)
	for i, got := range kept {
		want, err := Decode(encs[i])
		if err != nil {
			t.Fatal(err)
		}
		sameTerm(t, fmt.Sprintf("term %d after GC", i), got, want)
	}
}

// TestBatchAllocs: decoding the dets engine's common object shares every
// allocation: a few chunks per thousand objects, not three per object.
func TestBatchAllocs(t *testing.T) {
	encs := make([][]byte, 1000)
	for i := range encs {
		encs[i] = mustEncode(t, Tuple{make(Binary, 16), Binary(bytes.Repeat([]byte{byte(i)}, 100))})
	}
	allocs := testing.AllocsPerRun(20, func() {
		var bd RawBatch
		for _, enc := range encs {
			if _, err := bd.Decode(enc); err != nil {
				t.Fatal(err)
			}
		}
	})
	if perObject := allocs / float64(len(encs)); perObject > 0.05 {
		t.Fatalf("%.3f allocations per object (%.0f per %d)", perObject, allocs, len(encs))
	}
}

// TestBatchChunksSmall: however long the batch, no chunk is larger than
// batchChunkMax bytes, though the bytes' chunks grow up to near it.
func TestBatchChunksSmall(t *testing.T) {
	var bd RawBatch
	encs := [][]byte{
		mustEncode(t, Tuple{Binary("key"), Binary(bytes.Repeat([]byte{7}, 100))}),
		mustEncode(t, Tuple{Binary("k"), Binary("v"), Binary("w")}),
		mustEncode(t, Tuple{Int(1), Tuple{Binary("x")}, List{Binary("y")}}),
	}
	check := func(what string, n, size int) {
		if n*size > batchChunkMax {
			t.Fatalf("%s chunk of %d bytes, above %d", what, n*size, batchChunkMax)
		}
	}
	for i := range 20000 {
		if _, err := bd.Decode(encs[i%len(encs)]); err != nil {
			t.Fatal(err)
		}
	}
	check("bytes", cap(bd.bytes), 1)
	if cap(bd.bytes) <= batchChunkMax/2 {
		t.Fatalf("bytes chunk of %d bytes: never grew near %d", cap(bd.bytes), batchChunkMax)
	}
	check("terms", cap(bd.terms), sizeOf[Term]())
	check("binary headers", cap(bd.bins), sizeOf[Binary]())
	check("tuple headers", cap(bd.tups), sizeOf[Tuple]())
	check("pairs", cap(bd.pairs), sizeOf[flat2]())
}

// FuzzBatchDecode: RawBatch agrees with Decode on any input.
func FuzzBatchDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Add(hx("83 68 02 6d 00000002 6162 6d 00000000"))
	f.Add(hx("83 68 02 6d 00000002 6162 6d 00000001"))
	f.Add(hx("83 68 01 6d 00000002 616263"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var bd RawBatch
		want, werr := Decode(b)
		got, gerr := bd.Decode(b)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("error %v, Decode says %v", gerr, werr)
		}
		if werr == nil {
			sameTerm(t, "term", got, want)
		}
	})
}

// BenchmarkBatchDecode decodes the dets engine's common object,
// {<<16 bytes>>, <<100 bytes>>}, with a RawBatch, keeping each result
// only until the next (as a traversal's caller usually does).
func BenchmarkBatchDecode(b *testing.B) {
	enc, err := Encode(benchKey)
	if err != nil {
		b.Fatal(err)
	}
	var bd RawBatch
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bd.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
