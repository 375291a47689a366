package dets

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// otpWriter runs in erl: open a table, then insert, delete and sync in a
// seeded loop until killed. auto_save is off, so the file is dirty from the
// first write until a sync, and the write cache (3 s or 14000 bytes) keeps
// some of the latest updates in memory: kill points land before, during and
// after flushes and syncs.
const otpWriter = `
[FileB, SeedB, KindB] = In,
Seed = binary_to_integer(SeedB),
{ok, T} = dets:open_file(t, [{file, binary_to_list(FileB)}, {type, binary_to_atom(KindB, latin1)}, {auto_save, infinity}]),
rand:seed(exsss, {Seed, Seed + 1, Seed + 2}),
Loop = fun L(I) ->
    K = rand:uniform(400),
    case rand:uniform(100) of
        X when X =< 65 -> ok = dets:insert(T, {K, I rem 4, binary:copy(<<I:8>>, rand:uniform(3) * rand:uniform(150))});
        X when X =< 80 -> ok = dets:delete(T, K);
        X when X =< 83 -> ok = dets:sync(T);
        X when X =< 90 -> ok = dets:delete_object(T, {K, I rem 4, <<>>});
        _ -> ok = dets:insert(T, [{K, I rem 3, <<>>}, {K + 1, 0, <<"x">>}, {K, I rem 3, <<>>}])
    end,
    case I rem 50 of 0 -> timer:sleep(2); _ -> ok end,
    L(I + 1)
end,
Loop(0)
`

// otpReadBack runs in erl over pairs [A, B, ...]: it opens A with the
// default {repair,true} (OTP repairs it) and B, already repaired by godets,
// with {repair,false}, and returns each table's objects (or the error).
const otpReadBack = `
[KindB | Files] = In,
Kind = binary_to_atom(KindB, latin1),
Objs = fun(F, Opts) ->
    case dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, Kind} | Opts]) of
        {ok, T} ->
            L = dets:foldl(fun(O, Acc) -> [O | Acc] end, [], T),
            ok = dets:close(T),
            term_to_binary({ok, L});
        E -> term_to_binary(E)
    end
end,
Pair = fun P([A, B | Rest]) -> [Objs(A, []), Objs(B, [{repair, false}]) | P(Rest)]; P([]) -> [] end,
Pair(Files)
`

// otpOpenResult runs in erl: it opens each file with the default repair
// and returns the result of dets:open_file/2.
const otpOpenResult = `
[term_to_binary(case dets:open_file(make_ref(), [{file, binary_to_list(F)}]) of
    {ok, T} -> dets:close(T), {ok, opened};
    E -> E
end) || F <- In]
`

