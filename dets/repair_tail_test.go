package dets

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// Zeroed ranges that begin in an object's last bytes (issue #16, item 6).
// A set of {K, A, K} integers: zeroing from inside the encoding of the
// last K leaves an object that still decodes, as {K, A, 0} or with the low
// bytes of K cleared. When the zeros run on into the next object's size
// prefix, the bucket's framing breaks right after the damaged object, and
// no rule may then keep it: its end is not confirmed by anything.

// rtFixture is a compacted set of {K, A, K} objects (no stale copies of
// buckets, so each object's encoding occurs once in the file), with where
// each object's encoding lies.
type rtFixture struct {
	img     []byte
	written map[string]bool
	// targets: objects followed in their bucket by another object, as
	// [start, end) of the encoding and the start of its last element.
	targets []rtTarget
}

type rtTarget struct{ start, end, last int }

func rtMakeFixture(t testing.TB, r *rand.Rand, kind Kind, n int) rtFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tail.dets")
	tab, err := Open(path, Options{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	fx := rtFixture{written: map[string]bool{}}
	var encs [][]byte
	keys := 1 << 20
	if kind != Set {
		keys = n / 3 // key groups of about three objects
	}
	for len(encs) < n {
		k := etf.Int(r.IntN(keys))
		if r.IntN(4) == 0 {
			k = etf.Int(r.IntN(256)) // SMALL_INTEGER_EXT: a one-byte value
		}
		o := etf.Tuple{k, etf.Int(r.IntN(10000)), k}
		e := encString(t, o)
		if fx.written[e] || kind == Set && func() bool { // one object per key
			objs, err := tab.Lookup(k)
			return err != nil || len(objs) > 0
		}() {
			continue
		}
		if err := tab.Insert(o); err != nil {
			t.Fatal(err)
		}
		fx.written[e] = true
		encs = append(encs, []byte(e))
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path, Options{}, nil); err != nil { // compacts
		t.Fatal(err)
	}
	fx.img = readFileT(t, path)
	starts := map[int]bool{}
	var spans []rtTarget
	for _, e := range encs {
		if bytes.Count(fx.img, e) != 1 {
			continue
		}
		at := bytes.Index(fx.img, e)
		starts[at] = true
		k, _ := etf.Decode(e)
		kb := encString(t, k.(etf.Tuple)[0])
		spans = append(spans, rtTarget{at, at + len(e), at + len(e) - (len(kb) - 1)})
	}
	for _, s := range spans {
		// The next object's <<ObjSz:32>> follows, then its encoding; in a
		// bag, the next key group's <<Size:32>> may come first.
		for _, gap := range []int{4, 8} {
			if gap == 8 && kind == Set {
				break
			}
			at := s.end + gap
			if starts[at] && int(be.Uint32(fx.img[at-4:])) == rtEncLen(fx.img, at)+4 {
				fx.targets = append(fx.targets, s)
				break
			}
		}
	}
	slices.SortFunc(fx.targets, func(a, b rtTarget) int { return a.start - b.start })
	return fx
}

// rtEncLen returns the length of the encoding that starts at at, which
// is one of the fixture's objects.
func rtEncLen(img []byte, at int) int {
	for n := minObjSize - 4; at+n <= len(img); n++ {
		if etf.Validate(img[at:at+n]) == nil {
			return n
		}
	}
	return -1
}

// rtDamage zeroes from a random byte of the target's last element (its
// tag included) over at least the next object's size prefix and up to a
// page.
func rtDamage(r *rand.Rand, fx rtFixture, tg rtTarget) (img []byte, from, to int) {
	from = tg.last + r.IntN(tg.end-tg.last)
	to = min(tg.end+4+r.IntN(4096-(tg.end+4-from)+1), len(fx.img))
	img = slices.Clone(fx.img)
	clear(img[from:to])
	return img, from, to
}

// rtRepairMem repairs img in memory and returns the sorted objects of the
// result, those of them that were never written, and the repair's stats.
func rtRepairMem(t *testing.T, fx rtFixture, img []byte) (got, foreign []string, st RepairStats) {
	t.Helper()
	mfs := newMemFS()
	mfs.put("t.dets", img)
	st, err := Repair("t.dets", Options{FS: mfs}, nil)
	if err != nil {
		t.Fatalf("repair: %v", err)
	}
	got = reopenCleanInMemFS(t, mfs, "t.dets", "tail damage")
	for _, e := range got {
		if !fx.written[e] {
			foreign = append(foreign, e)
		}
	}
	return got, foreign, st
}

func rtShow(t testing.TB, encs []string) string {
	var out []string
	for _, e := range encs {
		o, err := etf.Decode([]byte(e))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(o))
	}
	return fmt.Sprint(out)
}

