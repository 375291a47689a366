package bench

import (
	"bytes"
	"errors"

	bolt "go.etcd.io/bbolt"
)

var boltBucket = []byte("t")

// bbolt: one transaction per call. Fast is Options.NoSync (no fsync per
// commit); Durable is the default, an fdatasync per committed Update.
func bboltSystem() System {
	return System{
		Name:  "bbolt",
		Modes: "fast: NoSync (no fsync per commit); durable: default, fdatasync per Update",
		Open: func(path string, _ Layout, dur Durability) (Store, error) {
			db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: dur == Fast})
			if err != nil {
				return nil, err
			}
			// The bucket exists after the first open; looking first keeps
			// an open of an existing file free of a write transaction.
			var have bool
			db.View(func(tx *bolt.Tx) error { have = tx.Bucket(boltBucket) != nil; return nil })
			if !have {
				err = db.Update(func(tx *bolt.Tx) error {
					_, err := tx.CreateBucketIfNotExists(boltBucket)
					return err
				})
			}
			if err != nil {
				db.Close()
				return nil, err
			}
			return &bboltStore{db: db}, nil
		},
	}
}

type bboltStore struct{ db *bolt.DB }

var errBoltNoBucket = errors.New("bbolt: bucket missing")

func (s *bboltStore) Put(d *Dataset, i int) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(boltBucket).Put(d.Keys[i], d.Values[i])
	})
}

func (s *bboltStore) Get(d *Dataset, j int) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		if b == nil {
			return errBoltNoBucket
		}
		if d.Layout == SetLayout {
			if b.Get(d.Lookups[j]) != nil {
				n = 1
			}
			return nil
		}
		prefix := d.Lookups[j]
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}

func (s *bboltStore) Scan() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		if b == nil {
			return errBoltNoBucket
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}

func (s *bboltStore) Sync() error  { return s.db.Sync() }
func (s *bboltStore) Close() error { return s.db.Close() }
