package dets

import (
	"errors"
	"os"
	"testing"

	"github.com/godets/godets/etf"
)

// TestNativeLookupDamagedNeighbour: a lookup checks the terms of only the
// key it looks for (§6.3), but the checksum of every record of the
// bucket, so a damaged record of another key in the same bucket is
// reported, never answered around: its key may be the one looked up.
func TestNativeLookupDamagedNeighbour(t *testing.T) {
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			path := tmpFile(t, "neighbour.dets")
			tab := openT(t, path, Options{Kind: kind, Format: Native})
			for i := range 1000 {
				must(t, tab.Insert(tup(etf.Int(int64(i)), bin("value"))))
			}
			// Two keys of one bucket: the first record is damaged, the
			// other key is looked up.
			tab.mu.Lock()
			slot := tab.slotFor(tab.hashKey(etf.Int(7)))
			e, err := tab.entry(slot)
			tab.mu.Unlock()
			must(t, err)
			var other etf.Term
			for i := range 1000 {
				k := etf.Int(int64(i))
				if tab.slotFor(tab.hashKey(k)) == slot {
					other = k // the last key of the bucket
				}
			}
			must(t, tab.Close())
			raw := readFileT(t, path)
			first := e.ptr + nativeBucketHeader
			enc, _, err := decodeNativeObject(path, raw[first:], first)
			must(t, err)
			if k := keySpan(enc, 1); k == nil || etf.Equal(mustDecodeBody(t, k), other) {
				t.Fatalf("bucket of slot %d holds one key", slot)
			}
			raw[first+8+1+3] ^= 0x01 // inside the first record's key
			must(t, os.WriteFile(path, raw, 0o644))
			ro, err := Open(path, Options{ReadOnly: true}) // not openT: its Check would fail
			must(t, err)
			t.Cleanup(func() { ro.Close() })
			var ce *CorruptionError
			if _, err := ro.Lookup(other); !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Section != "object" {
				t.Fatalf("Lookup(%v) beside a damaged record: %v, want an object *CorruptionError", other, err)
			}
		})
	}
}

func mustDecodeBody(t *testing.T, b []byte) etf.Term {
	t.Helper()
	v, err := encodings.DecodeBody(b)
	must(t, err)
	return v
}

// TestNativeOpenAllocs: opening a closed native file allocates no more than
// opening the same objects' otp9 file (issue 19's open target): the header
// pages come from a pool, the root is read into that buffer, no part is
// read (§5.1: at the first access under it), and a log head that does not
// pass builds no error.
func TestNativeOpenAllocs(t *testing.T) {
	opens := map[Format]float64{}
	for _, f := range []Format{OTP9, Native} {
		path := tmpFile(t, "open.dets")
		tab := openT(t, path, Options{Format: f})
		for i := range 2000 {
			must(t, tab.Insert(benchObj(i)))
		}
		must(t, tab.Close())
		opens[f] = testing.AllocsPerRun(50, func() {
			ro, err := Open(path, Options{ReadOnly: true})
			must(t, err)
			must(t, ro.Close())
		})
	}
	if opens[Native] > opens[OTP9] {
		t.Fatalf("open of a closed file: native %v allocations, otp9 %v", opens[Native], opens[OTP9])
	}
}

// TestNativeFileSize: a small native table written in one session comes
// near its otp9 file: the checkpoint budget scales with the file (a
// quarter, at least 1 MiB), where a fixed 8 MiB kept every superseded
// bucket of a 10k table until Close (3.2 times otp9's file).
func TestNativeFileSize(t *testing.T) {
	const n = 10000
	sizes := map[Format]int{}
	for _, f := range []Format{OTP9, Native} {
		path := tmpFile(t, "size.dets")
		tab := openT(t, path, Options{Format: f})
		for i := range n {
			must(t, tab.Insert(benchObj(i)))
		}
		must(t, tab.Close())
		sizes[f] = len(readFileT(t, path))
	}
	t.Logf("%d objects: native %d bytes, otp9 %d", n, sizes[Native], sizes[OTP9])
	if float64(sizes[Native]) > 1.5*float64(sizes[OTP9]) {
		t.Fatalf("%d objects: native file %d bytes, more than 1.5 times otp9's %d", n, sizes[Native], sizes[OTP9])
	}
}
