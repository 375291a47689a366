package dets

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	mdl "github.com/godets/godets/internal/model"
	"github.com/godets/godets/internal/otptest"
)

// rsPad draws a payload size: mostly small, some medium, a few over 2 KiB,
// so that buckets land in many size classes, some above the segments'
// 2048-byte alignment.
func rsPad(r *rand.Rand) int {
	switch x := r.IntN(100); {
	case x < 70:
		return r.IntN(60)
	case x < 95:
		return 60 + r.IntN(540)
	default:
		return 600 + r.IntN(2500)
	}
}

// rsObjects returns n seeded objects for kind: sets overwrite some keys,
// bags and duplicate bags get several objects per key, some identical.
func rsObjects(r *rand.Rand, kind Kind, n int) etf.List {
	keys := max(n*3/4, 1)
	if kind != Set {
		keys = max(n/3, 1)
	}
	out := make(etf.List, 0, n)
	for range n {
		out = append(out, paddedObj(r.IntN(keys), r.IntN(3), rsPad(r)))
	}
	return out
}

// rsCheckPacked opens the closed table at path and fails unless the file
// holds little more than its slot table and bucket blocks: at most the
// alignment gap that a block above 2048 bytes can need after the segments
// (which end 2048-aligned), plus 1 KiB for the free lists (a few dozen
// blocks) and the trailer. The chunked layout leaves up to a chunk per
// size class.
func rsCheckPacked(t *testing.T, path string) {
	t.Helper()
	tab := openT(t, path, Options{})
	defer tab.Close()
	var blocks, maxBlock int64
	for slot := range tab.h.next {
		e, err := tab.entry(slot)
		if err != nil {
			t.Fatal(err)
		}
		if e.size > 0 {
			blocks += pow2ceil(int64(e.size))
			maxBlock = max(maxBlock, pow2ceil(int64(e.size)))
		}
	}
	nSegs := int64(tab.h.next) / slotsPerSeg
	start := baseAddr + (nSegs+(nSegs+segsPerPart-1)/segsPerPart)*segmentSize
	extra := rsSize(t, path) - start - blocks
	if allowed := max(maxBlock-segmentSize, 0) + 1024; extra > allowed {
		t.Errorf("%s: %d bytes beyond the slot table and the blocks, want at most %d (largest block %d)",
			filepath.Base(path), extra, allowed, maxBlock)
	}
}

// rsNext returns the slot count in the header of the file at path.
func rsNext(t *testing.T, path string) uint64 {
	t.Helper()
	return decodeHeader(readFileT(t, path)[:headerSize]).next
}

func rsSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestRepairSizeAgainstOTP: OTP builds a table by single inserts; one copy
// is compacted by OTP ({repair,force}), two by godets (ForceRepair and
// Repair). godets's files must be packed, clean by Check, no larger than
// OTP's (within 0.1%) whenever both chose the same slot count (always at
// 100 objects),
// and OTP must read them with {repair,false} holding exactly the objects
// of OTP's own compacted file, which godets must read too (interop).
func TestRepairSizeAgainstOTP(t *testing.T) {
	r := otptest.Erl(t)
	rng := rand.New(rand.NewPCG(uint64(testSeed(t)), 7))
	sizes := []int{100, 3000, 20000}
	type tcase struct {
		kind                Kind
		n                   int
		src, otp, gof, gorp string
	}
	var cases []tcase
	var spec etf.List
	for _, kind := range allKinds {
		for _, n := range sizes {
			dir := t.TempDir()
			c := tcase{kind: kind, n: n, src: filepath.Join(dir, "src.dets"), otp: filepath.Join(dir, "otp.dets"),
				gof: filepath.Join(dir, "go-force.dets"), gorp: filepath.Join(dir, "go-repair.dets")}
			cases = append(cases, c)
			spec = append(spec, etf.Tuple{etf.Atom(kind.String()), etf.Binary(c.src), etf.Binary(c.otp), rsObjects(rng, kind, n)})
		}
	}
	enc, err := etf.Encode(spec)
	if err != nil {
		t.Fatal(err)
	}
	otpSizes := r.Eval(t, `
[SpecB] = In,
Build = fun({Kind, SrcB, OtpB, Objs}) ->
    Src = binary_to_list(SrcB), Otp = binary_to_list(OtpB),
    {ok, T} = dets:open_file(make_ref(), [{file, Src}, {type, Kind}]),
    lists:foreach(fun(O) -> ok = dets:insert(T, O) end, Objs),
    ok = dets:close(T),
    {ok, _} = file:copy(Src, Otp),
    {ok, T2} = dets:open_file(make_ref(), [{file, Otp}, {type, Kind}, {repair, force}]),
    ok = dets:close(T2),
    <<(filelib:file_size(Otp)):64>>
end,
[Build(S) || S <- binary_to_term(SpecB)]`, enc)

	var back etf.List
	sameSlots := 0
	for i, c := range cases {
		src := readFileT(t, c.src)
		writeFileT(t, c.gof, src)
		writeFileT(t, c.gorp, src)
		tab := openT(t, c.gof, Options{Repair: ForceRepair})
		mustCheck(t, tab)
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Repair(c.gorp, Options{}, nil); err != nil {
			t.Fatalf("%s/%d: Repair: %v", c.kind, c.n, err)
		}
		otpSize := int64(binary.BigEndian.Uint64(otpSizes[i]))
		gof, gorp := rsSize(t, c.gof), rsSize(t, c.gorp)
		otpNext, goNext := rsNext(t, c.otp), rsNext(t, c.gof)
		t.Logf("%-13s %6d objects: source %8d, OTP {repair,force} %8d, godets ForceRepair %8d, Repair %8d bytes (%+.1f%%); slots OTP %d, godets %d",
			c.kind, c.n, len(src), otpSize, gof, gorp, 100*float64(gof-otpSize)/float64(otpSize), otpNext, goNext)
		// OTP's compaction keeps the slot count; godets's repair sizes it
		// to the keys (repair.go), and other slots make other buckets.
		if otpNext == goNext {
			sameSlots++
		}
		// The top bucket and the free lists' length are chosen by a
		// heuristic, which lost to OTP's layout by a byte (bag, 3000
		// objects) in one run of many: allow 0.1%.
		if limit := otpSize + otpSize/1000; otpNext == goNext && (gof > limit || gorp > limit) {
			t.Errorf("%s/%d: godets's compacted files have %d and %d bytes, OTP's %d (0.1%% allowed)", c.kind, c.n, gof, gorp, otpSize)
		}
		rsCheckPacked(t, c.gof)
		rsCheckPacked(t, c.gorp)
		back = append(back, etf.Tuple{etf.Atom(c.kind.String()), etf.Binary(c.otp), etf.List{etf.Binary(c.gof), etf.Binary(c.gorp)}})
	}

	if sameSlots < len(sizes) {
		t.Errorf("only %d cases with OTP's slot count: the size comparison is not tested", sameSlots)
	}

	// OTP reads its own file and godets's, which must all hold the same
	// objects; it returns those of its own file.
	enc, err = etf.Encode(back)
	if err != nil {
		t.Fatal(err)
	}
	out := r.Eval(t, `
[SpecB] = In,
Objs = fun(F, Kind) ->
    {ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, Kind}, {repair, false}]),
    L = dets:foldl(fun(O, A) -> [O | A] end, [], T),
    ok = dets:close(T),
    lists:sort(L)
end,
Cmp = fun({Kind, Otp, Gos}) ->
    Want = Objs(Otp, Kind),
    term_to_binary({[F || F <- Gos, Objs(F, Kind) =/= Want], Want})
end,
[Cmp(S) || S <- binary_to_term(SpecB)]`, enc)
	for i, c := range cases {
		term, err := etf.Decode(out[i])
		if err != nil {
			t.Fatal(err)
		}
		res, ok := term.(etf.Tuple)
		if !ok || len(res) != 2 {
			t.Fatalf("%s/%d: unexpected reply %v", c.kind, c.n, term)
		}
		if bad, _ := res[0].(etf.List); len(bad) > 0 {
			t.Errorf("%s/%d: OTP reads other objects from %v than from its own compacted file", c.kind, c.n, bad)
		}
		want, _ := res[1].(etf.List)
		ws := make([]string, 0, len(want))
		for _, o := range want {
			ws = append(ws, encString(t, o))
		}
		slices.Sort(ws)
		if len(ws) == 0 {
			t.Fatalf("%s/%d: OTP's compacted file is empty", c.kind, c.n)
		}
		for _, p := range []string{c.gof, c.gorp} {
			if got := reopenClean(t, p); !slices.Equal(got, ws) {
				t.Errorf("%s/%d: godets reads %d objects from %s, OTP's file holds %d", c.kind, c.n, len(got), filepath.Base(p), len(ws))
			}
		}
	}
}

