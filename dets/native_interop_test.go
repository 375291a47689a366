package dets

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// erlOpenModes opens each file in every access and repair mode and returns
// what dets:open_file answered, closing any table that opened.
const erlOpenModes = `
[begin
   {F, Ty} = binary_to_term(S),
   R = [begin
          Res = dets:open_file(make_ref(), [{file, F}, {type, Ty}, {access, A}, {repair, Rp}]),
          case Res of {ok, T} -> dets:close(T); _ -> ok end,
          {A, Rp, Res}
        end || A <- [read, read_write], Rp <- [false, true, force]],
   term_to_binary(R)
 end || S <- In]`

// TestNativeRefusedByOTP (docs/format-native.md §15.5): real OTP answers
// not_a_dets_file for a native file in every access and repair mode, and
// leaves it byte-identical, because it reads the version word NAT1 before
// anything else.
func TestNativeRefusedByOTP(t *testing.T) {
	r := otptest.Erl(t)
	dir := t.TempDir()
	kinds := []Kind{Set, Bag, DuplicateBag}
	var in [][]byte
	imgs := make([][]byte, len(kinds))
	paths := make([]string, len(kinds))
	for i, kind := range kinds {
		imgs[i] = nativeTestImage(t, kind)
		paths[i] = filepath.Join(dir, kind.String()+".dets")
		must(t, os.WriteFile(paths[i], imgs[i], 0o644))
		b, err := etf.Encode(etf.Tuple{etf.Str(paths[i]), kindAtom(kind)})
		must(t, err)
		in = append(in, b)
	}
	out := r.Eval(t, erlOpenModes, in...)
	if len(out) != len(kinds) {
		t.Fatalf("erl returned %d results for %d files", len(out), len(kinds))
	}
	for i, b := range out {
		v, err := etf.Decode(b)
		must(t, err)
		res, _ := v.(etf.List)
		if len(res) != 6 {
			t.Fatalf("%s: %d results: %v", kinds[i], len(res), v)
		}
		for _, x := range res {
			x := x.(etf.Tuple)
			if !isNotADetsFile(x[2]) {
				t.Errorf("%s: access %v, repair %v: OTP answered %v", kinds[i], x[0], x[1], x[2])
			}
		}
		if !bytes.Equal(readFileT(t, paths[i]), imgs[i]) {
			t.Errorf("%s: OTP changed the native file", kinds[i])
		}
	}
}

// isNotADetsFile matches {error, {not_a_dets_file, _}}.
func isNotADetsFile(v etf.Term) bool {
	e, ok := v.(etf.Tuple)
	if !ok || len(e) != 2 || e[0] != etf.Atom("error") {
		return false
	}
	r, ok := e[1].(etf.Tuple)
	return ok && len(r) == 2 && r[0] == etf.Atom("not_a_dets_file")
}
