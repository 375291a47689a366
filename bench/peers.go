package bench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/godets/godets/etf"
)

// The peer comparison runs the engine workload through godets and through
// the Go key-value stores a Go developer would pick instead (bbolt, pogreb,
// pebble). Every system implements store over the same Dataset, so each
// picks the representation of the objects it takes (byte slices for the
// peers, prebuilt terms for godets) before the clock starts.

// Durability is the write mode a peer is opened in.
type Durability int

const (
	// Fast is each system's documented mode without an fsync per write:
	// bbolt NoSync, pogreb without background sync, pebble NoSync writes.
	Fast Durability = iota
	// Durable is each system's documented mode where a write is on the
	// disk when the call returns: bbolt's default (fsync per commit),
	// pogreb's Sync after the write, pebble's Sync writes.
	Durable
)

// Layout says how the objects are keyed.
type Layout int

const (
	// SetLayout: object i is {key(i), value(i)}, one per key.
	SetLayout Layout = iota
	// BagLayout: object i is {key(i/BagWidth), value(i)}: BagWidth objects
	// a key. The peers store it under key(i/BagWidth)‖seq, seq one byte.
	BagLayout
)

// BagWidth is the number of objects under one key of the bag workload.
const BagWidth = 4

// Dataset holds the objects of a workload of n objects in every form the
// systems take, built once so that no benchmark pays for it.
type Dataset struct {
	N      int
	Layout Layout

	Keys, Values [][]byte   // the peers' key and value of object i
	Objects      []etf.Term // godets: object i as a term
	Lookups      [][]byte   // the peers' j-th lookup key (a bag's: its prefix)
	LookupTerms  []etf.Term // godets: the j-th lookup key
	LookupStrs   []string   // typed godets: the j-th lookup key
}

// NewDataset builds the n objects of a workload of the given layout.
func NewDataset(n int, layout Layout) *Dataset {
	d := &Dataset{N: n, Layout: layout,
		Keys: make([][]byte, n), Values: make([][]byte, n), Objects: make([]etf.Term, n)}
	for i := range n {
		v := Value(i)
		d.Values[i] = v
		switch layout {
		case SetLayout:
			k := Key(i)
			d.Keys[i] = k
			d.Objects[i] = etf.Tuple{k, v}
		case BagLayout:
			k := Key(i / BagWidth)
			d.Keys[i] = append(k[:KeySize:KeySize], byte(i%BagWidth))
			d.Objects[i] = etf.Tuple{k, v}
		}
	}
	keys := d.Keys
	if layout == BagLayout {
		keys = make([][]byte, d.distinctKeys())
		for k := range keys {
			keys[k] = Key(k)
		}
	}
	d.Lookups = make([][]byte, n)
	d.LookupTerms = make([]etf.Term, n)
	d.LookupStrs = make([]string, n)
	for j := range n {
		k := keys[LookupIndex(j, len(keys))]
		if layout == SetLayout {
			k = k[:KeySize:KeySize]
		}
		d.Lookups[j] = k
		d.LookupTerms[j] = etf.Binary(k)
		d.LookupStrs[j] = string(k)
	}
	return d
}

// distinctKeys is the number of keys of the dataset.
func (d *Dataset) distinctKeys() int {
	if d.Layout == BagLayout {
		return (d.N + BagWidth - 1) / BagWidth
	}
	return d.N
}

// Want is the number of objects the j-th lookup must find.
func (d *Dataset) Want(j int) int {
	if d.Layout == SetLayout {
		return 1
	}
	k := LookupIndex(j, d.distinctKeys())
	return min(BagWidth, d.N-k*BagWidth)
}

// Store is one open table, database or key-value store.
type Store interface {
	// Put stores object i of d in one call (one transaction for bbolt).
	Put(d *Dataset, i int) error
	// Get performs the j-th lookup of d and returns the objects it found.
	Get(d *Dataset, j int) (int, error)
	// Scan visits every object once and returns how many it saw.
	Scan() (int, error)
	// Sync makes every write so far durable.
	Sync() error
	Close() error
}

// System is one engine under comparison.
type System struct {
	Name string
	// Modes says in words what Fast and Durable mean for it.
	Modes string
	// Open opens or creates the store at path (a file or a directory,
	// as the system keeps its data) for objects of the layout. A store
	// left by a killed writer is recovered (godets: repaired) on the way.
	Open func(path string, layout Layout, dur Durability) (Store, error)
}

// PeerSystems returns the systems of the peer comparison, godets first.
func PeerSystems() []System {
	return []System{godetsSystem(), bboltSystem(), pogrebSystem(), pebbleSystem()}
}

// SystemByName returns the system called name.
func SystemByName(name string) (System, error) {
	for _, s := range PeerSystems() {
		if s.Name == name {
			return s, nil
		}
	}
	return System{}, fmt.Errorf("bench: no system %q", name)
}

// DiskSize returns the bytes a store takes at path: a file's size, or the
// sum over a directory's files.
func DiskSize(path string) (int64, error) {
	var total int64
	err := filepath.WalkDir(path, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			total += fi.Size()
		}
		return err
	})
	return total, err
}

// CopyTree copies a file or a directory of files from src to dst, synced,
// so that a recovery starts from a copy at rest.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}
