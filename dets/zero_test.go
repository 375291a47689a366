package dets

import (
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

// tableCalls calls every exported method of *Table once and returns the
// errors it gave; an iterator gives every error it yields (and a non-error
// yield as an error). TestTableCallsComplete keeps the list whole.
var tableCalls = map[string]func(*Table) []error{
	"All":  func(t *Table) []error { return collect(t.All()) },
	"Keys": func(t *Table) []error { return collect(t.Keys()) },
	"Check": func(t *Table) []error {
		return []error{t.Check()}
	},
	"CheckReport": func(t *Table) []error {
		_, err := t.CheckReport()
		return []error{err}
	},
	"Close":            func(t *Table) []error { return []error{closeErr(t.Close())} },
	"Delete":           func(t *Table) []error { return []error{t.Delete(etf.Int(1))} },
	"DeleteAllObjects": func(t *Table) []error { return []error{t.DeleteAllObjects()} },
	"DeleteObject":     func(t *Table) []error { return []error{t.DeleteObject(tup(etf.Int(1)))} },
	"Recovery": func(t *Table) []error {
		_, _, err := t.Recovery()
		return []error{err}
	},
	"First": func(t *Table) []error {
		_, _, err := t.First()
		return []error{err}
	},
	"Info": func(t *Table) []error {
		_, err := t.Info()
		return []error{err}
	},
	"InitTable": func(t *Table) []error {
		return []error{t.InitTable(seqOf([]etf.Term{tup(etf.Int(1))}))}
	},
	"Insert": func(t *Table) []error { return []error{t.Insert(tup(etf.Int(1)))} },
	"InsertNew": func(t *Table) []error {
		_, err := t.InsertNew(tup(etf.Int(1)))
		return []error{err}
	},
	"Lookup": func(t *Table) []error {
		_, err := t.Lookup(etf.Int(1))
		return []error{err}
	},
	"Member": func(t *Table) []error {
		_, err := t.Member(etf.Int(1))
		return []error{err}
	},
	"Next": func(t *Table) []error {
		_, _, err := t.Next(etf.Int(1))
		return []error{err}
	},
	"Path": func(t *Table) []error { t.Path(); return []error{ErrClosed} }, // no error to give
	"Sync": func(t *Table) []error { return []error{t.Sync()} },
	"UpdateCounter": func(t *Table) []error {
		_, err := t.UpdateCounter(etf.Int(1), 2, 1)
		return []error{err}
	},
	"UpdateCounterIf": func(t *Table) []error {
		_, err := t.UpdateCounterIf(etf.Int(1), 2, 1, nil)
		return []error{err}
	},
}

// closeErr maps Close's nil on a closed table to ErrClosed, the answer
// every other method gives.
func closeErr(err error) error {
	if err == nil {
		return ErrClosed
	}
	return fmt.Errorf("Close of a closed table: %w", err)
}

func collect[T any](seq iter.Seq2[T, error]) []error {
	var errs []error
	for _, err := range seq {
		if err == nil {
			err = errors.New("yielded a value")
		}
		errs = append(errs, err)
	}
	return errs
}

func TestTableCallsComplete(t *testing.T) {
	typ := reflect.TypeFor[*Table]()
	var names []string
	for i := range typ.NumMethod() {
		names = append(names, typ.Method(i).Name)
	}
	var listed []string
	for name := range tableCalls {
		listed = append(listed, name)
	}
	slices.Sort(listed)
	if !slices.Equal(names, listed) {
		t.Fatalf("exported methods of *Table %v, tableCalls has %v", names, listed)
	}
}

// TestUnusableTable: every method of a nil, a zero and a closed Table
// returns ErrClosed (Close returns nil) and never panics; an iterator
// yields that error once.
func TestUnusableTable(t *testing.T) {
	closed := openT(t, tmpFile(t, "closed.dets"), Options{})
	must(t, closed.Insert(tup(etf.Int(1), etf.Int(2))))
	must(t, closed.Close())
	closedRO, err := Open(closed.Path(), Options{ReadOnly: true})
	must(t, err)
	must(t, closedRO.Close())
	for _, c := range []struct {
		name string
		tab  func() *Table
	}{
		{"nil", func() *Table { return nil }},
		{"zero", func() *Table { return new(Table) }},
		{"closed", func() *Table { return closed }},
		{"closed read-only", func() *Table { return closedRO }},
	} {
		for name, call := range tableCalls {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				errs := call(c.tab())
				if len(errs) != 1 || !errors.Is(errs[0], ErrClosed) {
					t.Fatalf("got %v, want one ErrClosed", errs)
				}
			})
		}
	}
	var zero Table
	if zero.Path() != "" || (*Table)(nil).Path() != "" {
		t.Fatal("Path of a table never opened is not empty")
	}
	if closed.Path() == "" {
		t.Fatal("Path of a closed table is empty")
	}
}
