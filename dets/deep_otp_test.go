package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// Objects nested deeper than etf.MaxDepth, as OTP writes them: sound, kept
// by every path that copies objects, readable here as bytes, and never
// taken for damage (DeepTermError).

// erlDeepDefs defines, in erl_eval, the deep objects of these tests:
// a list and a tuple nested 20000 deep under binary keys.
const erlDeepDefs = `
Deep = fun Deep(0, A) -> A; Deep(N, A) -> Deep(N - 1, [A]) end,
DeepT = fun DeepT(0, A) -> A; DeepT(N, A) -> DeepT(N - 1, {A}) end,
DeepObjs = [{<<"deep">>, Deep(20000, x)}, {<<"deept">>, DeepT(20000, y)}],
Plain = [{I, 2 * I} || I <- lists:seq(1, 100)],
`

// erlWriteDeep has erl write a table of kind at path holding the plain
// and the deep objects (and, with deepKey, one whose key is 15000 deep),
// and returns the deep objects' term_to_binary.
func erlWriteDeep(t *testing.T, r *otptest.Runner, path string, kind Kind, deepKey bool) [][]byte {
	t.Helper()
	flag := []byte{0}
	if deepKey {
		flag[0] = 1
	}
	return r.Eval(t, erlDeepDefs+`
[F, KindB, <<DK>>] = In,
Extra = case DK of 1 -> [{Deep(15000, k), 1}]; 0 -> [] end,
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, binary_to_atom(KindB, latin1)}]),
ok = dets:insert(T, Plain ++ DeepObjs ++ Extra),
ok = dets:close(T),
[term_to_binary(O) || O <- DeepObjs]`, []byte(path), []byte(kind.String()), flag)
}

// erlReadsDeep has erl open path with {repair, false} and checks that it
// holds exactly the plain and deep objects and the extra ones given.
func erlReadsDeep(t *testing.T, r *otptest.Runner, path string, extra int) {
	t.Helper()
	out := r.Eval(t, erlDeepDefs+`
[F, <<Extra>>] = In,
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {repair, false}, {type, bag}]),
All = lists:sort(dets:match_object(T, '_')),
Want = lists:sort(Plain ++ DeepObjs ++ [{<<"new">>, I} || I <- lists:seq(1, Extra)]),
ok = dets:close(T),
[atom_to_binary(All =:= Want, latin1)]`, []byte(path), []byte{byte(extra)})
	if string(out[0]) != "true" {
		t.Fatalf("erl: %s does not hold the objects it should", path)
	}
}

func TestDeepTermsFromOTP(t *testing.T) {
	r := otptest.Erl(t)
	for _, kind := range []Kind{Set, Bag} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "otp.dets")
			encs := erlWriteDeep(t, r, path, kind, false)
			keys := []etf.Term{etf.Binary("deep"), etf.Binary("deept")}

			tab := openT(t, path, Options{Kind: kind})
			rep, err := tab.CheckReport()
			if err != nil || rep.Err() != nil {
				t.Fatalf("CheckReport: %v, %v", err, rep.Err())
			}
			if rep.DeepCount != 2 || rep.Objects != 102 {
				t.Fatalf("CheckReport: %d deep objects of %d, want 2 of 102", rep.DeepCount, rep.Objects)
			}
			for i, k := range keys {
				_, err := tab.Lookup(k)
				var de *DeepTermError
				if !errors.As(err, &de) || !errors.Is(err, etf.ErrTooDeep) || errors.Is(err, ErrCorrupt) || de.Key {
					t.Fatalf("Lookup(%v): %v; want a *DeepTermError, not corruption", k, err)
				}
				raw, err := lookupRaw(tab, encodeKey(t, k))
				if err != nil || len(raw) != 1 || !bytes.Equal(raw[0], encs[i]) {
					t.Fatalf("RawLookup(%v): %d objects, %v; want erl's bytes", k, len(raw), err)
				}
			}
			if objs, err := tab.Lookup(etf.Int(7)); err != nil || len(objs) != 1 {
				t.Fatalf("Lookup(7): %v, %v", objs, err)
			}
			// Writes beside them rewrite their buckets and keep them.
			for i := range 3 {
				if err := tab.Insert(tup(etf.Binary("new"), etf.Int(i+1))); err != nil {
					t.Fatal(err)
				}
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			extra := 3
			if kind == Set {
				extra = 1 // a set keeps the last {<<"new">>, 3}
			}
			erlReadsDeepSet(t, r, path, kind, extra)

			// A forced repair keeps them.
			rep2 := filepath.Join(dir, "repaired.dets")
			copyFileT(t, path, rep2)
			openT(t, rep2, Options{Repair: ForceRepair}).Close()
			erlReadsDeepSet(t, r, rep2, kind, extra)

			// So do conversions both ways.
			nat, back := filepath.Join(dir, "n.dets"), filepath.Join(dir, "back.dets")
			if _, err := Convert(path, nat, Native, ConvertOptions{}); err != nil {
				t.Fatalf("Convert to native: %v", err)
			}
			ntab := openT(t, nat, Options{})
			if nrep, err := ntab.CheckReport(); err != nil || nrep.Err() != nil || nrep.DeepCount != 2 {
				t.Fatalf("native CheckReport: %v, %v, %d deep objects; want 2", err, nrep.Err(), nrep.DeepCount)
			}
			for i, k := range keys {
				if _, err := ntab.Lookup(k); !errors.Is(err, etf.ErrTooDeep) || errors.Is(err, ErrCorrupt) {
					t.Fatalf("native Lookup(%v): %v", k, err)
				}
				raw, err := lookupRaw(ntab, encodeKey(t, k))
				if err != nil || len(raw) != 1 || !bytes.Equal(raw[0], encs[i]) {
					t.Fatalf("native RawLookup(%v): %d objects, %v", k, len(raw), err)
				}
			}
			ntab.Close()
			// A native repair keeps them too.
			nrep := filepath.Join(dir, "nrepaired.dets")
			copyFileT(t, nat, nrep)
			rtab := openT(t, nrep, Options{Repair: ForceRepair})
			for i, k := range keys {
				if raw, err := lookupRaw(rtab, encodeKey(t, k)); err != nil || len(raw) != 1 || !bytes.Equal(raw[0], encs[i]) {
					t.Fatalf("repaired native LookupRaw(%v): %d objects, %v", k, len(raw), err)
				}
			}
			rtab.Close()
			if _, err := Convert(nat, back, OTP9, ConvertOptions{}); err != nil {
				t.Fatalf("Convert back to otp9: %v", err)
			}
			erlReadsDeepSet(t, r, back, kind, extra)
		})
	}
}

