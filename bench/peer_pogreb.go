package bench

import (
	"errors"
	"io"
	"log"

	"github.com/akrylysov/pogreb"
)

func init() { pogreb.SetLogger(log.New(io.Discard, "", 0)) } // recovery notes

// pogreb: a hash index, so it has no ordered keys and no prefix scan. Fast
// is BackgroundSyncInterval 0 (no automatic sync); Durable is -1, a Sync
// after every write.
func pogrebSystem() System {
	return System{
		Name:  "pogreb",
		Modes: "fast: BackgroundSyncInterval 0 (no sync); durable: BackgroundSyncInterval -1 (Sync after each write)",
		Open: func(path string, _ Layout, dur Durability) (Store, error) {
			opts := &pogreb.Options{}
			if dur == Durable {
				opts.BackgroundSyncInterval = -1
			}
			db, err := pogreb.Open(path, opts)
			if err != nil {
				return nil, err
			}
			return &pogrebStore{db: db}, nil
		},
	}
}

type pogrebStore struct {
	db  *pogreb.DB
	key [KeySize + 1]byte // a bag's key‖seq, probed one seq at a time
}

func (s *pogrebStore) Put(d *Dataset, i int) error { return s.db.Put(d.Keys[i], d.Values[i]) }

// Get of a bag key probes key‖0, key‖1, ... until a miss: without ordered
// keys that is how a reader finds every object of a key.
func (s *pogrebStore) Get(d *Dataset, j int) (int, error) {
	if d.Layout == SetLayout {
		v, err := s.db.Get(d.Lookups[j])
		if v == nil {
			return 0, err
		}
		return 1, err
	}
	copy(s.key[:], d.Lookups[j])
	n := 0
	for seq := range 256 {
		s.key[KeySize] = byte(seq)
		v, err := s.db.Get(s.key[:])
		if err != nil || v == nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *pogrebStore) Scan() (int, error) {
	it := s.db.Items()
	n := 0
	for {
		_, _, err := it.Next()
		if errors.Is(err, pogreb.ErrIterationDone) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func (s *pogrebStore) Sync() error  { return s.db.Sync() }
func (s *pogrebStore) Close() error { return s.db.Close() }
