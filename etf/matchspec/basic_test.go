package matchspec

import (
	"errors"
	"testing"

	"github.com/godets/godets/etf"
)

func mustParse(t *testing.T, s string) etf.Term {
	t.Helper()
	v, err := etf.Parse(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

// TestRunTable runs hand-written specs whose results were taken from OTP 25
// (erlang:match_spec_test/3 and ets:match_spec_run/2), and compares them
// by encoding.
func TestRunTable(t *testing.T) {
	cases := []struct {
		ms, obj, want string // want "" means no match
	}{
		{`[{{'$1','$1'},[],['$$']}]`, `{1,1.0}`, ``},
		{`[{{'$1','$1'},[],['$$']}]`, `{1,1}`, `[1]`},
		{`[{{'$3','_','$1'},[],['$$']}]`, `{1,2,3}`, `[3,1]`},
		{`[{'_',[],['$_']}]`, `5`, `5`},
		{`[{{'$1'},[],[{element,5,'$1'}]}]`, `{{a}}`, `'EXIT'`},
		{`[{{'$1'},[{element,5,'$1'}],[ok]}]`, `{{a}}`, ``},
		{`[{{'$1'},[],[{{'$1',{element,5,'$1'}}}]}]`, `{q}`, `{q,'EXIT'}`},
		{`[{{'$1'},[],[{'==',{element,5,'$1'},'EXIT'}]}]`, `{q}`, `true`},
		{`[{{'$1'},[{'==',{element,5,'$1'},'EXIT'}],[yes]}]`, `{q}`, ``},
		{`[{{'$1'},[],[{element,2,'$1'}]},{'_',[],[second]}]`, `{{q}}`, `'EXIT'`},
		{`[{['$1'|'$2'],[],[{{'$2','$1'}}]}]`, `[a,b,c]`, `{[b,c],a}`},
		{`[{#{a => '$1'},[],['$1']}]`, `#{a => 1, b => 2}`, `1`},
		{`[{{'$1'},[],[#{'$1' => '$1'}]}]`, `{k}`, `#{k => k}`},
		{`[{{'$1'},[],[{'andalso','$1',foo}]}]`, `{true}`, `foo`},
		{`[{{'$1'},[],[{'and','$1',foo}]}]`, `{true}`, `'EXIT'`},
		{`[{{'$1'},[],[{'andalso',true,true,foo}]}]`, `{q}`, `foo`},
		{`[{{'$1'},[],[{binary_part,'$1',4,-2}]}]`, `{<<1,2,3,4>>}`, `<<3,4>>`},
		{`[{{'$1'},[],[{binary_part,'$1',0,1}]}]`, `{<<1,2,3:3>>}`, `<<1>>`},
		{`[{{'$1'},[],[{size,'$1'}]}]`, `{<<1,2,3:3>>}`, `2`},
		{`[{{'$1'},[],[{round,-2.5}]}]`, `{q}`, `-3`},
		{`[{{'$1'},[],[{'-','$1',1}]}]`, `{-9223372036854775808}`, `-9223372036854775809`},
		{`[{{'$1'},[],[{float,'$1'}]}]`, `{23058430092136941569}`, `2.305843009213694e19`},
		{`[{{'$1'},[],[{'*','$1',2}]}]`, `{1.7976931348623157e308}`, `'EXIT'`},
		{`[{{'$1'},[],[{'bsr',-7,1}]}]`, `{q}`, `-4`},
		{`[{{'$1'},[],[{'rem',-7,2}]}]`, `{q}`, `-1`},
		{`[{{0.0},[],[ok]}]`, `{-0.0}`, ``},
		{`[{{'$1','$1'},[],[ok]}]`, `{0.0,-0.0}`, `ok`},
		{`[{{'$4294967296','$0'},[],['$$']}]`, `{q,r}`, ``},
		{`[{{'$2147483648','$2'},[],['$$']}]`, `{q,r}`, ``},
		{`[{{'$2147483647','$2'},[],['$$']}]`, `{q,r}`, `[r,q]`},
		{`[{{'$1'},[],[{const,'$1'}]}]`, `{q}`, `'$1'`},
		{`[{{'$1'},[],[{{}},{{{{}}}}]}]`, `{q}`, `{{}}`},
		{`[{{'$1'},[],[{is_record,'$1',a,2}]}]`, `{{a,1}}`, `true`},
		{`[{{'$1'},[],[{is_record,'$1','$1',1}]}]`, `{{q}}`, `'EXIT'`},
		{`[{[a,b|'_'],[],[ok]}]`, `[a,b,c,d]`, `ok`},
		{`[{[a|'$1'],[],['$1']}]`, `[a|b]`, `b`},
		{`[{{'$1'},[],[[a|{element,1,'$1'}]]}]`, `{{q}}`, `[a|q]`},
		// Both parts raise in a body: 'EXIT' /= 'EXIT' is false.
		{`[{'_',[],[{'/=',{binary_part,<<"abcd">>,-1,2},{binary_part,<<>>,{{4,-2}}}}]}]`, `{q}`, `false`},
		{`[{'_',[],[{'<',{binary_part,<<"abcd">>,1,2},{binary_part,<<"abcd">>,{{0,3}}}}]}]`, `{q}`, `false`},
		{`[{'_',[],[{'<',1,{binary_part,<<"abcd">>,{{0,3}}}}]}]`, `{q}`, `true`},
		{`[{'_',[],[{'>',{binary_part,<<"abcd">>,{{0,3}}},<<"abc",1:1>>}]}]`, `{q}`, `false`},
		// In OTP 25 0.0 =:= -0.0, so a body map whose keys evaluate to
		// both keeps one: the later pair in map key order, key and value.
		{`[{{'$1'},[],[#{0.0 => a, '$1' => b}]}]`, `{-0.0}`, `#{-0.0 => b}`},
		{`[{{'$1'},[],[#{-0.0 => a, '$1' => b}]}]`, `{0.0}`, `#{0.0 => b}`},
		{`[{{'$1','$2'},[],[#{'$2' => a, '$1' => b}]}]`, `{0.0,-0.0}`, `#{-0.0 => a}`},
	}
	for _, c := range cases {
		s, err := Compile(mustParse(t, c.ms))
		if err != nil {
			t.Errorf("%s: %v", c.ms, err)
			continue
		}
		got, ok := s.Run(mustParse(t, c.obj))
		if c.want == "" {
			if ok {
				t.Errorf("%s on %s: got %s, want no match", c.ms, c.obj, etf.Format(got))
			}
			continue
		}
		if !ok {
			t.Errorf("%s on %s: no match, want %s", c.ms, c.obj, c.want)
			continue
		}
		// Byte for byte, as OTP gave it: etf.Equal would take -0.0 for 0.0.
		if want := mustParse(t, c.want); !sameEncoding(got, want) {
			t.Errorf("%s on %s: got %s, want %s", c.ms, c.obj, etf.Format(got), c.want)
		}
	}
}

// TestCompileErrors: specs OTP 25 refuses with badarg.
func TestCompileErrors(t *testing.T) {
	cases := []struct{ ms, path string }{
		{`[]`, ``},
		{`x`, ``},
		{`[{a,b}]`, `clause 1`},
		{`[{'_',[],[ok]},{'$1',[],['$2']}]`, `clause 2, body 1`},
		{`[{'$1',['$2'],[ok]}]`, `clause 1, guard 1`},
		{`[{#{'$1' => x},[],[ok]}]`, `clause 1, head`},
		{`[{'_',[],[{is_boolean,1}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{tuple_size,{{}}}]}]`, `clause 1, body 1`},
		{`[{'_',[],[]}]`, `clause 1, body`},
		{`[{'_',[],[{}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{1,2}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{const}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{'andalso'}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{'xor',true,true,true}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{message,1}]}]`, `clause 1, body 1`},
		{`[{'_',[],[{binary_part,<<>>,{1,2}}]}]`, `clause 1, body 1`},
		{`[{'_',[],[ok]}|x]`, ``},
	}
	for _, c := range cases {
		_, err := Compile(mustParse(t, c.ms))
		var ce *CompileError
		if !errors.Is(err, ErrBadSpec) || !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want a CompileError", c.ms, err)
			continue
		}
		if ce.Path != c.path {
			t.Errorf("%s: path %q, want %q (%v)", c.ms, ce.Path, c.path, err)
		}
	}
	_, err := Compile(mustParse(t, `[{'_',[],[{self}]}]`))
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrBadSpec) {
		t.Errorf("self/0: %v, want ErrUnsupported", err)
	}
}

