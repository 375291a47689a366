package kinds

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/internal/testutil/tabletest"
)

// badRows are stored objects that a String/Int handle cannot decode, each
// with what Rows must report about it.
var badRows = []struct {
	obj        etf.Term
	key        etf.Term // RowError.Key
	keyDecoded string   // Row.Key, when it decoded
	path       string   // the DecodeError's Path
}{
	{etf.Tuple{etf.Binary("bad value"), etf.Binary("x")}, etf.Binary("bad value"), "bad value", "value"},
	{etf.Tuple{etf.Atom("atomkey"), etf.Int(5)}, etf.Atom("atomkey"), "", "key"},
	{etf.Tuple{etf.Binary("wide"), etf.Int(1), etf.Int(2)}, etf.Binary("wide"), "wide", "object"},
	{etf.Tuple{etf.Binary("huge"), etf.NewUint(math.MaxUint64)}, etf.Binary("huge"), "huge", "value"},
}

// TestRowsReportsBadRowsAndGoesOn: among good objects, every undecodable
// one yields its own *RowError (with the key when it decodes) and the
// iteration still yields every good object, for all three kinds.
func TestRowsReportsBadRowsAndGoesOn(t *testing.T) {
	for _, kind := range []dets.Kind{dets.Set, dets.Bag, dets.DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			tab := openTable(t, kind, 1)
			want := map[string]int64{}
			for i := range 50 {
				k := fmt.Sprintf("k%02d", i)
				must(t, tab.Insert(etf.Tuple{etf.Binary(k), etf.Int(i)}))
				want[k] = int64(i)
			}
			for _, b := range badRows {
				must(t, tab.Insert(b.obj))
			}
			var rows func(yield func(Row[string, int64], error) bool)
			switch kind {
			case dets.Set:
				s, err := NewSet(tab, String, Int)
				must(t, err)
				rows = s.Rows()
			case dets.Bag:
				s, err := NewBag(tab, String, Int)
				must(t, err)
				rows = s.Rows()
			default:
				s, err := NewDuplicateBag(tab, String, Int)
				must(t, err)
				rows = s.Rows()
			}
			got := map[string]int64{}
			bad := map[string]*RowError{}
			for row, err := range rows {
				if err == nil {
					got[row.Key] = row.Value
					continue
				}
				var re *RowError
				if !errors.As(err, &re) || !errors.Is(err, ErrDecode) {
					t.Fatalf("error %v is not a *RowError matching ErrDecode", err)
				}
				if code := exclusive.Code(err); code != "decode_failed" {
					t.Errorf("exclusive.Code(%v) = %q", err, code)
				}
				if re.KeyDecoded != (row.Key != "") {
					t.Errorf("%v: KeyDecoded %v but Row.Key %q", err, re.KeyDecoded, row.Key)
				}
				if row.Value != 0 {
					t.Errorf("%v: a bad row came with the value %d", err, row.Value)
				}
				bad[etf.Format(re.Key)] = re
				if row.Key != "" {
					bad[etf.Format(re.Key)+" as "+row.Key] = re
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d good rows yielded, want %d", len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("row %s = %d, want %d", k, got[k], v)
				}
			}
			for _, b := range badRows {
				re := bad[etf.Format(b.key)]
				if re == nil {
					t.Fatalf("no RowError for %v", b.obj)
				}
				var de *DecodeError
				if !errors.As(re, &de) || de.Path != b.path {
					t.Errorf("%v: cause %v, want a DecodeError at %q", b.obj, re.Err, b.path)
				}
				if b.keyDecoded != "" && bad[etf.Format(b.key)+" as "+b.keyDecoded] == nil {
					t.Errorf("%v: Row.Key was not %q", b.obj, b.keyDecoded)
				}
				if !strings.Contains(re.Error(), "row with key "+etf.Format(b.key)+": ") {
					t.Errorf("message %q does not name the key", re.Error())
				}
			}
		})
	}
}

// TestRowsStorageErrorEnds: a storage error is yielded once, is no
// RowError, and ends the iteration.
func TestRowsStorageErrorEnds(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, Int)
	must(t, err)
	must(t, s.Insert("a", 1))
	must(t, tab.Close())
	n := 0
	for _, err := range s.Rows() {
		n++
		var re *RowError
		if err == nil || errors.As(err, &re) || errors.Is(err, ErrDecode) {
			t.Fatalf("Rows of a closed table yielded %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("Rows of a closed table yielded %d times, want once", n)
	}
}

// TestRowsBreak: breaking out of the loop stops the iteration.
func TestRowsBreak(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, Int)
	must(t, err)
	for i := range 10 {
		must(t, s.Insert(fmt.Sprint(i), int64(i)))
	}
	n := 0
	for range s.Rows() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d rows after break", n)
	}
}

