package kinds

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/otptest"
)

// erlReadAll is Erlang code that opens the file In[0] read-only, checks its
// type and keypos, and compares its sorted objects with Expected (Erlang
// text). It returns [<<"true">>] on a match, or the objects it found.
func erlReadAll(typ, expected string) string {
	return `[P] = In,
{ok, T} = dets:open_file(kinds_interop, [{file, binary_to_list(P)}, {access, read}, {type, ` + typ + `}]),
Objs = lists:sort(dets:match_object(T, '_')),
Info = {dets:info(T, type), dets:info(T, keypos)},
ok = dets:close(T),
Expected = {{` + typ + `, 1}, lists:sort(` + expected + `)},
case {Info, Objs} of
    Expected -> [<<"true">>];
    Other -> [unicode:characters_to_binary(io_lib:format("~tp", [Other]))]
end`
}

func checkErl(t *testing.T, r *otptest.Runner, path, typ, expected string) {
	t.Helper()
	out := r.Eval(t, erlReadAll(typ, expected), []byte(path))
	if len(out) != 1 || string(out[0]) != "true" {
		t.Fatalf("OTP read %s, want %s", out, expected)
	}
}

// TestOTPReadsGoSet: a Go Set[string, string] holding "package" =>
// "metadata" is read by real OTP as [{<<"package">>,<<"metadata">>}].
func TestOTPReadsGoSet(t *testing.T) {
	r := otptest.Erl(t)
	path := filepath.Join(t.TempDir(), "cache.dets")
	tab, err := dets.Open(path, dets.Options{Kind: dets.Set, KeyPos: 1})
	must(t, err)
	s, err := NewSet(tab, String, String)
	must(t, err)
	must(t, s.Insert("package", "metadata"))
	must(t, tab.Close())
	checkErl(t, r, path, "set", `[{<<"package">>,<<"metadata">>}]`)
}

func TestOTPReadsGoBags(t *testing.T) {
	r := otptest.Erl(t)
	dir := t.TempDir()

	bagPath := filepath.Join(dir, "bag.dets")
	tab, err := dets.Open(bagPath, dets.Options{Kind: dets.Bag, KeyPos: 1})
	must(t, err)
	b, err := NewBag(tab, String, Int)
	must(t, err)
	for _, v := range []int64{1, 2, 1, -300} {
		must(t, b.Insert("k", v))
	}
	must(t, b.Insert("j", 1<<40))
	must(t, tab.Close())
	checkErl(t, r, bagPath, "bag", `[{<<"k">>,1},{<<"k">>,2},{<<"k">>,-300},{<<"j">>,1 bsl 40}]`)

	dupPath := filepath.Join(dir, "dup.dets")
	tab, err = dets.Open(dupPath, dets.Options{Kind: dets.DuplicateBag, KeyPos: 1})
	must(t, err)
	d, err := NewDuplicateBag(tab, String, Float)
	must(t, err)
	for _, v := range []float64{1.5, 1.5, 2.5} {
		must(t, d.Insert("k", v))
	}
	must(t, tab.Close())
	checkErl(t, r, dupPath, "duplicate_bag", `[{<<"k">>,1.5},{<<"k">>,1.5},{<<"k">>,2.5}]`)
}

// erlWrite creates the table In[0] of the given type with the objects in
// objs (Erlang text) and closes it.
func erlWrite(t *testing.T, r *otptest.Runner, path, typ, objs string) {
	t.Helper()
	r.Eval(t, `[P] = In,
{ok, T} = dets:open_file(kinds_interop, [{file, binary_to_list(P)}, {type, `+typ+`}]),
ok = dets:insert(T, `+objs+`),
ok = dets:close(T),
[]`, []byte(path))
}

type pkg struct {
	Name      string
	Downloads int64
	Score     float64
}

var pkgCodec = Tuple(
	Field(String, func(p *pkg) *string { return &p.Name }),
	Field(Int, func(p *pkg) *int64 { return &p.Downloads }),
	Field(Float, func(p *pkg) *float64 { return &p.Score }),
)