// TestRepairTailDamageSweep zeroes, at seeded random targets of each kind,
// from a byte of an object's last element onwards, and repairs: every
// object the repair keeps must be one that was written.
func TestRepairTailDamageSweep(t *testing.T) {
	seed := seedU64(t)
	for ki, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 16+uint64(ki)))
			fx := rtMakeFixture(t, r, kind, 3000)
			cases := 400
			if testing.Short() {
				cases = 100
			}
			t.Logf("%d objects, %d followed by another in their bucket", len(fx.written), len(fx.targets))
			if len(fx.targets) < 100 {
				t.Fatalf("only %d targets", len(fx.targets))
			}
			decodes := 0
			for i := range cases {
				tg := fx.targets[r.IntN(len(fx.targets))]
				img, from, to := rtDamage(r, fx, tg)
				decoded := etf.Validate(img[tg.start:tg.end]) == nil && !bytes.Equal(img[tg.start:tg.end], fx.img[tg.start:tg.end])
				if decoded {
					decodes++ // the damaged object still decodes: the case of the issue
				}
				_, foreign, st := rtRepairMem(t, fx, img)
				if len(foreign) > 0 {
					t.Fatalf("case %d: zeros at [%d, %d) in the object at [%d, %d): the repair kept %s, never written (stats %+v)",
						i, from, to, tg.start, tg.end, rtShow(t, foreign), st)
				}
				if decoded && st.ObjectsDropped == 0 {
					t.Fatalf("case %d: zeros at [%d, %d): the damaged object at [%d, %d) is not counted as dropped (stats %+v)",
						i, from, to, tg.start, tg.end, st)
				}
			}
			t.Logf("%d cases, in %d of them the damaged object still decoded", cases, decodes)
			if decodes < cases/4 {
				t.Fatalf("only %d of %d cases left a damaged object that decodes", decodes, cases)
			}
		})
	}
}

// TestRepairTailDamageAgainstOTP runs a few of the sweep's cases through
// OTP's {repair, force} too: neither may keep an object that was never
// written; the counts of objects kept are logged.
func TestRepairTailDamageAgainstOTP(t *testing.T) {
	erl := otptest.Erl(t)
	r := rand.New(rand.NewPCG(seedU64(t), 17))
	fx := rtMakeFixture(t, r, Set, 2000)
	dir := t.TempDir()
	var files [][]byte
	var imgs [][]byte
	for i := 0; len(imgs) < 8 && i < 1000; i++ {
		tg := fx.targets[r.IntN(len(fx.targets))]
		img, _, _ := rtDamage(r, fx, tg)
		if etf.Validate(img[tg.start:tg.end]) != nil || bytes.Equal(img[tg.start:tg.end], fx.img[tg.start:tg.end]) {
			continue // only cases where the damaged object still decodes
		}
		path := filepath.Join(dir, fmt.Sprintf("otp-%d.dets", len(imgs)))
		writeFileT(t, path, img)
		files = append(files, []byte(path))
		imgs = append(imgs, img)
	}
	// OTP's own repair can crash on such bytes (a case_clause in
	// dets_v9:fsck_objs): that image then has no OTP count, and only the
	// godets side is checked.
	out := erl.Eval(t, `
[term_to_binary(case catch begin
    {ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {repair, force}]),
    Objs = dets:foldl(fun(O, Acc) -> [O | Acc] end, [], T),
    ok = dets:close(T),
    {ok, Objs}
end of {ok, L} -> {ok, L}; _ -> otp_repair_crashed end) || F <- In]`, files...)
	crashed := 0
	for i, img := range imgs {
		if term, err := etf.Decode(out[i]); err == nil && term == etf.Atom("otp_repair_crashed") {
			crashed++
			if _, foreign, _ := rtRepairMem(t, fx, img); len(foreign) > 0 {
				t.Errorf("case %d: godets kept %s, never written", i, rtShow(t, foreign))
			}
			t.Logf("case %d: OTP's repair crashed on the image", i)
			continue
		}
		otpObjs := decodeOTPObjects(t, out[i])
		var otpForeign []string
		for _, e := range otpObjs {
			if !fx.written[e] {
				otpForeign = append(otpForeign, e)
			}
		}
		got, foreign, _ := rtRepairMem(t, fx, img)
		_, otpOnly := multisetDiff(got, otpObjs)
		t.Logf("case %d: OTP keeps %d objects, godets %d (of %d); %d kept by OTP only %s",
			i, len(otpObjs), len(got), len(fx.written), len(otpOnly), rtShow(t, otpOnly))
		if len(otpForeign) > 0 {
			t.Errorf("case %d: OTP kept %s, never written", i, rtShow(t, otpForeign))
		}
		if len(foreign) > 0 {
			t.Errorf("case %d: godets kept %s, never written", i, rtShow(t, foreign))
		}
	}
	if crashed == len(imgs) {
		t.Fatalf("OTP's repair crashed on all %d images: nothing was compared", crashed)
	}
}
