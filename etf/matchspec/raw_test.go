package matchspec

import (
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/msgen"
	"github.com/godets/godets/internal/testutil"
)

// TestRawFilterSound: the raw filter never rejects an object that Run
// matches, over generated specs (heads from sample objects, every guard
// form) and objects; and it does reject, or the test proves nothing.
func TestRawFilterSound(t *testing.T) {
	seed := uint64(testutil.Seed(t))
	g := msgen.New(seed)
	objs := g.Objects(48)
	encs := make([][]byte, len(objs))
	for i, o := range objs {
		b, err := etf.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		encs[i] = b
	}
	n := 4000
	if testing.Short() {
		n = 1000
	}
	var filtered, runs, rejected, matched int
	for i := 0; i < n; i++ {
		spec := g.Spec(objs[:8])
		if i%2 == 1 {
			spec = g.ExprSpec(objs[:8])
		}
		s, err := Compile(spec)
		if err != nil || !s.FiltersRaw() {
			continue
		}
		filtered++
		for j, o := range objs {
			runs++
			_, ok := s.Run(o)
			if ok {
				matched++
			}
			if s.RejectsRaw(encs[j]) {
				rejected++
				if ok {
					t.Fatalf("seed %d: spec %s rejects %s raw, but Run matches it", seed, etf.Format(spec), etf.Format(o))
				}
			}
		}
	}
	t.Logf("%d specs with a raw filter of %d; %d runs: %d matched, %d rejected raw", filtered, n, runs, matched, rejected)
	if filtered == 0 || rejected == 0 || matched == 0 {
		t.Fatalf("seed %d: %d filtered specs, %d rejections, %d matches: the test checked nothing", seed, filtered, rejected, matched)
	}
}