// TestRepairForceNoGrowth: ForceRepair of a file that godets closed
// normally (tail compaction on) must keep the objects, lay the buckets out
// packed, and not make the file more than 0.5% larger when it keeps the
// slot count.
func TestRepairForceNoGrowth(t *testing.T) {
	seed := uint64(testSeed(t))
	for ki, kind := range allKinds {
		for _, n := range []int{500, 4000, 20000} {
			t.Run(fmt.Sprintf("%s/%d", kind, n), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, uint64(ki*100000+n)))
				path := tmpFile(t, "t.dets")
				tab := openT(t, path, Options{Kind: kind})
				m := newModel(kind)
				keys := max(n/3, 1)
				for range n {
					k := r.IntN(keys)
					if r.IntN(100) < 20 {
						deleteBoth(t, tab, m, etf.Int(k))
						continue
					}
					o := paddedObj(k, r.IntN(3), rsPad(r))
					insertBoth(t, tab, m, o)
				}
				if err := tab.Close(); err != nil {
					t.Fatal(err)
				}
				before := rsSize(t, path)
				nextBefore := rsNext(t, path)
				tab = openT(t, path, Options{Repair: ForceRepair})
				mustCheck(t, tab)
				got := sortedContents(t, tab)
				if err := tab.Close(); err != nil {
					t.Fatal(err)
				}
				if want := m.Objects(); !slices.Equal(got, want) {
					t.Fatalf("ForceRepair changed the contents: %d objects, want %d", len(got), len(want))
				}
				after, nextAfter := rsSize(t, path), rsNext(t, path)
				t.Logf("%d bytes -> %d bytes (%+.1f%%), %d -> %d slots", before, after, 100*float64(after-before)/float64(before), nextBefore, nextAfter)
				// Repair sizes the slot count to the keys (repair.go), which
				// changes every bucket; only the same buckets compare. The
				// planned layout (largest class first, one trimmed bucket on
				// top) is a heuristic: in about 1% of seeds the layout that
				// the inserts left ends a little lower (at most +0.27% in
				// 800 runs, e.g. 730841 -> 732798 bytes), so a compaction
				// may add up to 0.5%.
				if nextAfter == nextBefore && after > before+before/200 {
					t.Errorf("ForceRepair grew the file from %d to %d bytes (over 0.5%%)", before, after)
				}
				rsCheckPacked(t, path)
			})
		}
	}
}