// TestBoundKeys: the keys OTP's dets looks up instead of scanning; the
// quirky rows were checked with dets:select/2 on a real table (1 and 1.0
// both stored: the first spec returns only {1.0,b}; a map key is looked
// up literally; '$01' makes dets scan).
func TestBoundKeys(t *testing.T) {
	cases := []struct {
		ms   string
		keys string // "" means not bound
	}{
		{`[{{a,'_'},[],['$_']},{{b,'$1'},[],['$1']},{{a,1},[],[x]}]`, `[a,b]`},
		{`[{{{k,1},'_'},[],['$_']}]`, `[{k,1}]`},
		{`[{{'$1','_'},[],['$_']}]`, ``},
		{`[{{{k,'_'},'_'},[],['$_']}]`, ``},
		{`[{{[k|'$3'],'_'},[],['$_']}]`, ``},
		{`[{{{x,'$01'},'_'},[],['$_']},{{{x,y},'_'},[],['$_']}]`, ``},
		{`[{{'$-1'},[],['$_']}]`, ``},
		{`[{{'$'},[],['$_']}]`, `['$']`},
		{`[{{'$1a'},[],['$_']}]`, `['$1a']`},
		{`[{{#{a => '$1'},'_'},[],['$_']}]`, `[#{a => '$1'}]`},
		{`[{'_',[],['$_']}]`, ``},
		{`[{[a],[],['$_']},{{a},[],['$_']}]`, ``},
		{`[{{},[],['$_']},{{a},[],['$_']}]`, `[a]`},
		{`[{{},[],['$_']}]`, ``},
		{`[{{1,'_'},[],['$_']},{{1.0,'_'},[],['$_']}]`, `[1.0]`},
		{`[{{1.0,'_'},[],['$_']},{{1,'_'},[],['$_']}]`, `[1]`},
		{`[{{c},[],[x]},{{a},[],[x]},{{b},[],[x]}]`, `[a,b,c]`},
	}
	for _, c := range cases {
		s, err := Compile(mustParse(t, c.ms))
		if err != nil {
			t.Fatal(err)
		}
		keys, ok := s.BoundKeys(1)
		if c.keys == "" {
			if ok {
				t.Errorf("%s: bound keys %v, want none", c.ms, keys)
			}
			continue
		}
		want := mustParse(t, c.keys).(etf.List)
		if !ok || len(keys) != len(want) {
			t.Errorf("%s: keys %v %v, want %s", c.ms, keys, ok, c.keys)
			continue
		}
		for i := range want {
			if !sameEncoding(keys[i], want[i]) {
				t.Errorf("%s: keys %v, want %s", c.ms, keys, c.keys)
			}
		}
	}
	s, _ := Compile(mustParse(t, `[{{a,b},[],[x]}]`))
	if _, ok := s.BoundKeys(0); ok {
		t.Error("key position 0 reported bound")
	}
}