// TestRowsChangesDuringLoop: the loop body may delete and insert, as with
// dets.Table.All: an object present throughout is seen exactly once (the
// table has more slots than keys, so it cannot grow). Objects deleted or
// inserted meanwhile may or may not be seen.
func TestRowsChangesDuringLoop(t *testing.T) {
	path := t.TempDir() + "/changes.dets"
	tab := tabletest.OpenT(t, path, dets.Options{MinSlots: 4096})
	s, err := NewSet(tab, String, Int)
	must(t, err)
	const n = 1000
	for i := range n {
		must(t, s.Insert(fmt.Sprintf("stable%04d", i), int64(i)))
		must(t, s.Insert(fmt.Sprintf("doomed%04d", i), int64(i)))
	}
	seen := map[string]int{}
	deleted := map[string]bool{}
	inserted := 0
	for row, err := range s.Rows() {
		must(t, err)
		seen[row.Key]++
		if strings.HasPrefix(row.Key, "stable") {
			// Delete a doomed key not seen yet, and insert a new one.
			for i := range n {
				k := fmt.Sprintf("doomed%04d", (int(row.Value)+i)%n)
				if seen[k] == 0 && !deleted[k] {
					must(t, s.Delete(k))
					deleted[k] = true
					break
				}
			}
			must(t, s.Insert(fmt.Sprintf("new%04d", inserted), -1))
			inserted++
		}
	}
	if info, _ := tab.Info(); info.NoSlots.Next != 4096 {
		t.Fatalf("the table grew to %d slots", info.NoSlots.Next)
	}
	for i := range n {
		if k := fmt.Sprintf("stable%04d", i); seen[k] != 1 {
			t.Fatalf("%s seen %d times, want once", k, seen[k])
		}
	}
	if len(deleted) == 0 || inserted == 0 {
		t.Fatal("the loop changed nothing")
	}
}

// TestAllNilErrpPanics: All with nowhere to report an error refuses at
// once instead of yielding nothing.
func TestAllNilErrpPanics(t *testing.T) {
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, Int)
	must(t, err)
	must(t, s.Insert("a", 1))
	defer func() {
		if r := recover(); r != errpNil {
			t.Fatalf("All(nil) recovered %v, want the errpNil panic", r)
		}
	}()
	n := 0
	for range s.All(nil) {
		n++
	}
	t.Fatalf("All(nil) yielded %d pairs and did not panic", n)
}

// TestErrorCodes: kinds errors give exclusive.Code their own codes and
// a path-free sentence, wrapped or not.
func TestErrorCodes(t *testing.T) {
	tab := openTable(t, dets.Bag, 1)
	_, mismatch := NewSet(tab, String, Int)
	bag, err := NewBag(tab, String, Float)
	must(t, err)
	encode := bag.Insert("k", math.NaN())
	must(t, tab.Insert(etf.Tuple{etf.Binary("k"), etf.Int(1)}))
	_, decode := bag.Lookup("k")
	set := openTable(t, dets.Set, 1)
	s, err := NewSet(set, String, Int)
	must(t, err)
	_, notFound := s.Lookup("absent")
	must(t, s.Insert("n", math.MaxInt64))
	_, outOfRange := s.UpdateCounter("n", 1)
	for _, tc := range []struct {
		err  error
		code string
	}{
		{notFound, "not_found"},
		{fmt.Errorf("cache: %w", notFound), "not_found"},
		{decode, "decode_failed"},
		{ErrDecode, "decode_failed"},
		{encode, "encode_failed"},
		{ErrEncode, "encode_failed"},
		{mismatch, "table_mismatch"},
		{outOfRange, "out_of_range"},
		{ErrOutOfRange, "out_of_range"},
		{&RowError{Key: etf.Binary("k"), Err: decode}, "decode_failed"},
	} {
		if got := exclusive.Code(tc.err); got != tc.code {
			t.Errorf("exclusive.Code(%v) = %q, want %q", tc.err, got, tc.code)
		}
		var ce exclusive.CodedError
		if !errors.As(tc.err, &ce) {
			t.Fatalf("%v is not an exclusive.CodedError", tc.err)
		}
		if m := ce.SafeMessage(); m == "" || strings.Contains(m, "/") || strings.Contains(m, "kinds:") {
			t.Errorf("SafeMessage of %v = %q", tc.err, m)
		}
	}
	for _, sentinel := range []error{ErrNotFound, ErrDecode, ErrEncode, ErrTableMismatch, ErrOutOfRange} {
		if !strings.HasPrefix(sentinel.Error(), "kinds: ") {
			t.Errorf("sentinel message %q", sentinel)
		}
	}
	if !errors.Is(decode, ErrDecode) || !errors.Is(encode, ErrEncode) || !errors.Is(mismatch, ErrTableMismatch) || !errors.Is(notFound, ErrNotFound) {
		t.Error("errors.Is no longer matches the sentinels")
	}
}
