package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/dets"
)

// TestPeersStores checks that every system's store gives the answers the
// peer comparison counts on (it fails the comparison otherwise, but only
// after minutes): every lookup finds its objects, a bag key its four (the
// last key fewer), a scan sees each object once, and a durable write
// survives a reopen. Skipped unless BENCH_PEERS=1 or BENCH_COMPARE=1.
func TestPeersStores(t *testing.T) {
	if os.Getenv("BENCH_PEERS") != "1" && os.Getenv("BENCH_COMPARE") != "1" {
		t.Skip("bench: set BENCH_PEERS=1 (or use ./run.sh peers) to check the peer stores")
	}
	const n = 301 // the bag's last key holds one object
	set, bag := NewDataset(n, SetLayout), NewDataset(n, BagLayout)
	if bag.Want(LookupIndex(0, 1)) != BagWidth {
		t.Fatalf("bag key 0 should hold %d objects", BagWidth)
	}
	for _, sys := range PeerSystems() {
		t.Run(sys.Name, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range []*Dataset{set, bag} {
				path := filepath.Join(dir, "store")
				if d == bag {
					path = filepath.Join(dir, "bag")
				}
				if err := buildStore(sys, path, d); err != nil {
					t.Fatal(err)
				}
				s, err := sys.Open(path, d.Layout, Fast)
				if err != nil {
					t.Fatal(err)
				}
				short := 0
				for j := range d.N {
					got, err := s.Get(d, j)
					if err != nil || got != d.Want(j) {
						t.Fatalf("layout %d lookup %d: %d objects (%v), want %d", d.Layout, j, got, err, d.Want(j))
					}
					if got < BagWidth {
						short++
					}
				}
				if d == bag && short == 0 {
					t.Error("no bag lookup hit the short last key")
				}
				if got, err := s.Scan(); err != nil || got != n {
					t.Fatalf("layout %d scan: %d objects (%v), want %d", d.Layout, got, err, n)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if size, err := DiskSize(path); err != nil || size == 0 {
					t.Fatalf("size %d, %v", size, err)
				}
				if sys.Name == "godets" && d == set {
					tab, err := dets.Open(path, dets.Options{ReadOnly: true})
					if err != nil {
						t.Fatal(err)
					}
					got, err := rawTraversal(tab)
					tab.Close()
					if err != nil || got != n {
						t.Fatalf("%s: %d objects (%v), want %d", rawTraversalName(), got, err, n)
					}
				}
			}
			extra := NewDataset(n+1, SetLayout)
			path := filepath.Join(dir, "store")
			s, err := sys.Open(path, SetLayout, Durable)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(extra, n); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = sys.Open(path, SetLayout, Fast); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got, err := s.Scan(); err != nil || got != n+1 {
				t.Fatalf("after a durable put and a reopen: %d objects (%v), want %d", got, err, n+1)
			}
		})
	}
}