func TestMatchSpecResults(t *testing.T) {
	pat := mustParse(t, `{'$2','_','$1'}`)
	obj := mustParse(t, `{a,b,c}`)
	for _, c := range []struct {
		r    Result
		want string
	}{{Bindings, `[c,a]`}, {Object, `{a,b,c}`}, {True, `true`}} {
		s, err := MatchSpec(pat, c.r)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.Run(obj)
		if !ok || !etf.Equal(got, mustParse(t, c.want)) {
			t.Errorf("result %d: got %v %v, want %s", c.r, got, ok, c.want)
		}
	}
	if _, err := MatchSpec(pat, 0); !errors.Is(err, ErrBadSpec) {
		t.Errorf("bad result kind: %v", err)
	}
}

// TestMapKeysRaising: two map keys that both raise in a body are both
// 'EXIT'; OTP keeps the value of the later key in its map key order, not
// in the order the Go map lists them (erl: #{'EXIT' => b}).
func TestMapKeysRaising(t *testing.T) {
	body := etf.Map{
		{Key: mustParse(t, `{'rem',1,0}`), Value: etf.Atom("b")},
		{Key: mustParse(t, `{element,9,'$_'}`), Value: etf.Atom("a")},
	}
	s, err := Compile(etf.List{etf.Tuple{etf.Atom("_"), etf.List{}, etf.List{body}}})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s.Run(etf.Tuple{etf.Atom("q")})
	want := etf.Map{{Key: etf.Atom("EXIT"), Value: etf.Atom("b")}}
	if !ok || !etf.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// The same with ten more keys, past the small-map path (erl gives
	// #{1 => 1, ..., 10 => 10, 'EXIT' => b}).
	for i := 10; i >= 1; i-- {
		body = append(body, etf.Pair{Key: etf.Int(i), Value: etf.Int(i)})
		want = append(want, etf.Pair{Key: etf.Int(i), Value: etf.Int(i)})
	}
	s, err = Compile(etf.List{etf.Tuple{etf.Atom("_"), etf.List{}, etf.List{body}}})
	if err != nil {
		t.Fatal(err)
	}
	got, ok = s.Run(etf.Tuple{etf.Atom("q")})
	if !ok || !etf.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestRunConcurrent: one Spec runs from many goroutines at once (run
// with -race to check that Run writes nothing shared).
func TestRunConcurrent(t *testing.T) {
	s, err := Compile(mustParse(t, `[{{'$1','$2'},[{'>',{byte_size,'$2'},1}],[{{'$2','$1',#{'$1' => [a,{const,b}]}}}]},{'_',[],['$$']}]`))
	if err != nil {
		t.Fatal(err)
	}
	objs := benchObjects(50)
	want := make([]etf.Term, len(objs))
	for i, o := range objs {
		want[i], _ = s.Run(o)
	}
	done := make(chan bool)
	for range 4 {
		go func() {
			defer func() { done <- true }()
			for range 50 {
				for i, o := range objs {
					if got, _ := s.Run(o); !etf.Equal(got, want[i]) {
						t.Errorf("object %d: %v, want %v", i, got, want[i])
						return
					}
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// TestOTPBindingOrder: of two occurrences of a variable that match 0.0
// and -0.0 (equal in a match in OTP 25), the result keeps the value where
// OTP's match program binds first: a shallower occurrence before a nested
// one, and of two nested lists or tuples the later one (markOTPBindings).
// The results were taken from OTP 25; TestEdgeCasesOTP checks them there.
func TestOTPBindingOrder(t *testing.T) {
	for _, c := range []struct{ spec, obj, want string }{
		{`[{{['$1'],'$1'},[],['$1']}]`, `{[-0.0],0.0}`, `0.0`},
		{`[{{['$1'],['$1']},[],['$1']}]`, `{[-0.0],[0.0]}`, `0.0`},
		{`[{{{'$1'},{{'$1'}}},[],['$1']}]`, `{{-0.0},{{0.0}}}`, `0.0`},
		{`[{{[['$1'],'$1'],'_'},[],['$$']}]`, `{[[-0.0],0.0],a}`, `[0.0]`},
		{`[{{'$1',['$1']},[],['$1']}]`, `{-0.0,[0.0]}`, `-0.0`},
		{`[{{['$1'],'$1'},[],['$1']}]`, `{[-0.0],1.0}`, ``}, // no match
	} {
		s, err := Compile(mustParse(t, c.spec))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.Run(mustParse(t, c.obj))
		if c.want == "" {
			if ok {
				t.Errorf("%s on %s: matched, giving %s", c.spec, c.obj, etf.Format(got))
			}
			continue
		}
		if !ok || !sameEncoding(got, mustParse(t, c.want)) {
			t.Errorf("%s on %s: got %s (%v), want %s", c.spec, c.obj, etf.Format(got), ok, c.want)
		}
	}
}
