package kinds

import (
	"errors"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// A copy of a built-in codec whose Encode or Decode the caller replaced
// must run the caller's function. The copy kept the built-in's fast paths
// and the handles preferred them: a key the caller's Encode would have
// lowered was stored as given, and a value the caller's Decode rejects
// came back with no error.
func TestReplacedFunctionsOfABuiltinRun(t *testing.T) {
	lower := String
	lower.Encode = func(s string) (etf.Term, error) { return etf.Binary(strings.ToLower(s)), nil }
	nonEmpty := String
	nonEmpty.Decode = func(x etf.Term) (string, error) {
		s, err := String.Decode(x)
		if err == nil && s == "" {
			return "", &DecodeError{Expected: "non-empty binary", Got: "empty binary"}
		}
		return s, err
	}
	if lower.trusted().appendRaw != nil || lower.trusted().borrow != nil {
		t.Error("a replaced Encode kept the encoding fast paths")
	}
	if lower.trusted().readRaw == nil || !lower.trusted().binString {
		t.Error("an untouched Decode lost its fast paths")
	}
	if nonEmpty.trusted().readRaw != nil || nonEmpty.trusted().adopt != nil || nonEmpty.trusted().binString {
		t.Error("a replaced Decode kept the decoding fast paths")
	}
	if nonEmpty.trusted().appendRaw == nil {
		t.Error("an untouched Encode lost its fast paths")
	}

	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, lower, nonEmpty)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Insert("ABC", ""); err != nil {
		t.Fatal(err)
	}
	if objs, err := tab.Lookup(etf.Binary("abc")); err != nil || len(objs) != 1 {
		t.Fatalf("the caller's Encode did not run: under abc %v (%v)", objs, err)
	}
	if _, err := s.Lookup("ABC"); !errors.Is(err, ErrDecode) {
		t.Fatalf("Lookup: %v, want the caller's Decode to reject the empty value", err)
	}
	var allErr error
	for range s.All(&allErr) {
		t.Fatal("All yielded a row the caller's Decode rejects")
	}
	if !errors.Is(allErr, ErrDecode) {
		t.Fatalf("All: %v, want the caller's Decode to reject the empty value", allErr)
	}
	for _, err := range s.Rows() {
		if !errors.Is(err, ErrDecode) {
			t.Fatalf("Rows: %v, want the caller's Decode to reject the empty value", err)
		}
	}
	if ok, err := s.Member("aBc"); err != nil || !ok {
		t.Fatalf("Member by the caller's Encode: %v, %v", ok, err)
	}

	// Inside a combinator, too.
	pair, err := NewSet(tab, lower, Tuple2(nonEmpty, lower))
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Insert("K", Pair[string, string]{"x", "Y"}); err != nil {
		t.Fatal(err)
	}
	objs, err := tab.Lookup(etf.Binary("k"))
	if err != nil || len(objs) != 1 || !etf.Equal(objs[0], etf.Tuple{etf.Binary("k"), etf.Tuple{etf.Binary("x"), etf.Binary("y")}}) {
		t.Fatalf("Tuple2 over replaced codecs stored %v (%v)", objs, err)
	}
	if err := tab.Insert(etf.Tuple{etf.Binary("e"), etf.Tuple{etf.Binary(""), etf.Binary("y")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pair.Lookup("E"); !errors.Is(err, ErrDecode) {
		t.Fatalf("Tuple2 Lookup: %v, want the caller's Decode to reject the empty element", err)
	}
}

// Record's tag is any atom: "" is the empty atom (Erlang's record of that
// name stores the empty atom and A), not "no tag", and a tag that is no atom fails every
// Encode with ErrEncode instead of handing the engine a bad term.
func TestRecordTags(t *testing.T) {
	type one struct{ A int64 }
	field := Field(Int, func(o *one) *int64 { return &o.A })
	empty := Record("", field)
	got, err := empty.Encode(one{7})
	if want := (etf.Tuple{etf.Atom(""), etf.Int(7)}); err != nil || !etf.Equal(got, want) {
		t.Fatalf("Record(\"\") encodes %v (%v), want %v", got, err, want)
	}
	if _, err := empty.Decode(etf.Tuple{etf.Int(7)}); !errors.Is(err, ErrDecode) {
		t.Fatalf("Record(\"\") decoded a one-element tuple: %v", err)
	}
	if v, err := empty.Decode(etf.Tuple{etf.Atom(""), etf.Int(7)}); err != nil || v.A != 7 {
		t.Fatalf("Record(\"\") decode: %v, %v", v, err)
	}
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Insert("k", one{7}); err != nil {
		t.Fatal(err)
	}
	objs, err := tab.Lookup(etf.Binary("k"))
	if want := (etf.Tuple{etf.Binary("k"), etf.Tuple{etf.Atom(""), etf.Int(7)}}); err != nil || len(objs) != 1 || !etf.Equal(objs[0], want) {
		t.Fatalf("stored %v (%v), want %v", objs, err, want)
	}
	if v, err := s.Lookup("k"); err != nil || v.A != 7 {
		t.Fatalf("Lookup: %v, %v", v, err)
	}
	for _, tag := range []string{"\xff", strings.Repeat("a", 256)} {
		bad := Record(tag, field)
		if _, err := bad.Encode(one{1}); !errors.Is(err, ErrEncode) {
			t.Errorf("tag %q: Encode gave %v, want ErrEncode", tag, err)
		}
		bs, err := NewSet(tab, String, bad)
		if err != nil {
			t.Fatal(err)
		}
		if err := bs.Insert("b", one{1}); !errors.Is(err, ErrEncode) {
			t.Errorf("tag %q: Insert gave %v, want ErrEncode", tag, err)
		}
	}
}

type renamedUser struct {
	Name string
	Age  int64
}

// A Record whose Encode or Decode the caller replaced with another
// Record's runs the replacement. Both closures have the same code, so the
// replacement used to pass for the original: the handle kept the original
// Record's direct paths, stored {user,...} where the replacement writes
// {person,...}, and read back a value the replacement's Decode rejects.
func TestReplacedByAnotherRecordsFunctionsRun(t *testing.T) {
	fields := []TupleField[renamedUser]{
		Field(String, func(u *renamedUser) *string { return &u.Name }),
		Field(Int, func(u *renamedUser) *int64 { return &u.Age }),
	}
	user, person := Record("user", fields...), Record("person", fields...)

	writes := user
	writes.Encode = person.Encode
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, writes)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Insert("k", renamedUser{"ann", 7}); err != nil {
		t.Fatal(err)
	}
	objs, err := tab.Lookup(etf.Binary("k"))
	if err != nil || len(objs) != 1 {
		t.Fatalf("lookup: %v, %v", objs, err)
	}
	want := etf.Tuple{etf.Atom("person"), etf.Binary("ann"), etf.Int(7)}
	if got := objs[0].(etf.Tuple)[1]; !etf.Equal(got, want) {
		t.Fatalf("stored %s, want %s: the replaced Encode did not run", etf.Format(got), etf.Format(want))
	}

	reads := user
	reads.Decode = person.Decode
	tab2 := openTable(t, dets.Set, 1)
	stored := etf.Tuple{etf.Atom("user"), etf.Binary("ann"), etf.Int(7)}
	if err := tab2.Insert(etf.Tuple{etf.Binary("k"), stored}); err != nil {
		t.Fatal(err)
	}
	s2, err := NewSet(tab2, String, reads)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s2.Lookup("k"); !errors.Is(err, ErrDecode) {
		t.Fatalf("Lookup gave %+v, %v; want ErrDecode: the replaced Decode did not run", v, err)
	}
	for _, err := range s2.Rows() {
		if !errors.Is(err, ErrDecode) {
			t.Fatalf("Rows gave %v; want ErrDecode", err)
		}
	}
}