// TestGoReadsOTPSet: a set written by Erlang with binary keys and values,
// integers and floats is read through the typed handles.
func TestGoReadsOTPSet(t *testing.T) {
	r := otptest.Erl(t)
	path := filepath.Join(t.TempDir(), "otp.dets")
	erlWrite(t, r, path, "set", `[{<<"gleam">>, {<<"Gleam">>, 123456789012, 4.75}},
	  {<<"slate">>, {<<"Slate">>, -1, -0.5}},
	  {<<"héllo"/utf8>>, {<<"✓"/utf8>>, 0, 1.0e300}}]`)
	tab, err := dets.Open(path, dets.Options{})
	must(t, err)
	defer tab.Close()
	s, err := NewSet(tab, String, pkgCodec)
	must(t, err)
	want := map[string]pkg{
		"gleam": {"Gleam", 123456789012, 4.75},
		"slate": {"Slate", -1, -0.5},
		"héllo": {"✓", 0, 1e300},
	}
	for k, w := range want {
		if got, err := s.Lookup(k); err != nil || got != w {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", k, got, err, w)
		}
	}
	var iterErr error
	n := 0
	for k, v := range s.All(&iterErr) {
		if want[k] != v {
			t.Errorf("All: %q => %+v", k, v)
		}
		n++
	}
	if iterErr != nil || n != len(want) {
		t.Fatalf("All yielded %d, %v", n, iterErr)
	}
	// The same file through a codec of the wrong shape: a decode error.
	wrong, err := NewSet(tab, String, String)
	must(t, err)
	if _, err := wrong.Lookup("gleam"); err == nil {
		t.Fatal("String codec decoded a tuple value")
	}
}

func TestGoReadsOTPCountersAndOTPReadsBack(t *testing.T) {
	r := otptest.Erl(t)
	path := filepath.Join(t.TempDir(), "counters.dets")
	erlWrite(t, r, path, "set", `[{<<"hits">>, 41}, {<<"misses">>, -2}]`)
	tab, err := dets.Open(path, dets.Options{Kind: dets.Set})
	must(t, err)
	s, err := NewSet(tab, String, Int)
	must(t, err)
	if v, err := s.UpdateCounter("hits", 1); err != nil || v != 42 {
		t.Fatalf("UpdateCounter = %d, %v", v, err)
	}
	if v, err := s.Lookup("misses"); err != nil || v != -2 {
		t.Fatalf("Lookup(misses) = %d, %v", v, err)
	}
	must(t, tab.Close())
	checkErl(t, r, path, "set", `[{<<"hits">>,42},{<<"misses">>,-2}]`)
}

func TestGoReadsOTPBags(t *testing.T) {
	r := otptest.Erl(t)
	dir := t.TempDir()
	bagPath := filepath.Join(dir, "bag.dets")
	erlWrite(t, r, bagPath, "bag", `[{<<"k">>, <<"a">>}, {<<"k">>, <<"b">>}, {<<"k">>, <<"a">>}, {<<"j">>, <<>>}]`)
	tab, err := dets.Open(bagPath, dets.Options{})
	must(t, err)
	b, err := NewBag(tab, String, String)
	must(t, err)
	vs, err := b.Lookup("k")
	slices.Sort(vs)
	if err != nil || !slices.Equal(vs, []string{"a", "b"}) {
		t.Fatalf("bag Lookup(k) = %q, %v", vs, err)
	}
	if vs, err := b.Lookup("j"); err != nil || !slices.Equal(vs, []string{""}) {
		t.Fatalf("bag Lookup(j) = %q, %v", vs, err)
	}
	must(t, tab.Close())

	dupPath := filepath.Join(dir, "dup.dets")
	erlWrite(t, r, dupPath, "duplicate_bag", `[{<<"k">>, 7}, {<<"k">>, 7}, {<<"k">>, 1 bsl 62}, {<<"f">>, 2.5}]`)
	tab, err = dets.Open(dupPath, dets.Options{})
	must(t, err)
	defer tab.Close()
	d, err := NewDuplicateBag(tab, String, Int)
	must(t, err)
	ivs, err := d.Lookup("k")
	slices.Sort(ivs)
	if err != nil || !slices.Equal(ivs, []int64{7, 7, 1 << 62}) {
		t.Fatalf("duplicate_bag Lookup(k) = %v, %v", ivs, err)
	}
	// {<<"f">>, 2.5} is a float where the codec expects an integer.
	if _, err := d.Lookup("f"); err == nil {
		t.Fatal("Int codec decoded a float")
	}
	if n, err := d.Size(); err != nil || n != 4 {
		t.Fatalf("Size = %d, %v; want 4", n, err)
	}
}