// erlReadsDeepSet is erlReadsDeep for the objects a kind keeps of the
// inserts {<<"new">>, 1..3}: a set only the last.
func erlReadsDeepSet(t *testing.T, r *otptest.Runner, path string, kind Kind, extra int) {
	t.Helper()
	if kind == Set {
		out := r.Eval(t, `
[F] = In,
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {repair, false}]),
L = dets:lookup(T, <<"new">>),
ok = dets:close(T),
[term_to_binary(L)]`, []byte(path))
		if got, err := etf.Decode(out[0]); err != nil || etf.Format(got) != `[{<<"new">>,3}]` {
			t.Fatalf("erl: %s holds %v for <<\"new\">> (%v)", path, got, err)
		}
		// The rest, as erlReadsDeep counts it, without the inserts.
		erlReadsDeepExcept(t, r, path)
		return
	}
	erlReadsDeep(t, r, path, extra)
}

// erlReadsDeepExcept checks every object but those under <<"new">>.
func erlReadsDeepExcept(t *testing.T, r *otptest.Runner, path string) {
	t.Helper()
	out := r.Eval(t, erlDeepDefs+`
[F] = In,
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {repair, false}]),
All = lists:sort([O || O <- dets:match_object(T, '_'), element(1, O) =/= <<"new">>]),
ok = dets:close(T),
[atom_to_binary(All =:= lists:sort(Plain ++ DeepObjs), latin1)]`, []byte(path))
	if string(out[0]) != "true" {
		t.Fatalf("erl: %s does not hold the objects it should", path)
	}
}

// TestDeepKeyRepairRefused: a repair that meets an object whose key is too
// deep to hash stops with a *DeepTermError and leaves the file as it was,
// where dropping the object would lose data; Check calls the file sound.
func TestDeepKeyRepairRefused(t *testing.T) {
	r := otptest.Erl(t)
	path := tmpFile(t, "otp.dets")
	erlWriteDeep(t, r, path, Set, true)
	tab := openT(t, path, Options{})
	if rep, err := tab.CheckReport(); err != nil || rep.Err() != nil || rep.DeepCount != 3 {
		t.Fatalf("CheckReport: %v, %v, %d deep; want sound, 3 deep", err, rep.Err(), rep.DeepCount)
	}
	tab.Close()
	before := fileHash(t, path)
	_, err := Open(path, Options{Repair: ForceRepair})
	var de *DeepTermError
	if !errors.As(err, &de) || !de.Key || !errors.Is(err, etf.ErrTooDeep) {
		t.Fatalf("ForceRepair: %v; want a *DeepTermError for the key", err)
	}
	if fileHash(t, path) != before {
		t.Fatalf("the refused repair changed the file")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("the refused repair left files behind: %v", ents)
	}
}

func encodeKey(t *testing.T, k etf.Term) []byte {
	t.Helper()
	b, err := etf.Encode(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lookupRaw collects LookupRaw's objects.
func lookupRaw(tab *Table, key []byte) ([][]byte, error) {
	var out [][]byte
	err := tab.LookupRaw(key, func(obj []byte) error {
		out = append(out, bytes.Clone(obj))
		return nil
	})
	return out, err
}

// TestZeroSignKeysLikeOTP: OTP 25 writes a bag whose key 0.0 objects are
// inserted as 0.0, -0.0 and 0.0; godets reads them in OTP's order from
// the file, and from its native conversion, and a delete of -0.0 empties
// the key in both, as OTP's does (TestZeroSignKeysOneGroup compares the
// formats with each other).
func TestZeroSignKeysLikeOTP(t *testing.T) {
	r := otptest.Erl(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "otp.dets")
	out := r.Eval(t, `
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(hd(In))}, {type, bag}]),
ok = dets:insert(T, {0.0, a}), ok = dets:insert(T, {-0.0, b}), ok = dets:insert(T, {0.0, c}),
L = dets:lookup(T, -0.0),
ok = dets:close(T),
[term_to_binary(L)]`, []byte(path))
	want, err := etf.Decode(out[0])
	must(t, err)
	if len(want.(etf.List)) != 3 {
		t.Fatalf("OTP looks up %v", want)
	}
	conv := filepath.Join(dir, "native.dets")
	if _, err := Convert(path, conv, Native, ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, conv} {
		tab := openT(t, p, Options{})
		got, err := tab.Lookup(etf.Float(0))
		must(t, err)
		if fmt.Sprint(etf.List(got)) != fmt.Sprint(want) {
			t.Fatalf("%s: lookup %v, OTP %v", p, got, want)
		}
		must(t, tab.Delete(etf.Float(math.Copysign(0, -1))))
		if left, err := tab.Lookup(etf.Float(0)); err != nil || len(left) != 0 {
			t.Fatalf("%s: after the delete of -0.0: %v, %v", p, left, err)
		}
	}
}
