package etf_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
)

// TestExportedSurface keeps the package's exported identifiers to the list
// in testdata/api.txt, so that the surface changes only on purpose: what
// only a storage engine needs stays behind Raw and RawBatch instead of
// joining the term-level functions. A deliberate change edits the list.
func TestExportedSurface(t *testing.T) {
	got := exportedSurface(t)
	b, err := os.ReadFile("testdata/api.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	slices.Sort(want)
	for _, s := range got {
		if !slices.Contains(want, s) {
			t.Errorf("exported but not in testdata/api.txt: %s", s)
		}
	}
	for _, s := range want {
		if !slices.Contains(got, s) {
			t.Errorf("in testdata/api.txt but not exported: %s", s)
		}
	}
	t.Logf("%d exported identifiers", len(got))
}

// exportedSurface lists the exported names declared by the package's
// non-test files: "func F", "type T", "const C", "var V" and "method T.M".
func exportedSurface(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, ".", notTest, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range pkgs["etf"].Files {
		for _, decl := range f.Decls {
			names = append(names, exportedNames(decl)...)
		}
	}
	slices.Sort(names)
	return names
}

func exportedNames(decl ast.Decl) []string {
	var names []string
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			break
		}
		if d.Recv == nil {
			names = append(names, "func "+d.Name.Name)
			break
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
			names = append(names, "method "+id.Name+"."+d.Name.Name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, "type "+s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						names = append(names, d.Tok.String()+" "+n.Name)
					}
				}
			}
		}
	}
	return names
}

// TestRawHasNoState: Raw's doc promises its calls cost what plain function
// calls cost, which holds while Raw carries nothing.
func TestRawHasNoState(t *testing.T) {
	if n := reflect.TypeFor[etf.Raw]().Size(); n != 0 {
		t.Fatalf("etf.Raw is %d bytes, want 0", n)
	}
}

// TestNewImproperListNilTail: a nil *ImproperList tail (a hand-built
// object may hold one) becomes the tail as it is, never a panic.
func TestNewImproperListNilTail(t *testing.T) {
	var nilTail *etf.ImproperList
	got, ok := etf.NewImproperList(nilTail, etf.Int(1)).(*etf.ImproperList)
	if !ok || len(got.Elems) != 1 || got.Tail != etf.Term(nilTail) {
		t.Fatalf("NewImproperList(nil *ImproperList, 1) = %#v", got)
	}
	if etf.NewImproperList(nilTail) != etf.Term(nilTail) {
		t.Fatal("no elements: the tail itself is not returned")
	}
}
