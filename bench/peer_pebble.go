package bench

import (
	"errors"

	"github.com/cockroachdb/pebble"
)

// pebble: an LSM tree with a write-ahead log. Fast writes with
// pebble.NoSync; Durable with pebble.Sync (the WAL fsynced per write).
func pebbleSystem() System {
	return System{
		Name:  "pebble",
		Modes: "fast: Set with pebble.NoSync; durable: Set with pebble.Sync (WAL fsync per write)",
		Open: func(path string, _ Layout, dur Durability) (Store, error) {
			db, err := pebble.Open(path, &pebble.Options{Logger: quietLogger{}})
			if err != nil {
				return nil, err
			}
			wo := pebble.NoSync
			if dur == Durable {
				wo = pebble.Sync
			}
			return &pebbleStore{db: db, wo: wo}, nil
		},
	}
}

// quietLogger drops pebble's informational messages (WAL replay and the
// like) and keeps its fatal ones.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

type pebbleStore struct {
	db    *pebble.DB
	wo    *pebble.WriteOptions
	upper [KeySize]byte // a bag prefix's exclusive upper bound
	iterO pebble.IterOptions
}

func (s *pebbleStore) Put(d *Dataset, i int) error { return s.db.Set(d.Keys[i], d.Values[i], s.wo) }

func (s *pebbleStore) Get(d *Dataset, j int) (int, error) {
	if d.Layout == SetLayout {
		_, closer, err := s.db.Get(d.Lookups[j])
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return 1, closer.Close()
	}
	prefix := d.Lookups[j]
	copy(s.upper[:], prefix)
	for i := KeySize - 1; i >= 0; i-- { // prefix + 1, big-endian
		if s.upper[i]++; s.upper[i] != 0 {
			break
		}
	}
	s.iterO.LowerBound, s.iterO.UpperBound = prefix, s.upper[:]
	it, err := s.db.NewIter(&s.iterO)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}

func (s *pebbleStore) Scan() (int, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		_ = it.Value()
		n++
	}
	return n, it.Close()
}

// Sync fsyncs the WAL by logging an empty record with pebble.Sync.
func (s *pebbleStore) Sync() error  { return s.db.LogData(nil, pebble.Sync) }
func (s *pebbleStore) Close() error { return s.db.Close() }