// TestRepairAgainstOTPKill makes dirty files with real OTP killed by
// SIGKILL at seeded random moments, repairs each with OTP (on a copy) and
// with godets, and compares. Both must hold the same multiset of objects,
// or godets strictly more (every such case is logged with the extra
// objects). OTP must then open the godets-repaired file with
// {repair,false} and find exactly godets's objects.
func TestRepairAgainstOTPKill(t *testing.T) {
	r0 := otptest.Erl(t)
	seed := seedU64(t)
	points := 30
	if testing.Short() {
		// Not fewer: a kill right after a sync leaves a clean file, and
		// with 4 points a whole batch could be clean.
		points = 12
	}
	if s := os.Getenv("GODETS_OTP_KILLS"); s != "" {
		points, _ = strconv.Atoi(s)
	}
	for ki, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(ki)))
			// A kill soon after a sync leaves a clean file, so kill
			// points are drawn in batches until half of the requested
			// number left a dirty one (or the fourth batch is done): the
			// test must test repair whatever the draw.
			var ps []otpKillPoint
			for batch := 0; batch == 0 || batch < 4 && otpDirtyFiles(ps) < points/2; batch++ {
				next := make([]otpKillPoint, points)
				for i := range next {
					next[i] = otpKillPoint{dir: t.TempDir(), delay: time.Duration(r.IntN(3000)) * time.Millisecond, seed: r.IntN(1 << 30)}
				}
				if err := otpKill(r0, kind, next); err != nil {
					t.Fatal(err)
				}
				ps = append(ps, next...)
			}
			var in, refused [][]byte
			var used []otpKillPoint
			dirty := otpDirtyFiles(ps)
			for i, p := range ps {
				src := filepath.Join(p.dir, "t.dets")
				img, err := os.ReadFile(src)
				if err != nil {
					t.Logf("kill point %d (%v): no file yet", i, p.delay)
					continue
				}
				a, b := filepath.Join(p.dir, "otp.dets"), filepath.Join(p.dir, "go.dets")
				writeFileT(t, a, img)
				writeFileT(t, b, img)
				tab, err := Open(b, Options{Repair: AutoRepair})
				if errors.Is(err, ErrNotDETS) || errors.Is(err, ErrUnsupportedVersion) {
					// Killed before the header was complete: godets must
					// leave the file alone, and OTP must refuse it too.
					if got, _ := os.ReadFile(b); !bytes.Equal(got, img) {
						t.Fatalf("kill point %d: a refused file changed", i)
					}
					refused = append(refused, []byte(a))
					continue
				}
				if err != nil {
					t.Fatalf("kill point %d (seed %d, %v): godets repair: %v", i, p.seed, p.delay, err)
				}
				if err := tab.Check(); err != nil {
					t.Fatalf("kill point %d: Check after repair: %v", i, err)
				}
				tab.Close()
				noTempsIn(t, p.dir)
				in = append(in, []byte(a), []byte(b))
				used = append(used, p)
			}
			if len(refused) > 0 {
				res := r0.Eval(t, otpOpenResult, refused...)
				for i, b := range res {
					term, err := etf.Decode(b)
					if err != nil {
						t.Fatal(err)
					}
					if tu, ok := term.(etf.Tuple); !ok || len(tu) != 2 || tu[0] != etf.Atom("error") {
						t.Fatalf("godets refused %s, but OTP opened it: %v", refused[i], term)
					}
				}
			}
			if len(used) < points*2/3 {
				t.Fatalf("only %d of %d kill points produced a file", len(used), points)
			}
			out := r0.Eval(t, otpReadBack, append([][]byte{[]byte(kindName(kind))}, in...)...)
			strictlyMore := 0
			for i, p := range used {
				otpObjs := decodeOTPObjects(t, out[2*i])
				otpOnGo := decodeOTPObjects(t, out[2*i+1])
				goObjs := reopenClean(t, filepath.Join(p.dir, "go.dets"))
				if !slices.Equal(otpOnGo, goObjs) {
					t.Fatalf("kill point %d (seed %d): OTP reads %d objects from the godets-repaired file, godets %d", i, p.seed, len(otpOnGo), len(goObjs))
				}
				if slices.Equal(otpObjs, goObjs) {
					continue
				}
				extra, missing := multisetDiff(goObjs, otpObjs)
				if len(missing) > 0 {
					t.Fatalf("kill point %d (seed %d, %v): godets lacks %d objects that OTP's repair kept (godets %d, OTP %d)",
						i, p.seed, p.delay, len(missing), len(goObjs), len(otpObjs))
				}
				strictlyMore++
				t.Logf("kill point %d: godets recovered %d objects more than OTP (%d vs %d): %d objects of buckets OTP drops whole",
					i, len(extra), len(goObjs), len(otpObjs), len(extra))
			}
			t.Logf("%s: %d kill points compared (%d left dirty), %d where godets recovered more", kind, len(used), dirty, strictlyMore)
			if dirty < points/2 {
				t.Errorf("only %d of %d kill points left a dirty file; the test is not testing repair", dirty, len(used))
			}
		})
	}
}

// otpKillPoint is one run of otpWriter: in dir, killed delay after the
// file appeared.
type otpKillPoint struct {
	dir   string
	delay time.Duration
	seed  int
}

// otpKill runs otpWriter for each point, two at a time (the machine has
// two cores), and kills each at its delay.
func otpKill(r0 *otptest.Runner, kind Kind, ps []otpKillPoint) error {
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	errs := make([]error, len(ps))
	for i, p := range ps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			file := filepath.Join(p.dir, "t.dets")
			cmd, err := r0.Start(p.dir, otpWriter, []byte(file), []byte(strconv.Itoa(p.seed)), []byte(kindName(kind)))
			if err != nil {
				errs[i] = err
				return
			}
			// The delay counts from the file's creation, so that a slow
			// erl start-up does not eat the kill window.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				if _, err := os.Stat(file); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(p.delay)
			cmd.Process.Kill()
			cmd.Wait()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// otpDirtyFiles counts the points whose file has a complete header that
// says it was not closed properly.
func otpDirtyFiles(ps []otpKillPoint) int {
	n := 0
	var hdr [headerSize]byte
	for _, p := range ps {
		f, err := os.Open(filepath.Join(p.dir, "t.dets"))
		if err != nil {
			continue
		}
		_, err = f.ReadAt(hdr[:], 0)
		f.Close()
		if err == nil && be.Uint32(hdr[offClosed:]) == notProperlyClosed {
			n++
		}
	}
	return n
}

func kindName(k Kind) string { return k.String() }

// decodeOTPObjects decodes one otpReadBack result into sorted canonical
// encodings.
func decodeOTPObjects(t *testing.T, b []byte) []string {
	t.Helper()
	term, err := etf.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	tu, ok := term.(etf.Tuple)
	if !ok || len(tu) != 2 || tu[0] != etf.Atom("ok") {
		t.Fatalf("OTP could not open a file: %v", term)
	}
	l, _ := tu[1].(etf.List)
	out := make([]string, 0, len(l))
	for _, o := range l {
		out = append(out, encString(t, o))
	}
	slices.Sort(out)
	return out
}

// multisetDiff returns a - b and b - a for sorted multisets.
func multisetDiff(a, b []string) (aOnly, bOnly []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			aOnly = append(aOnly, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			bOnly = append(bOnly, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return
}
