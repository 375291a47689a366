package bench

import (
	"encoding/binary"
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// The engine workload. otp_driver.escript generates the same objects, so
// nothing has to cross between Go and Erlang:
//
//	key(i)   = <<i:128>>               16-byte binary
//	value(i) = 25 copies of <<i:32>>   100-byte binary
//	object   = {key(i), value(i)}      in a set, key position 1
//	lookups  = key((j*LookupStride) mod n) for j in 0..n-1
const (
	KeySize      = 16
	ValueSize    = 100
	LookupStride = 7919 // prime, coprime with every power of ten
)

// Key returns key(i).
func Key(i int) etf.Binary {
	k := make([]byte, KeySize)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return k
}

// Value returns value(i).
func Value(i int) etf.Binary {
	v := make([]byte, ValueSize)
	for off := 0; off < ValueSize; off += 4 {
		binary.BigEndian.PutUint32(v[off:], uint32(i))
	}
	return v
}

// Object returns {key(i), value(i)}.
func Object(i int) etf.Tuple { return etf.Tuple{Key(i), Value(i)} }

// LookupIndex returns the index of the j-th lookup in a table of n objects.
func LookupIndex(j, n int) int { return int(uint64(j) * LookupStride % uint64(n)) }

// Build creates a set at path holding objects 0..n-1, inserted one by one,
// and closes it.
func Build(path string, n int) error {
	t, err := dets.Open(path, dets.Options{Kind: dets.Set})
	if err != nil {
		return err
	}
	for i := range n {
		if err := t.Insert(Object(i)); err != nil {
			t.Close()
			return fmt.Errorf("bench: insert %d: %w", i, err)
		}
	}
	return t.Close()
}
