package dets

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// convertObjects returns seeded objects for kind k: 150 keys, a bag or
// duplicate_bag key up to four objects (duplicates too, in a
// duplicate_bag), integer, binary and tuple keys, values up to 300 bytes.
func convertObjects(rng *rand.Rand, k Kind) []etf.Term {
	var objs []etf.Term
	for i := range 150 {
		var key etf.Term = etf.Int(i)
		switch i % 3 {
		case 1:
			key = etf.Binary(fmt.Sprintf("key-%d", i))
		case 2:
			key = etf.Tuple{etf.Atom("k"), etf.Int(i)}
		}
		n := 1
		if k != Set {
			n = 1 + rng.Intn(4)
		}
		for j := range n {
			v := etf.Binary(bytes.Repeat([]byte{byte('a' + j)}, rng.Intn(300)))
			if k == DuplicateBag && j > 0 && rng.Intn(3) == 0 {
				objs = append(objs, objs[len(objs)-1]) // an exact duplicate
				continue
			}
			objs = append(objs, etf.Tuple{etf.Atom("o"), key, v, etf.Int(j)})
		}
	}
	// Insertion order is the shuffle's; the table records each key's
	// order, and the test compares that order across conversions.
	rng.Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
	return objs
}

// tableContent returns every key's objects, as Lookup orders them, keyed
// by the key's canonical encoding.
func tableContent(t *testing.T, tab *Table) map[string][]etf.Term {
	t.Helper()
	var keys []etf.Term
	for k, err := range tab.Keys() {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	out := map[string][]etf.Term{}
	for _, k := range keys {
		objs, err := tab.Lookup(k)
		if err != nil {
			t.Fatal(err)
		}
		e, err := etf.Encode(k)
		if err != nil {
			t.Fatal(err)
		}
		out[string(e)] = objs
	}
	return out
}

func sameContent(t *testing.T, what string, a, b map[string][]etf.Term) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d keys, want %d", what, len(b), len(a))
	}
	for k, objs := range a {
		got := b[k]
		if !slices.EqualFunc(objs, got, func(x, y etf.Term) bool { return etf.CompareExact(x, y) == 0 }) {
			t.Fatalf("%s: key %x holds %v, want %v (in this order)", what, k, got, objs)
		}
	}
}

// contentOf opens path read-only and returns its content and info.
func contentOf(t *testing.T, path string) (map[string][]etf.Term, Info) {
	t.Helper()
	tab, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	in, err := tab.Info()
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Check(); err != nil {
		t.Fatalf("Check of %s: %v", path, err)
	}
	return tableContent(t, tab), in
}

// TestConvertRoundTrip converts otp9 -> native -> otp9 for every kind: the
// objects, each key's order, kind, keyPos and slot bounds carry over, and
// the files pass Check.
func TestConvertRoundTrip(t *testing.T) {
	seed := testSeed(t)
	for _, k := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(k.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			dir := t.TempDir()
			a, n, b := filepath.Join(dir, "a.dets"), filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
			tab, err := Open(a, Options{Kind: k, KeyPos: 2, MinSlots: 1024, MaxSlots: 8192})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range convertObjects(rng, k) {
				if err := tab.Insert(o); err != nil {
					t.Fatal(err)
				}
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			want, wantIn := contentOf(t, a)
			srcBytes, err := os.ReadFile(a)
			if err != nil {
				t.Fatal(err)
			}

			st, err := Convert(a, n, Native, ConvertOptions{})
			if err != nil {
				t.Fatalf("Convert to native: %v", err)
			}
			got, in := contentOf(t, n)
			sameContent(t, "native", want, got)
			if in.Format != Native || in.Kind != k || in.KeyPos != 2 || in.NoSlots.Min != 1024 || in.NoSlots.Max != 8192 ||
				in.Size != wantIn.Size || in.NoKeys != wantIn.NoKeys {
				t.Fatalf("native info %+v, source %+v", in, wantIn)
			}
			if st.From != OTP9 || st.To != Native || st.Objects != int64(wantIn.Size) || st.Keys != int64(wantIn.NoKeys) {
				t.Fatalf("stats %+v", st)
			}
			if after, _ := os.ReadFile(a); !bytes.Equal(after, srcBytes) {
				t.Fatal("Convert changed its source")
			}
			if _, err := os.Stat(tmpPath(n)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s left behind: %v", tmpPath(n), err)
			}

			st, err = Convert(n, b, OTP9, ConvertOptions{})
			if err != nil {
				t.Fatalf("Convert to otp9: %v", err)
			}
			got, in = contentOf(t, b)
			sameContent(t, "otp9 again", want, got)
			if in.Format != OTP9 || in.Kind != k || in.KeyPos != 2 || in.NoSlots.Min != 1024 || in.NoSlots.Max != 8192 {
				t.Fatalf("otp9 info %+v", in)
			}
			if st.From != Native || st.To != OTP9 || st.Objects != int64(wantIn.Size) || st.MaxSlotsClamped {
				t.Fatalf("stats %+v", st)
			}
			// Same format, and an existing destination, are refused.
			if _, err := Convert(b, filepath.Join(dir, "c.dets"), OTP9, ConvertOptions{}); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("otp9 to otp9: %v, want ErrInvalidOptions", err)
			}
			if _, err := Convert(a, n, Native, ConvertOptions{}); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("existing destination: %v, want fs.ErrExist", err)
			}
			if _, err := Convert(a, n, Native, ConvertOptions{Force: true}); err != nil {
				t.Fatalf("--force: %v", err)
			}
		})
	}
}

