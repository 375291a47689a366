package kinds

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sync"
	"unsafe"

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

// updateCounter bumps element 2 of the object under key; an absent key is
// ErrNotFound for the handles.
func updateCounter(t *dets.Table, key etf.Term, incr int64) (etf.Term, error) {
	n, err := t.UpdateCounter(key, 2, incr)
	if errors.Is(err, dets.ErrNoSuchKey) {
		return nil, ErrNotFound
	}
	return n, err
}

// counterLocks serialize the typed counter updates of a table, so that the
// range check and the write are one step for them. Striped by the table's
// address rather than kept per table, so that nothing outlives a table.
var counterLocks [64]sync.Mutex

func counterLock(t *dets.Table) *sync.Mutex {
	h := uint64(uintptr(unsafe.Pointer(t)))
	h ^= h >> 17
	h *= 0x9e3779b97f4a7c15
	return &counterLocks[h>>58]
}

// counterValue is the integer at element 2 of a stored object.
func counterValue(obj etf.Term) (etf.Term, bool) {
	tup, ok := obj.(etf.Tuple)
	if !ok || len(tup) != objectArity {
		return nil, false
	}
	switch tup[1].(type) {
	case etf.Int, *etf.BigInt:
		return tup[1], true
	}
	return nil, false
}

// addCounter is cur + incr as the engine computes it: an integer term,
// a bignum when it leaves the int64 range.
func addCounter(cur etf.Term, incr int64) etf.Term {
	switch v := cur.(type) {
	case etf.Int:
		s := int64(v) + incr
		if (incr > 0 && s < int64(v)) || (incr < 0 && s > int64(v)) {
			return etf.NewBigInt(new(big.Int).Add(big.NewInt(int64(v)), big.NewInt(incr)))
		}
		return etf.Int(s)
	case *etf.BigInt:
		return etf.NewBigInt(new(big.Int).Add(v.Big(), big.NewInt(incr)))
	}
	return nil
}

// undoCounter subtracts incr again. -math.MinInt64 is no int64, so that
// increment is taken back in two steps.
func undoCounter(t *dets.Table, key etf.Term, incr int64) error {
	if incr == math.MinInt64 {
		if _, err := t.UpdateCounter(key, 2, math.MaxInt64); err != nil {
			return err
		}
		incr = -1
	}
	_, err := t.UpdateCounter(key, 2, -incr)
	return err
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
