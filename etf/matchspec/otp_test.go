package matchspec

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/msgen"
	"github.com/godets/godets/internal/otptest"
	"github.com/godets/godets/internal/testutil"
)

// The old matchspec seed flag and variable still replay (the kit's are
// -seed and GODETS_SEED).
var _ = testutil.SeedAlias("matchspec.seed", "MATCHSPEC_SEED")

// otpRunner compiles every spec with ets:match_spec_compile/1 and runs it
// on every object with ets:match_spec_run/2 (what dets:select/2 uses), in
// one erl: badarg for a refused spec, else one [] or [Result] per object.
const otpRunner = `
[SB, OB] = In,
Specs = binary_to_term(SB),
Objs = binary_to_term(OB),
Run = fun(S) ->
    try ets:match_spec_compile(S) of
        C -> [try ets:match_spec_run([O], C) catch Cl:R -> {raised, Cl, R} end || O <- Objs]
    catch error:badarg -> badarg
    end
end,
[term_to_binary([Run(S) || S <- Specs])]
`

// TestDifferentialOTP compiles and runs random specs (internal/msgen's
// Spec and, for denser use of the functions, ExprSpec) in Go
// and in OTP 25 and requires the same outcome for every spec and object:
// OTP refuses a spec iff Compile does, and each run's result is the same
// term, encoded byte for byte (so -0.0 and 0.0 differ). Seeded.
func TestDifferentialOTP(t *testing.T) {
	erl := otptest.Erl(t)
	seed := uint64(testutil.Seed(t))
	g := msgen.New(seed)
	nSpecs, nObjs := 4000, 24
	if testing.Short() {
		nSpecs = 500
	}
	objs := g.Objects(nObjs)
	for i := 0; i < 4; i++ {
		objs = append(objs, g.Term(3)) // not tuples: heads like '_' and '$1' still match
	}
	specs := make(etf.List, nSpecs)
	for i := range specs {
		if i%2 == 0 {
			specs[i] = g.Spec(objs[:nObjs])
		} else {
			specs[i] = g.ExprSpec(objs[:nObjs])
		}
	}
	ob, err := etf.Encode(etf.List(objs))
	if err != nil {
		t.Fatal(err)
	}
	results, answered := otpResults(t, specs, func(sb []byte) ([][]byte, error) { return erl.EvalErr(otpRunner, sb, ob) })

	var compiled, refused, matched, exits, failures int
	for i, st := range specs {
		if !answered[i] {
			continue
		}
		s, err := Compile(st)
		want := results[i]
		if a, ok := want.(etf.Atom); ok && a == "badarg" {
			refused++
			if err == nil {
				failures++
				t.Errorf("spec %d %s: OTP refuses it, Compile accepts it", i, etf.Format(st))
			}
			continue
		}
		if err != nil {
			failures++
			t.Errorf("spec %d %s: OTP compiles it, Compile says %v", i, etf.Format(st), err)
			continue
		}
		compiled++
		for j, o := range objs {
			w := want.(etf.List)[j]
			got, ok := s.Run(o)
			var mine etf.Term = etf.List{}
			if ok {
				mine = etf.List{got}
				matched++
				if a, isAtom := got.(etf.Atom); isAtom && a == "EXIT" {
					exits++
				}
			}
			if !sameEncoding(mine, w) {
				failures++
				t.Errorf("spec %d %s on %s: got %s, OTP %s", i, etf.Format(st), etf.Format(o), etf.Format(mine), etf.Format(w))
			}
			if failures > 20 {
				t.Fatalf("too many disagreements (seed %d)", seed)
			}
		}
	}
	t.Logf("%d specs: %d compiled, %d refused; %d runs matched, %d gave 'EXIT'", nSpecs, compiled, refused, matched, exits)
	// The generator must keep hitting every outcome, or this test
	// proves little.
	if refused == 0 || matched < compiled || exits == 0 {
		t.Errorf("weak coverage: %d refused, %d matched, %d 'EXIT' (seed %d)", refused, matched, exits, seed)
	}
	if failures > 0 {
		t.Errorf("%d disagreements with OTP (seed %d)", failures, seed)
	}
}