// TestConvertSlotBounds: native's defaults (512, 2^32) become otp9's
// bounds with the ceiling clamped to 2^25 and reported.
func TestConvertSlotBounds(t *testing.T) {
	dir := t.TempDir()
	n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
	tab, err := Open(n, Options{Format: Native})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(etf.Tuple{etf.Int(1), etf.Int(2)}); err != nil {
		t.Fatal(err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Convert(n, b, OTP9, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, in := contentOf(t, b)
	if !st.MaxSlotsClamped || st.MaxSlots != maxSlotsLimit || in.NoSlots.Max != maxSlotsLimit || in.NoSlots.Min != 512 {
		t.Fatalf("stats %+v, info %+v: want max slots clamped to 2^25", st, in.NoSlots)
	}
}

// TestConvertLimits: a native table past otp9's file size (the limit
// lowered for the test) is refused with a *FormatLimitError before any
// byte of DST or DST.TMP is written, and the source stays byte-identical.
func TestConvertLimits(t *testing.T) {
	dir := t.TempDir()
	n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
	tab, err := Open(n, Options{Format: Native, Kind: Bag})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := tab.Insert(etf.Tuple{etf.Int(i), etf.Binary(bytes.Repeat([]byte("x"), 100))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(n)
	if err != nil {
		t.Fatal(err)
	}
	limited := func(limit int64) ConvertOptions {
		return ConvertOptions{tune: withTuning(Options{}, func(tn *tuning) { tn.otp9SizeLimit = limit }).tune}
	}
	_, err = Convert(n, b, OTP9, limited(20_000))
	var fe *FormatLimitError
	if !errors.Is(err, ErrFormatLimit) || !errors.As(err, &fe) || fe.What != "file size" || fe.Limit != 20_000 || fe.Need <= 20_000 {
		t.Fatalf("Convert past the size limit: %v, want a *FormatLimitError on the file size", err)
	}
	wantMsg := fmt.Sprintf("dets: table exceeds otp9's file size: needs %s bytes, limit 20,000", groupDigits(fe.Need))
	if err.Error() != wantMsg {
		t.Fatalf("message %q, want %q", err.Error(), wantMsg)
	}
	for _, p := range []string{b, tmpPath(b), sortPath(b)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s exists after a refused conversion (%v)", p, err)
		}
	}
	if after, _ := os.ReadFile(n); !bytes.Equal(after, src) {
		t.Fatal("the source changed")
	}
	// The estimate is not far above the real file: at the limit it
	// computed, the conversion goes through and the file fits.
	if _, err := Convert(n, b, OTP9, limited(int64(fe.Need))); err != nil {
		t.Fatalf("Convert at the computed size: %v", err)
	}
	if fi, err := os.Stat(b); err != nil || fi.Size() > int64(fe.Need) {
		t.Fatalf("otp9 file of %v bytes, estimate %d (%v)", fi.Size(), fe.Need, err)
	}
}

// convertAtBound converts the native table n to otp9 at b twice: with a
// size limit of 1, to learn the bound the limit check computes, then with
// that bound as the limit, which must let it through. It returns the
// bound and the size of the file written. tune, if not nil, changes the
// rest of the tuning.
func convertAtBound(t *testing.T, n, b, what string, tune func(*tuning)) (bound, size int64) {
	t.Helper()
	opts := func(limit int64) ConvertOptions {
		return ConvertOptions{tune: withTuning(Options{}, func(tn *tuning) {
			tn.otp9SizeLimit = limit
			if tune != nil {
				tune(tn)
			}
		}).tune}
	}
	_, err := Convert(n, b, OTP9, opts(1))
	var fe *FormatLimitError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: limit 1: %v, want a *FormatLimitError", what, err)
	}
	if _, err := Convert(n, b, OTP9, opts(int64(fe.Need))); err != nil {
		t.Fatalf("%s: Convert at the computed bound %d: %v", what, fe.Need, err)
	}
	fi, err := os.Stat(b)
	must(t, err)
	return int64(fe.Need), fi.Size()
}

// TestConvertBoundHoldsLargeBuckets: the otp9 size bound that the limit
// check uses holds for tables with a large bucket: the writer aligns each
// block to its size, and the gap below the first large one was not
// counted (a 5 MiB object made a 13.6 MB file where the bound said 8.5
// MB). At the computed bound the conversion goes through and the file
// fits it. Found by an audit helper.
func TestConvertBoundHoldsLargeBuckets(t *testing.T) {
	for _, size := range []int{100 << 10, 600 << 10, 5 << 20} {
		dir := t.TempDir()
		n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
		tab, err := Open(n, Options{Format: Native})
		must(t, err)
		must(t, tab.Insert(etf.Tuple{etf.Int(1), etf.Binary(make([]byte, size))}))
		must(t, tab.Insert(etf.Tuple{etf.Int(2), etf.Binary("small")}))
		must(t, tab.Close())
		what := fmt.Sprintf("object of %d bytes", size)
		if bound, got := convertAtBound(t, n, b, what, nil); got > bound {
			t.Errorf("%s: otp9 file of %d bytes, past the bound %d", what, got, bound)
		}
	}
}

// TestConvertBoundChunkedLargeBlocks: past 64 MiB the writer's chunked
// layout puts each block of a chunk or more at the end of the file,
// aligned to its own size, so blocks of 4 and 8 MiB in turn leave a gap
// each time; the bound counted one gap (a 176.2 MB file against a bound
// of 156.6 MB), and near otp9's limit a table passed the check, wrote
// DST.TMP up to 2 GB and failed with ErrFileTooLarge.
func TestConvertBoundChunkedLargeBlocks(t *testing.T) {
	dir := t.TempDir()
	n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
	tab, err := Open(n, Options{Format: Native})
	must(t, err)
	for i := range 20 {
		size := 3 << 20 // a 4 MiB otp9 block
		if i%2 == 1 {
			size = 5 << 20 // an 8 MiB otp9 block
		}
		must(t, tab.Insert(etf.Tuple{etf.Int(i), etf.Binary(make([]byte, size))}))
	}
	must(t, tab.Close())
	if bound, got := convertAtBound(t, n, b, "mixed 4 and 8 MiB blocks", nil); got > bound {
		t.Errorf("otp9 file of %d bytes, past the bound %d (by %d)", got, bound, got-bound)
	}
}

// TestConvertBoundRandom: the size bound is the written file's size, for
// random mixes of small objects and large ones over several block
// classes of a chunk or more, in every kind, in the chunked layout (the
// index limit lowered, so that it spills, as past 2Mi objects: small
// chunks, many large classes) and in the planned one; without -short also
// past 64 MiB with the default tuning. Seeded: -seed replays a failure.
func TestConvertBoundRandom(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	type round struct {
		small, large int // object counts
		lo, hi       int // log2 of the large objects' size range
		memEntries   int // 0: the default
	}
	var rounds []round
	for range 8 {
		rounds = append(rounds, round{small: rng.Intn(300), large: 1 + rng.Intn(40), lo: 12, hi: 20, memEntries: 8})
	}
	for range 4 {
		rounds = append(rounds, round{small: rng.Intn(300), large: 1 + rng.Intn(20), lo: 10, hi: 19})
	}
	if !testing.Short() {
		rounds = append(rounds, round{small: 2000, large: 30, lo: 18, hi: 23})
	}
	for i, r := range rounds {
		kind := []Kind{Set, Bag, DuplicateBag}[rng.Intn(3)]
		dir := t.TempDir()
		n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
		tab, err := Open(n, Options{Format: Native, Kind: kind})
		must(t, err)
		keys := max(1, (r.small+r.large)*2/3) // collisions make larger buckets
		for j := range r.small + r.large {
			size := 1 + rng.Intn(2000)
			if j < r.large {
				size = 1<<(r.lo+rng.Intn(r.hi-r.lo)) + rng.Intn(1<<r.lo)
			}
			v := make([]byte, size)
			v[0] = byte(j) // distinct objects, so that a bag keeps them
			must(t, tab.Insert(etf.Tuple{etf.Int(rng.Intn(keys)), etf.Binary(v), etf.Int(j)}))
		}
		must(t, tab.Close())
		what := fmt.Sprintf("round %d %+v, %s", i, r, kind)
		bound, got := convertAtBound(t, n, b, what, func(tn *tuning) {
			if r.memEntries > 0 {
				tn.repairMemEntries = r.memEntries
			}
		})
		if got > bound {
			t.Errorf("%s: otp9 file of %d bytes, past the bound %d (by %d)", what, got, bound, got-bound)
		} else if got != bound {
			t.Errorf("%s: otp9 file of %d bytes, bound %d: the replay is not exact", what, got, bound)
		}
	}
}

// TestConvertNeedsRepair: a source not closed properly is refused with
// ErrNeedsRepair by default, and nothing is written.
func TestConvertNeedsRepair(t *testing.T) {
	dir := t.TempDir()
	n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
	tab, err := Open(n, Options{Format: Native})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Insert(etf.Tuple{etf.Int(1), etf.Int(2)}); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(n)
	if err != nil {
		t.Fatal(err)
	}
	tab.Close()
	dirty := filepath.Join(dir, "dirty.dets")
	if err := os.WriteFile(dirty, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(dirty, b, OTP9, ConvertOptions{}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("Convert of a file not closed properly: %v, want ErrNeedsRepair", err)
	}
	if _, err := os.Stat(b); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("destination written: %v", err)
	}
}

// otpConvertedRead runs in erl: it opens each file with {repair,false}
// (In is pairs of file and kind) and returns its info and objects,
// sorted, as term_to_binary.
const otpConvertedRead = `
Read = fun(F, K) ->
    case dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, binary_to_atom(K, latin1)}, {keypos, 2}, {repair, false}]) of
        {ok, T} ->
            L = lists:sort(dets:foldl(fun(O, Acc) -> [O | Acc] end, [], T)),
            Info = {dets:info(T, type), dets:info(T, keypos), dets:info(T, size)},
            ok = dets:close(T),
            {ok, Info, L};
        E -> E
    end
end,
Pairs = fun P([F, K | Rest]) -> [term_to_binary(Read(F, K)) | P(Rest)]; P([]) -> [] end,
Pairs(In)
`

// TestConvertOTPReads: an otp9 file converted from native opens in real
// OTP with {repair,false} and holds the same terms, kind and key position.
func TestConvertOTPReads(t *testing.T) {
	erl := otptest.Erl(t)
	seed := testSeed(t)
	dir := t.TempDir()
	var outs [][]byte
	var wants [][]etf.Term
	kinds := []Kind{Set, Bag, DuplicateBag}
	for _, k := range kinds {
		rng := rand.New(rand.NewSource(seed))
		n, b := filepath.Join(dir, k.String()+".native"), filepath.Join(dir, k.String()+".dets")
		tab, err := Open(n, Options{Format: Native, Kind: k, KeyPos: 2})
		if err != nil {
			t.Fatal(err)
		}
		objs := convertObjects(rng, k)
		for _, o := range objs {
			if err := tab.Insert(o); err != nil {
				t.Fatal(err)
			}
		}
		want := slices.Concat(slices.Collect(valuesOf(tableContent(t, tab)))...)
		slices.SortFunc(want, etf.CompareExact)
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Convert(n, b, OTP9, ConvertOptions{}); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, []byte(b), []byte(k.String()))
		wants = append(wants, want)
	}
	res := erl.Eval(t, otpConvertedRead, outs...)
	for i, r := range res {
		v, err := etf.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		tup, ok := v.(etf.Tuple)
		if !ok || len(tup) != 3 || tup[0] != etf.Atom("ok") {
			t.Fatalf("%s: OTP: %v", kinds[i], etf.Format(v))
		}
		info := tup[1].(etf.Tuple)
		if info[0] != etf.Atom(kinds[i].String()) || !etf.Equal(info[1], etf.Int(2)) || !etf.Equal(info[2], etf.Int(int64(len(wants[i])))) {
			t.Fatalf("%s: OTP info %v", kinds[i], etf.Format(info))
		}
		got, _ := tup[2].(etf.List)
		if len(got) != len(wants[i]) {
			t.Fatalf("%s: OTP reads %d objects, want %d", kinds[i], len(got), len(wants[i]))
		}
		for j := range got {
			if etf.CompareExact(got[j], wants[i][j]) != 0 {
				t.Fatalf("%s: OTP object %d is %v, want %v", kinds[i], j, etf.Format(got[j]), etf.Format(wants[i][j]))
			}
		}
	}
}

// valuesOf yields the values of m.
func valuesOf(m map[string][]etf.Term) func(func([]etf.Term) bool) {
	return func(yield func([]etf.Term) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestConvertCountLimits: a native table with more objects or keys than
// otp9 counts, or a minimum slot count above 2^25, is refused before
// anything is written. The counts are set in memory: such tables are too
// large to build in a test.
func TestConvertCountLimits(t *testing.T) {
	cases := []struct {
		what string
		set  func(h *header)
	}{
		{"object count", func(h *header) { h.noObjects = 1 << 32 }},
		{"key count", func(h *header) { h.noKeys = 1 << 32 }},
		{"minimum slot count", func(h *header) { h.minSlots = 1 << 26 }},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			dir := t.TempDir()
			n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
			tab, err := Open(n, Options{Format: Native})
			if err != nil {
				t.Fatal(err)
			}
			defer tab.Close()
			if err := tab.Insert(etf.Tuple{etf.Int(1), etf.Int(2)}); err != nil {
				t.Fatal(err)
			}
			saved := tab.h
			c.set(&tab.h)
			var st ConvertStats
			err = convertToOTP9(tab, n, b, &st)
			tab.h = saved
			var fe *FormatLimitError
			if !errors.Is(err, ErrFormatLimit) || !errors.As(err, &fe) || fe.What != c.what {
				t.Fatalf("convertToOTP9: %v, want a *FormatLimitError on the %s", err, c.what)
			}
			for _, p := range []string{b, tmpPath(b), sortPath(b)} {
				if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("%s exists after a refused conversion (%v)", p, err)
				}
			}
		})
	}
}

// TestConvertLarge converts a native table of 70,000 objects to otp9:
// enough for the otp9 writer's chunked layout (which the size bound must
// also cover) and, with the in-memory index limit lowered, for the
// external sort through DST.TMP.sort, which must be gone afterwards.
func TestConvertLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("70,000 objects")
	}
	smallIndex := ConvertOptions{tune: withTuning(Options{}, func(tn *tuning) { tn.repairMemEntries = 20_000 }).tune}
	dir := t.TempDir()
	n, b := filepath.Join(dir, "n.dets"), filepath.Join(dir, "b.dets")
	tab, err := Open(n, Options{Format: Native, Kind: DuplicateBag, MinSlots: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 35_000
	batch := make([]etf.Term, 0, 1000)
	for i := range keys {
		batch = append(batch, etf.Tuple{etf.Int(i), etf.Int(1)}, etf.Tuple{etf.Int(i), etf.Int(2)})
		if len(batch) == cap(batch) || i == keys-1 {
			if err := tab.Insert(batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Convert(n, b, OTP9, smallIndex)
	if err != nil {
		t.Fatal(err)
	}
	if st.Objects != 2*keys || st.Keys != keys || !st.ExternalSort {
		t.Fatalf("stats %+v, want 70,000 objects, 35,000 keys, an external sort", st)
	}
	if _, err := os.Stat(sortPath(b)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s left behind (%v)", sortPath(b), err)
	}
	out, err := Open(b, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := out.Check(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1234, keys - 1} {
		objs, err := out.Lookup(etf.Int(i))
		if err != nil || len(objs) != 2 || !etf.Equal(objs[0].(etf.Tuple)[1], etf.Int(1)) || !etf.Equal(objs[1].(etf.Tuple)[1], etf.Int(2)) {
			t.Fatalf("Lookup(%d) = %v, %v", i, objs, err)
		}
	}
	fi, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	// The size bound is an upper bound: just below the real size, the
	// conversion is refused.
	limited := ConvertOptions{tune: withTuning(Options{}, func(tn *tuning) { tn.otp9SizeLimit = fi.Size() - 1 }).tune}
	if _, err := Convert(n, filepath.Join(dir, "c.dets"), OTP9, limited); !errors.Is(err, ErrFormatLimit) {
		t.Fatalf("Convert with the limit below the real size %d: %v, want ErrFormatLimit", fi.Size(), err)
	}
}
