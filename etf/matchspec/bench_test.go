package matchspec

import (
	"fmt"
	"testing"

	"github.com/godets/godets/etf"
)

// benchObjects are the bench workload's shape: 16-byte binary keys and
// 100-byte binary values.
func benchObjects(n int) []etf.Term {
	objs := make([]etf.Term, n)
	for i := range objs {
		key := etf.Binary(fmt.Sprintf("key-%012d", i))
		val := make(etf.Binary, 100)
		for j := range val {
			val[j] = byte('a' + (i+j)%26)
		}
		objs[i] = etf.Tuple{key, val}
	}
	return objs
}

func compileText(tb testing.TB, s string) *Spec {
	tb.Helper()
	t, err := etf.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := Compile(t)
	if err != nil {
		tb.Fatal(err)
	}
	return spec
}

// hotSpecs are the shapes a scan runs per object; none may allocate on an
// object it rejects.
var hotSpecs = map[string]string{
	"head-mismatch":    `[{{<<"nope">>,'_'},[],['$_']}]`,
	"repeated-var":     `[{{'$1','$1'},[],['$_']}]`,
	"guard-byte":       `[{{'$1','$2'},[{'==',{binary_part,'$2',0,1},<<"#">>}],['$_']}]`,
	"guard-byte-gt":    `[{{'_','$2'},[{'>',{binary_part,'$2',{{3,1}}},<<"z">>}],['$_']}]`,
	"guard-element":    `[{'$1',[{'=:=',{element,1,'$1'},<<"x">>}],['$_']}]`,
	"guard-andalso":    `[{{'$1','$2'},[{'andalso',{is_binary,'$2'},{'>',{byte_size,'$2'},200}}],['$$']}]`,
	"guard-size-arith": `[{{'$1','$2'},[{'>',{'+',{byte_size,'$1'},{byte_size,'$2'}},500}],['$$']}]`,
}

// TestRunRejectAllocs: Run allocates nothing for an object the spec
// rejects, in the head or in a guard.
func TestRunRejectAllocs(t *testing.T) {
	objs := benchObjects(64)
	for name, text := range hotSpecs {
		s := compileText(t, text)
		i := 0
		allocs := testing.AllocsPerRun(200, func() {
			if _, ok := s.Run(objs[i%len(objs)]); ok {
				t.Fatalf("%s matched %v", name, objs[i%len(objs)])
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per rejected object, want 0", name, allocs)
		}
	}
}

func BenchmarkRun(b *testing.B) {
	objs := benchObjects(1024)
	specs := map[string]string{
		"guard-byte-match": `[{{'$1','$2'},[{'==',{binary_part,'$2',0,1},<<"a">>}],['$_']}]`,
	}
	for k, v := range hotSpecs {
		specs[k] = v
	}
	for name, text := range specs {
		s := compileText(b, text)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.Run(objs[i%len(objs)])
			}
		})
	}
}