// otpResults runs specs through eval (erl with the encoded list of specs
// in a batch) and returns OTP's result for each spec, with the batch split
// where OTP 25's VM crashes (otptest.EvalSplit). More than 1% of specs
// unanswered fails the test.
func otpResults(t *testing.T, specs etf.List, eval func(specs []byte) ([][]byte, error)) ([]etf.Term, []bool) {
	t.Helper()
	results, answered, crashed := otptest.EvalSplit(t, len(specs), func(lo, hi int) ([]etf.Term, error) {
		sb, err := etf.Encode(specs[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		out, err := eval(sb)
		if err != nil {
			return nil, err
		}
		res, err := etf.Decode(out[0])
		if err != nil {
			t.Fatal(err)
		}
		l, ok := res.(etf.List)
		if !ok {
			t.Fatalf("erl answered %s", etf.Format(res))
		}
		return l, nil
	})
	if crashed > len(specs)/100 {
		t.Fatalf("erl crashed on %d specs of %d", crashed, len(specs))
	}
	return results, answered
}

func sameEncoding(a, b etf.Term) bool {
	x, err1 := etf.Encode(a)
	y, err2 := etf.Encode(b)
	return errors.Join(err1, err2) == nil && bytes.Equal(x, y)
}

// detsSelect runs every spec with dets:select/2 on one duplicate_bag
// holding all objects: badarg for a refused spec, else the result list.
const detsSelect = `
[SB, OB, PB] = In,
Specs = binary_to_term(SB),
{ok, T} = dets:open_file(msdiff, [{file, binary_to_list(PB)}, {type, duplicate_bag}]),
ok = dets:insert(T, binary_to_term(OB)),
R = [try dets:select(T, S) catch error:badarg -> badarg end || S <- Specs],
ok = dets:close(T),
[term_to_binary(R)]
`

// TestBoundKeysOTP: BoundKeys decides lookups as dets does. For random
// specs, OTP's dets:select/2 on a table must return what Go gets by
// looking up BoundKeys (=:= on the key) or scanning, and running the spec:
// the same multiset. Where dets's choice loses objects (keys 1 and 1.0),
// so must ours. Seeded as TestDifferentialOTP.
func TestBoundKeysOTP(t *testing.T) {
	erl := otptest.Erl(t)
	seed := uint64(testutil.Seed(t))
	g := msgen.New(seed)
	g.InvalidRate = 0.02
	objs := g.Objects(300)
	specs := make(etf.List, 800)
	for i := range specs {
		specs[i] = g.Spec(objs)
	}
	ob, _ := etf.Encode(etf.List(objs))
	dir, runs := t.TempDir(), 0
	results, answered := otpResults(t, specs, func(sb []byte) ([][]byte, error) {
		runs++ // a fresh table each run: a crashed one may hold objects
		return erl.EvalErr(detsSelect, sb, ob, []byte(fmt.Sprintf("%s/ms%d.dets", dir, runs)))
	})
	var bound, failures int
	for i, st := range specs {
		if !answered[i] {
			continue
		}
		want := results[i]
		s, err := Compile(st)
		if a, ok := want.(etf.Atom); ok && a == "badarg" {
			if err == nil {
				failures++
				t.Errorf("spec %d %s: dets refuses it, Compile accepts it", i, etf.Format(st))
			}
			continue
		}
		if err != nil {
			failures++
			t.Errorf("spec %d %s: dets runs it, Compile says %v", i, etf.Format(st), err)
			continue
		}
		keys, isBound := s.BoundKeys(1)
		if isBound {
			bound++
		}
		var got etf.List
		for _, o := range objs {
			if isBound && !slices.ContainsFunc(keys, func(k etf.Term) bool { return etf.Equal(k, o.(etf.Tuple)[0]) }) {
				continue
			}
			if r, ok := s.Run(o); ok {
				got = append(got, r)
			}
		}
		if onlyGo, onlyOTP := multisetDiff(got, want.(etf.List)); len(onlyGo)+len(onlyOTP) > 0 {
			failures++
			t.Errorf("spec %d %s (bound keys %v %v): got %d results, dets %d; %d only in Go, e.g. %s; %d only from dets, e.g. %s",
				i, etf.Format(st), keys, isBound, len(got), len(want.(etf.List)),
				len(onlyGo), formatFew(onlyGo, 3), len(onlyOTP), formatFew(onlyOTP, 3))
		}
		if failures > 10 {
			t.Fatalf("too many disagreements (seed %d)", seed)
		}
	}
	t.Logf("%d specs, %d with bound keys", len(specs), bound)
	if bound < len(specs)/10 {
		t.Errorf("weak coverage: only %d specs with bound keys (seed %d)", bound, seed)
	}
}

// multisetDiff compares a and b as multisets of terms, by encoding (so
// -0.0 and 0.0 differ): it returns what a has more often than b, and what
// b has more often than a, each in its original order.
func multisetDiff(a, b etf.List) (onlyA, onlyB etf.List) {
	key := func(t etf.Term) string {
		e, _ := etf.Encode(t)
		return string(e)
	}
	count := map[string]int{}
	for _, t := range b {
		count[key(t)]++
	}
	for _, t := range a {
		k := key(t)
		if count[k] > 0 {
			count[k]--
		} else {
			onlyA = append(onlyA, t)
		}
	}
	for _, t := range slices.Backward(b) {
		k := key(t)
		if count[k] > 0 {
			count[k]--
			onlyB = append(onlyB, t)
		}
	}
	slices.Reverse(onlyB)
	return onlyA, onlyB
}

// formatFew formats up to n terms of l, noting how many are left out.
func formatFew(l etf.List, n int) string {
	if len(l) == 0 {
		return "none"
	}
	s := ""
	for i, t := range l[:min(n, len(l))] {
		if i > 0 {
			s += ", "
		}
		s += etf.Format(t)
	}
	if len(l) > n {
		s += ", ..."
	}
	return s
}

// edgeSpecs are hand-picked corners, each run on edgeObjects in OTP and
// in Go by TestEdgeCasesOTP.
var edgeSpecs = []string{
	`[{'_',[],[{is_record,{{}},a,0}]}]`,
	`[{'_',[],[{is_record,{{a}},a,-1}]}]`,
	`[{'_',[],[{is_record,{{a}},a,100000000000000000000}]}]`,
	`[{'_',[],[{is_record,{{a}},a,576460752303423487}]}]`,
	`[{'_',[],[{is_record,{{a}},a,576460752303423488}]}]`,
	`[{'_',[],[{is_record,{{a}},a,-576460752303423489}]}]`,
	`[{'_',[],[{binary_part,<<"abc">>,100000000000000000000,1}]}]`,
	`[{'_',[],[{binary_part,<<"abc">>,3,-3}]}]`,
	`[{'_',[],[{element,0,{{a}}}]}]`,
	`[{'_',[],[{tl,[a]}]}]`,
	`[{'_',[],[{tl,{const,[a|b]}}]}]`,
	`[{'_',[],[{length,{const,[a|b]}}]}]`,
	`[{'_',[],[{map_get,a,[]}]}]`,
	`[{'_',[],[{'bsl',-1,64}]}]`,
	`[{'_',[],[{'bsr',-1,100000000000000000000}]}]`,
	`[{'_',[],[{'bsl',-5,-100000000000000000000}]}]`,
	`[{'_',[],[{'div',-9223372036854775808,-1}]}]`,
	`[{'_',[],[{'rem',-9223372036854775808,-1}]}]`,
	`[{'_',[],[{'*',-9223372036854775808,-1}]}]`,
	`[{'_',[],[{'abs',-9223372036854775808}]}]`,
	`[{'_',[],[{'bnot',-9223372036854775808}]}]`,
	`[{'_',[],[{'trunc',-0.5}]}]`,
	`[{'_',[],[{'round',4503599627370495.5}]}]`,
	`[{'_',[],[{'float',9007199254740993}]}]`,
	`[{'_',[],[{'/',9007199254740993,1}]}]`,
	`[{'_',[],[{'+',0.0,-0.0}]}]`,
	`[{'_',[],[{'-',0.0}]}]`,
	`[{'_',[],[{'==',{const,{1,a}},{{1.0,a}}}]}]`,
	`[{'_',[],[{'=:=',{const,{1,a}},{{1.0,a}}}]}]`,
	`[{'_',[],[{'<',{const,#{a => 1}},{const,#{a => 1.0}}}]}]`,
	`[{'_',[],[{'==',{const,#{a => 1}},{const,#{a => 1.0}}}]}]`,
	`[{'_',[],[{'<',{const,#{1 => a}},{const,#{1.0 => a}}}]}]`,
	`[{'_',[],[{'orelse',false,false}]}]`,
	`[{'_',[],[{'andalso',true}]}]`,
	`[{'_',[],[{'or',true}]}]`,
	`[{'_',[],[{'xor',true,1}]}]`,
	`[{'_',[],[{size,<<>>}]}]`,
	`[{'_',[],[{bit_size,<<1:1>>}]}]`,
	`[{{'$1',[]},[],['$$']}]`,
	`[{{'_',['_'|'_']},[],['$_']}]`,
	`[{{'_',#{}},[],[ok]}]`,
	`[{{'$1','$1','$1'},[],['$1']}]`,
	`[{'_',[],[#{0.0 => a, {'-',0.0} => b}]}]`,
	`[{{'$1','$2','_'},[],[#{'$1' => a, '$2' => b, 0.0 => c}]}]`,
	// Which occurrence binds a repeated variable (markOTPBindings): the
	// shallower one, and of two lists or tuples the later one.
	`[{{['$1'],'$1'},[],['$1']}]`,
	`[{{['$1'],['$1']},[],['$1']}]`,
	`[{{{'$1'},{{'$1'}}},[],['$1']}]`,
	`[{{[['$1'],'$1'],'_'},[],['$$']}]`,
}

var edgeObjects = []string{`{a,[]}`, `{a,[b]}`, `{a,#{}}`, `{1,1.0,1}`, `{x,x,x}`, `x`, `{0.0,-0.0,q}`, `{-0.0,0.0,q}`,
	`{[-0.0],0.0}`, `{[-0.0],[0.0]}`, `{{-0.0},{{0.0}}}`, `{[[-0.0],0.0],a}`}

// TestEdgeCasesOTP: OTP and Go agree on edgeSpecs over edgeObjects,
// byte for byte (a fixed list beside the random TestDifferentialOTP).
func TestEdgeCasesOTP(t *testing.T) {
	erl := otptest.Erl(t)
	var specs, objs etf.List
	for _, s := range edgeSpecs {
		specs = append(specs, mustParse(t, s))
	}
	for _, s := range edgeObjects {
		objs = append(objs, mustParse(t, s))
	}
	sb, _ := etf.Encode(specs)
	ob, _ := etf.Encode(objs)
	res, err := etf.Decode(erl.Eval(t, otpRunner, sb, ob)[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range specs {
		want := res.(etf.List)[i]
		s, err := Compile(st)
		if a, ok := want.(etf.Atom); ok && a == "badarg" {
			if err == nil {
				t.Errorf("%s: OTP refuses it, Compile accepts it", edgeSpecs[i])
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: OTP compiles it, Compile says %v", edgeSpecs[i], err)
			continue
		}
		for j, o := range objs {
			var mine etf.Term = etf.List{}
			if got, ok := s.Run(o); ok {
				mine = etf.List{got}
			}
			if w := want.(etf.List)[j]; !sameEncoding(mine, w) {
				t.Errorf("%s on %s: got %s, OTP %s", edgeSpecs[i], edgeObjects[j], etf.Format(mine), etf.Format(w))
			}
		}
	}
}
