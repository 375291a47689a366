package kinds

import (
	"errors"
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// checkTable verifies that t can back a typed handle of the given kind.
func checkTable(t *dets.Table, want dets.Kind) error {
	info, err := t.Info()
	if err != nil {
		return err
	}
	if info.Kind != want {
		return fmt.Errorf("%w: table is a %v, the handle needs a %v", ErrTableMismatch, info.Kind, want)
	}
	if info.KeyPos != 1 {
		return fmt.Errorf("%w: key position is %d, typed handles need 1", ErrTableMismatch, info.KeyPos)
	}
	return nil
}

func tableSize(t *dets.Table) (int, error) {
	info, err := t.Info()
	if err != nil {
		return 0, err
	}
	return info.Size, nil
}

// updateCounter bumps element 2 of the object under key when accept takes
// the result; an absent key is ErrNotFound for the handles.
func updateCounter(t *dets.Table, key etf.Term, incr int64, accept func(etf.Term) error) (etf.Term, error) {
	n, err := t.UpdateCounterIf(key, 2, incr, accept)
	if errors.Is(err, dets.ErrNoSuchKey) {
		return nil, ErrNotFound
	}
	return n, err
}

// outOfRange turns the value codec's refusal of a counter result into an
// *OutOfRangeError.
func outOfRange(result etf.Term, err error) error {
	e := &OutOfRangeError{Result: etf.Format(result), Expected: "another value"}
	var de *DecodeError
	if errors.As(err, &de) {
		e.Expected = de.Expected
	}
	return e
}
