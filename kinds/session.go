package kinds

import (
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

// WithExclusiveSet runs fn inside an exclusive session on the set table at
// path, as Gleam's set.with_exclusive_table does: it takes the
// cross-process lock, opens the table (creating it if needed), runs fn with
// a typed handle, closes the table and releases the lock. The error is
// exclusive.With's: fn's own error comes back wrapped as a callback
// failure, so errors.Is(err, ErrNotFound) and friends still work.
//
// A zero opts.Table.Kind becomes dets.Set and a zero opts.Table.KeyPos 1;
// any other kind or key position fails with ErrTableMismatch before the
// lock is taken, as do codecs without both functions. An existing file of another
// kind fails to open. The handle must not be used after fn returns.
//
// Keep a read-modify-write sequence inside one session; releasing the lock
// between the read and the write permits lost updates.
func WithExclusiveSet[K, V any](path string, opts exclusive.Options, key Codec[K], value Codec[V], fn func(*Set[K, V]) error) error {
	if err := sessionOptions(&opts, dets.Set, key.valid() && value.valid()); err != nil {
		return err
	}
	return exclusive.With(path, opts, func(t *dets.Table) error {
		s, err := NewSet(t, key, value)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

// WithExclusiveBag is WithExclusiveSet for a bag table and a Bag handle.
func WithExclusiveBag[K, V any](path string, opts exclusive.Options, key Codec[K], value Codec[V], fn func(*Bag[K, V]) error) error {
	if err := sessionOptions(&opts, dets.Bag, key.valid() && value.valid()); err != nil {
		return err
	}
	return exclusive.With(path, opts, func(t *dets.Table) error {
		s, err := NewBag(t, key, value)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

// WithExclusiveDuplicateBag is WithExclusiveSet for a duplicate_bag table
// and a DuplicateBag handle.
func WithExclusiveDuplicateBag[K, V any](path string, opts exclusive.Options, key Codec[K], value Codec[V], fn func(*DuplicateBag[K, V]) error) error {
	if err := sessionOptions(&opts, dets.DuplicateBag, key.valid() && value.valid()); err != nil {
		return err
	}
	return exclusive.With(path, opts, func(t *dets.Table) error {
		s, err := NewDuplicateBag(t, key, value)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

// sessionOptions fixes the table options for a typed session, refusing
// what no typed handle can serve before any lock is taken.
func sessionOptions(opts *exclusive.Options, kind dets.Kind, codecsOK bool) error {
	if !codecsOK {
		return fmt.Errorf("%w: key or value codec lacks Encode or Decode", ErrTableMismatch)
	}
	if p := opts.Table.KeyPos; p != 0 && p != 1 {
		return fmt.Errorf("%w: key position %d requested, typed handles need 1", ErrTableMismatch, p)
	}
	if k := opts.Table.Kind; k != 0 && k != kind {
		return fmt.Errorf("%w: kind %v requested, the handle needs %v", ErrTableMismatch, k, kind)
	}
	opts.Table.Kind = kind
	opts.Table.KeyPos = 1
	return nil
}
