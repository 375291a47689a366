package matchspec

import (
	"errors"
	"testing"
	"time"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/msgen"
	"github.com/godets/godets/internal/testutil"
)

// fuzzObjects are what every fuzzed spec runs on: table-like tuples and a
// few other shapes.
var fuzzObjects = []etf.Term{
	etf.Tuple{etf.Atom("a"), etf.Int(1)},
	etf.Tuple{etf.Binary("key"), etf.Binary("value"), etf.Float(-0.5)},
	etf.Tuple{etf.Int(-7), etf.List{etf.Int(1), etf.Atom("b")}, etf.Map{{Key: etf.Atom("k"), Value: etf.Tuple{}}}},
	etf.Tuple{etf.NewImproperList(etf.Atom("t"), etf.Int(1)), etf.Bitstring{Bytes: []byte{1, 0x80}, Bits: 1}},
	etf.List{etf.Int(300), etf.Float(2)},
	etf.Atom("x"),
}

// fuzzTimeLimit is far above what any input takes; exceeding it means a
// spec made Compile or Run superlinear.
const fuzzTimeLimit = 10 * time.Second

// FuzzCompileRun: any ETF term is compiled; a refusal is a *CompileError
// matching ErrBadSpec; a compiled spec runs on several objects without
// panicking, in bounded time, and a match always has a result.
// The seed corpus is testdata/fuzz/FuzzCompileRun.
func FuzzCompileRun(f *testing.F) {
	for _, s := range []string{
		`[{{'$1','$2'},[{'>','$2',0}],['$_']}]`,
		`[{'_',[],[{'bsl',1,262143}]}]`,
		`[{{'$1'},[{'==',{binary_part,'$1',0,1},<<"k">>}],[{{'$1','$$'}}]}]`,
	} {
		t, err := etf.Parse(s)
		if err != nil {
			f.Fatal(err)
		}
		b, err := etf.Encode(t)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		term, err := etf.Decode(b)
		if err != nil {
			return
		}
		start := time.Now()
		s, err := Compile(term)
		if err != nil {
			var ce *CompileError
			if !errors.Is(err, ErrBadSpec) || !errors.As(err, &ce) || s != nil {
				t.Fatalf("Compile: %T %v, spec %v", err, err, s)
			}
			return
		}
		for _, o := range fuzzObjects {
			if res, ok := s.Run(o); ok && res == nil {
				t.Fatalf("%s on %s: matched without a result", etf.Format(term), etf.Format(o))
			}
		}
		for pos := 1; pos <= 3; pos++ {
			if keys, ok := s.BoundKeys(pos); ok && len(keys) > len(s.clauses) {
				t.Fatalf("BoundKeys(%d): %d keys for %d clauses", pos, len(keys), len(s.clauses))
			}
		}
		if d := time.Since(start); d > fuzzTimeLimit {
			t.Fatalf("%v to compile and run", d)
		}
	})
}

// TestHostileSpecsBounded: the inputs that would take unbounded time or
// stack are refused or raise, each quickly.
func TestHostileSpecsBounded(t *testing.T) {
	var deep etf.Term = etf.Atom("$_")
	for range maxDepth + 1 {
		deep = etf.Tuple{etf.Tuple{deep}}
	}
	if _, err := Compile(etf.List{etf.Tuple{etf.Atom("_"), etf.List{}, etf.List{deep}}}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("body nested %d deep: %v, want a compile error", maxDepth+1, err)
	}
	var deepHead etf.Term = etf.Atom("_")
	for range maxDepth + 1 {
		deepHead = etf.List{deepHead}
	}
	if _, err := Compile(etf.List{etf.Tuple{deepHead, etf.List{}, etf.List{etf.True}}}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("head nested %d deep: %v, want a compile error", maxDepth+1, err)
	}

	half := MaxIntBits / 2
	cases := []struct {
		ms   string
		exit bool // the body raises
	}{
		{`[{'_',[],[{'bsl',1,10000000000}]}]`, true},
		{`[{'_',[],[{'bsl',1,100000000000000000000000000}]}]`, true},
		{`[{'_',[],[{'bsr',1,-100000000000000000000000000}]}]`, true},
		{`[{'_',[],[{'bsl',1,` + itoa(MaxIntBits-1) + `}]}]`, false},
		{`[{'_',[],[{'bsl',1,` + itoa(MaxIntBits) + `}]}]`, true},
		{`[{'_',[],[{'*',{'bsl',1,` + itoa(half-1) + `},{'bsl',1,` + itoa(half-1) + `}}]}]`, false},
		{`[{'_',[],[{'*',{'bsl',1,` + itoa(half) + `},{'bsl',1,` + itoa(half) + `}}]}]`, true},
		{`[{'_',[],[{'+',{'bsl',1,` + itoa(MaxIntBits-1) + `},{'bsl',1,` + itoa(MaxIntBits-1) + `}}]}]`, true},
		{`[{'_',[],[{'bsl',0,10000000000}]}]`, false},
	}
	for _, c := range cases {
		s := compileText(t, c.ms)
		start := time.Now()
		got, ok := s.Run(etf.Atom("x"))
		if !ok {
			t.Fatalf("%s: no match", c.ms)
		}
		isExit := etf.Equal(got, termExit)
		if isExit != c.exit {
			t.Errorf("%s: raised %v, want %v", c.ms, isExit, c.exit)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", c.ms, d)
		}
	}
}

func itoa(n int) string { return etf.Format(etf.Int(n)) }

// TestNilTermsNoPanic: objects built by hand may hold nil terms (and nil
// pointers); every generated spec runs on them without panicking.
func TestNilTermsNoPanic(t *testing.T) {
	objs := []etf.Term{
		etf.Tuple{nil, nil},
		etf.Tuple{etf.Atom("a"), etf.List{nil, etf.Int(1)}, etf.Map{{Key: nil, Value: nil}}},
		etf.Tuple{etf.Int(1), (*etf.BigInt)(nil), (*etf.ImproperList)(nil), (*etf.Opaque)(nil)},
		etf.Tuple{etf.Int(1), etf.Tuple{nil}, &etf.ImproperList{Elems: []etf.Term{nil}, Tail: nil}},
	}
	seed := uint64(testutil.Seed(t))
	g := msgen.New(seed)
	samples := g.Objects(8) // heads come from sound objects, often '_' or a variable
	for i := 0; i < 3000; i++ {
		spec := g.Spec(samples)
		if i%2 == 1 {
			spec = g.ExprSpec(samples)
		}
		s, err := Compile(spec)
		if err != nil {
			continue
		}
		for _, o := range objs {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("spec %s on %#v: panic %v (seed %d)", etf.Format(spec), o, r, seed)
					}
				}()
				s.Run(o)
			}()
		}
	}
}

// TestNilPointerTermsPinned pins two specs that panicked on nil pointers
// (seeds 8059777476075517455 and 4628677165192252415 of
// TestNilTermsNoPanic): a nil *ImproperList as a list's tail, and bnot
// of a nil *BigInt, which must fail the body, not panic.
func TestNilPointerTermsPinned(t *testing.T) {
	obj := etf.Tuple{etf.Int(1), (*etf.BigInt)(nil), (*etf.ImproperList)(nil), (*etf.Opaque)(nil)}
	for _, text := range []string{
		`[{'$3',[],[[{binary_part,<<"ab",5:3>>,4,5}|{element,3,'$_'}]]}]`,
		`[{'$0',[],[{'bnot',{element,2,'$0'}}]}]`,
	} {
		spec, err := etf.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Compile(spec)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: panic %v", text, r)
				}
			}()
			s.Run(obj)
		}()
	}
}