// TestRawFilterCases: forms where bytes and terms could disagree.
func TestRawFilterCases(t *testing.T) {
	enc := func(x etf.Term) []byte {
		b, err := etf.Encode(x)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pair := func(v etf.Term) []byte { return enc(etf.Tuple{etf.Binary("k"), v}) }
	latin1A := []byte{131, 104, 2, 100, 0, 1, 'a', 97, 5} // {a, 5}, a as ATOM_EXT
	val := pair(etf.Binary("abcdefg"))
	cases := []struct {
		spec    string
		obj     []byte
		rejects bool
	}{
		{`[{{'_','$1'},[{'=:=',{binary_part,'$1',3,1},<<"d">>}],['$_']}]`, val, false},
		{`[{{'_','$1'},[{'=:=',{binary_part,'$1',3,1},<<"x">>}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{'=:=',{binary_part,'$1',{{3,1}}},<<"x">>}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{'=:=',{binary_part,'$1',{const,{3,1}}},<<"d">>}],['$_']}]`, val, false},
		{`[{{'_','$1'},[{'==',{binary_part,'$1',7,-2},<<"fg">>}],['$_']}]`, val, false},
		{`[{{'_','$1'},[{'<',<<"c">>,{binary_part,'$1',3,1}}],['$_']}]`, val, false}, // constant first
		{`[{{'_','$1'},[{'>',<<"c">>,{binary_part,'$1',3,1}}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{'>',{binary_part,'$1','$1',1},<<"c">>}],['$_']}]`, val, true},            // a binary as start: raises
		{`[{{'_','$1'},[{'==',{binary_part,'$1',6,2},<<"g">>}],['$_']}]`, val, true},              // out of range: raises
		{`[{{'_','$1'},[{'==',{binary_part,'$1',0,1},<<"a">>}],['$_']}]`, pair(etf.Int(3)), true}, // not a binary: raises
		{`[{{'_','$1'},[{'==',{binary_part,'$1',0,1},<<"a">>}],['$_']}]`, pair(etf.Bitstring{Bytes: []byte{'a', 0x80}, Bits: 1}), false},
		{`[{{'_','$1'},[{'==','$1',1}],['$_']}]`, pair(etf.Float(1)), false}, // 1 == 1.0
		{`[{{'_','$1'},[{'<','$1',1}],['$_']}]`, pair(etf.Float(0.5)), false},
		{`[{{'_','$1'},[{'=:=','$1',{{1,2}}}],['$_']}]`, pair(etf.Tuple{etf.Int(1), etf.Int(2)}), false},
		{`[{{'_','$1'},[{'=:=','$1',{{1,2}}}],['$_']}]`, pair(etf.Binary("x")), true}, // types differ
		{`[{{'_','$1'},[{'==','$1',{{1,2}}}],['$_']}]`, pair(etf.Tuple{etf.Int(1), etf.Float(2)}), false},
		{`[{{'_','$1'},[{'<','$1',a}],['$_']}]`, pair(etf.Int(7)), false}, // number < atom
		{`[{{'_','$1'},[{'>','$1',a}],['$_']}]`, pair(etf.Int(7)), true},
		{`[{{'_','$1'},[{'>',{byte_size,'$1'},6}],['$_']}]`, val, false},
		{`[{{'_','$1'},[{'>',{byte_size,'$1'},7}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{is_binary,'$1'}],['$_']}]`, val, false},
		{`[{{'_','$1'},[{is_integer,'$1'}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{'not',{is_binary,'$1'}}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{'orelse',{is_integer,'$1'},{'>',{byte_size,'$1'},3}}],['$_']}]`, val, false},
		{`[{{'_','$1'},[{'andalso',{is_binary,'$1'},{'>',{byte_size,'$1'},30}}],['$_']}]`, val, true},
		{`[{{'_','$1'},[{'andalso',{is_binary,'$1'},{hd,'$1'}}],['$_']}]`, val, false}, // hd: not read raw
		{`[{{a,'_'},[],['$_']}]`, latin1A, false},                                      // the same atom, another encoding
		{`[{{b,'_'},[],['$_']}]`, latin1A, true},
		{`[{{'$1','$1'},[],['$_']}]`, enc(etf.Tuple{etf.Atom("a"), etf.Atom("a")}), false},
		{`[{{'$1','$1'},[],['$_']}]`, latin1A, true},
		{`[{{'_','_','_'},[],['$_']}]`, val, true},
		{`[{{<<"k">>,'_'},[],['$_']}]`, val, false},
		{`[{{<<"j">>,'_'},[],['$_']}]`, val, true},
		{`[{{'_',1.0},[],['$_']}]`, pair(etf.Int(1)), false},
		{`[{{'_',1.0},[],['$_']}]`, pair(etf.Float(1)), false},
		{`[{{'_',1.0},[],['$_']}]`, pair(etf.Float(2)), true},
		{`[{{<<"j">>,'_'},[],['$_']},{{'_','$1'},[{is_binary,'$1'}],['$_']}]`, val, false},
		{`[{{<<"j">>,'_'},[],['$_']},{'_',[],['$_']}]`, val, false},
	}
	for _, c := range cases {
		s := compileText(t, c.spec)
		obj, err := etf.Decode(c.obj)
		if err != nil {
			t.Fatal(err)
		}
		_, runs := s.Run(obj)
		if got := s.RejectsRaw(c.obj); got != c.rejects {
			t.Errorf("%s on %s: RejectsRaw %v, want %v (Run matches: %v)", c.spec, etf.Format(obj), got, c.rejects, runs)
		}
		if c.rejects && runs {
			t.Errorf("%s on %s: the case is wrong: Run matches", c.spec, etf.Format(obj))
		}
	}
	if s := compileText(t, `[{'_',[],['$_']}]`); s.FiltersRaw() {
		t.Error("a spec that matches everything has a raw filter")
	}
}

// TestRejectsRawAllocs: the raw filter allocates nothing.
func TestRejectsRawAllocs(t *testing.T) {
	objs := benchObjects(64)
	encs := make([][]byte, len(objs))
	for i, o := range objs {
		encs[i], _ = etf.Encode(o)
	}
	for name, text := range hotSpecs {
		s := compileText(t, text)
		i := 0
		allocs := testing.AllocsPerRun(200, func() {
			s.RejectsRaw(encs[i%len(encs)])
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per object, want 0", name, allocs)
		}
	}
}

func BenchmarkRejectsRaw(b *testing.B) {
	objs := benchObjects(1024)
	encs := make([][]byte, len(objs))
	for i, o := range objs {
		encs[i], _ = etf.Encode(o)
	}
	for name, text := range hotSpecs {
		s := compileText(b, text)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.RejectsRaw(encs[i%len(encs)])
			}
		})
	}
}
