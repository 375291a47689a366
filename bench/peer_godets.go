package bench

import (
	"fmt"

	"github.com/godets/godets/dets"
)

// godets: Fast is the default Durability (Ordered: no fsync per insert,
// the data fsynced before Close writes the closed header); Durable adds
// a Sync after every insert.
func godetsSystem() System {
	return System{
		Name:  "godets",
		Modes: "fast: default Durability (Ordered), fsync at Close only; durable: Sync after each insert",
		Open: func(path string, layout Layout, dur Durability) (Store, error) {
			kind := dets.Set
			if layout == BagLayout {
				kind = dets.Bag
			}
			t, err := dets.Open(path, dets.Options{Kind: kind, Repair: dets.AutoRepair})
			if err != nil {
				return nil, err
			}
			return &godetsStore{t: t, durable: dur == Durable}, nil
		},
	}
}

type godetsStore struct {
	t       *dets.Table
	durable bool
}

func (s *godetsStore) Put(d *Dataset, i int) error {
	if err := s.t.Insert(d.Objects[i]); err != nil {
		return err
	}
	if s.durable {
		return s.t.Sync()
	}
	return nil
}

func (s *godetsStore) Get(d *Dataset, j int) (int, error) {
	objs, err := s.t.Lookup(d.LookupTerms[j])
	return len(objs), err
}

func (s *godetsStore) Scan() (int, error) {
	n := 0
	for _, err := range s.t.All() {
		if err != nil {
			return n, fmt.Errorf("godets: scan: %w", err)
		}
		n++
	}
	return n, nil
}

func (s *godetsStore) Sync() error  { return s.t.Sync() }
func (s *godetsStore) Close() error { return s.t.Close() }