// TestRepairPlannedLargeBuckets: a planned layout with buckets from a few
// bytes to above the chunk size (blocks of their own) is a valid tiling,
// packed, and keeps every object.
func TestRepairPlannedLargeBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(testSeed(t)), 11))
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			path := tmpFile(t, "t.dets")
			tab := openT(t, path, Options{Kind: kind})
			m := newModel(kind)
			for i := range 400 {
				pad := rsPad(r)
				switch {
				case i%100 == 7:
					pad = 300<<10 + r.IntN(100<<10) // above the largest chunk
				case i%10 == 3:
					pad = 5000 + r.IntN(60000)
				}
				o := paddedObj(r.IntN(200), r.IntN(2), pad)
				insertBoth(t, tab, m, o)
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			before := rsSize(t, path)
			if _, err := Repair(path, Options{}, nil); err != nil {
				t.Fatal(err)
			}
			after := rsSize(t, path)
			t.Logf("%d bytes -> %d bytes", before, after)
			if got := reopenClean(t, path); !slices.Equal(got, m.Objects()) {
				t.Fatalf("Repair changed the contents: %d objects, want %d", len(got), len(m.Objects()))
			}
			rsCheckPacked(t, path)
			// counters[i] counts the buckets in 2^(i+4)-byte blocks.
			h := decodeHeader(readFileT(t, path)[:headerSize])
			if big := h.counters[counterIndex(chunkFor(before)):]; !slices.ContainsFunc(big, func(n uint32) bool { return n > 0 }) {
				t.Errorf("no block of %d bytes or more: the test does not reach blocks of their own", chunkFor(before))
			}
		})
	}
}

// TestRepairPlannedOTPWrites: OTP writes into files that godets compacted
// with the planned layout (its allocator takes blocks from our free lists,
// which end inside the top bucket's block), then godets reads the result
// with NoRepair: Check is clean and the objects are the model's (interop).
func TestRepairPlannedOTPWrites(t *testing.T) {
	r := otptest.Erl(t)
	rng := rand.New(rand.NewPCG(uint64(testSeed(t)), 11))
	type tcase struct {
		kind Kind
		path string
		m    *mdl.Model
	}
	var cases []tcase
	var spec etf.List
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		path := filepath.Join(t.TempDir(), "planned.dets")
		m := newModel(kind)
		tab := mustOpen(t, path, Options{Kind: kind})
		for i := range 1500 {
			o := paddedObj(rng.IntN(700), rng.IntN(3), rsPad(rng))
			insertBoth(t, tab, m, o)
			if i%7 == 0 {
				k := etf.Int(rng.IntN(700))
				deleteBoth(t, tab, m, k)
			}
		}
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		tab = mustOpen(t, path, Options{Repair: ForceRepair})
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		rsCheckPacked(t, path)
		// OTP's changes: new keys in every size class, overwrites and
		// deletes of old ones.
		var ops etf.List
		for range 600 {
			if rng.IntN(4) == 0 {
				k := etf.Int(rng.IntN(1000))
				ops = append(ops, etf.Tuple{etf.Atom("d"), k})
				m.Delete(k)
				continue
			}
			o := paddedObj(rng.IntN(1000), rng.IntN(3), rsPad(rng))
			ops = append(ops, etf.Tuple{etf.Atom("i"), o})
			m.Insert(o)
		}
		spec = append(spec, etf.Tuple{etf.Atom(kind.String()), etf.Binary(path), ops})
		cases = append(cases, tcase{kind, path, m})
	}
	enc, err := etf.Encode(spec)
	if err != nil {
		t.Fatal(err)
	}
	r.Eval(t, `
[SpecB] = In,
Run = fun({Kind, F, Ops}) ->
    {ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, Kind}, {repair, false}]),
    lists:foreach(fun({i, O}) -> ok = dets:insert(T, O); ({d, K}) -> ok = dets:delete(T, K) end, Ops),
    ok = dets:close(T),
    <<"ok">>
end,
[Run(S) || S <- binary_to_term(SpecB)]`, enc)
	for _, c := range cases {
		if got, want := reopenClean(t, c.path), c.m.Objects(); !slices.Equal(got, want) {
			t.Errorf("%s: godets reads %d objects after OTP's writes, the model has %d", c.kind, len(got), len(want))
		}
	}
}
