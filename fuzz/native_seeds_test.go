package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/testutil/tabletest"
)

// nativeSeed is one small native file of FuzzOpen's committed corpus.
type nativeSeed struct {
	name    string
	img     []byte
	objects int  // what a repairing open finds in it
	closed  bool // closed properly: NoRepair opens it
}

// smallNativeSeeds builds FuzzOpen's native seeds, a few KiB each in the
// sparse form: a closed file of each kind with a few objects, a file not
// closed (its writes in the log's head page only), one with a log tail
// past its head page (a Sync, then a log block of writes) and one of two
// segments.
func smallNativeSeeds() ([]nativeSeed, error) {
	var seeds []nativeSeed
	build := func(name string, kind dets.Kind, write func(*dets.Table) (int, error), closed bool, minSlots int) error {
		cfs := tabletest.NewMemFS()
		tab, err := dets.Open(path, dets.Options{Kind: kind, Format: dets.Native, FS: cfs, MinSlots: minSlots})
		if err != nil {
			return err
		}
		n, err := write(tab)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		img := cfs.Get(path) // the writer still open
		if err := tab.Close(); err != nil {
			return err
		}
		if closed {
			img = cfs.Get(path)
		}
		seeds = append(seeds, nativeSeed{name: name, img: img, objects: n, closed: closed})
		return nil
	}
	few := func(tab *dets.Table) (int, error) {
		for i := range 5 {
			if err := tab.Insert(etf.Tuple{etf.Int(i % 3), etf.Binary(fmt.Sprintf("object %d", i))}); err != nil {
				return 0, err
			}
		}
		info, err := tab.Info()
		return info.Size, err
	}
	for _, kind := range []dets.Kind{dets.Set, dets.Bag, dets.DuplicateBag} {
		if err := build("valid-native-"+kind.String(), kind, few, true, 0); err != nil {
			return nil, err
		}
	}
	if err := build("notclosed-native-set", dets.Set, few, false, 0); err != nil {
		return nil, err
	}
	logTail := func(tab *dets.Table) (int, error) {
		if _, err := few(tab); err != nil {
			return 0, err
		}
		if err := tab.Sync(); err != nil {
			return 0, err
		}
		for i := range 60 { // with the deletes, more records than a head page holds
			if err := tab.Insert(etf.Tuple{etf.Int(i % 40), etf.Int(i)}); err != nil {
				return 0, err
			}
			if i%9 == 0 {
				if err := tab.Delete(etf.Int(i % 13)); err != nil {
					return 0, err
				}
			}
		}
		info, err := tab.Info()
		return info.Size, err
	}
	if err := build("logtail-native-bag", dets.Bag, logTail, false, 0); err != nil {
		return nil, err
	}
	// Two segments, from MinSlots: a table grown by its inserts is at
	// least 1,025 keys, 128 KiB in this form (grownNative, added by
	// FuzzOpen itself).
	if err := build("twoseg-native-duplicate_bag", dets.DuplicateBag, few, true, 1024); err != nil {
		return nil, err
	}
	return seeds, nil
}

// grownNative is a native table grown past its 512 slots by its inserts,
// written by the last and left open: its log holds the growth steps.
func grownNative() ([]byte, error) {
	cfs := tabletest.NewMemFS()
	tab, err := dets.Open(path, dets.Options{Kind: dets.Set, Format: dets.Native, FS: cfs})
	if err != nil {
		return nil, err
	}
	defer tab.Close()
	for i := range 1100 { // growth at more than two keys a slot
		if err := tab.Insert(etf.Tuple{etf.Int(i)}); err != nil {
			return nil, err
		}
		if i == 900 {
			if err := tab.Sync(); err != nil {
				return nil, err
			}
		}
	}
	return cfs.Get(path), nil
}

// TestSparseForm: the sparse form spells its file back, for the fixtures
// and the native seeds, and malformed or oversized forms are skipped.
func TestSparseForm(t *testing.T) {
	fxs, err := makeFixtures()
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := smallNativeSeeds()
	if err != nil {
		t.Fatal(err)
	}
	imgs := [][]byte{{}, {0}, bytes.Repeat([]byte{0}, 100), []byte("x\x00\x00y")}
	for _, fx := range fxs {
		imgs = append(imgs, fx.img)
	}
	for _, s := range seeds {
		imgs = append(imgs, s.img)
	}
	for i, img := range imgs {
		got, ok := expandInput(sparseInput(img))
		if !ok || !bytes.Equal(got, img) {
			t.Fatalf("image %d (%d bytes): the sparse form spells %d bytes (ok %v)", i, len(img), len(got), ok)
		}
	}
	for _, bad := range [][]byte{
		[]byte(sparseMagic + "\x05ab"),                // literal past the end
		[]byte(sparseMagic + "\x00\xff\xff\xff\x7f"),  // zeros past maxSparseImage
		append([]byte(sparseMagic), 0x80, 0x80, 0x80), // a cut uvarint
	} {
		if _, ok := expandInput(bad); ok {
			t.Fatalf("%q expands", bad)
		}
	}
	if _, ok := expandInput(make([]byte, maxImage+1)); ok {
		t.Fatal("a raw input above maxImage is not skipped")
	}
}

// readCorpusBytes reads the one []byte value of a committed corpus file.
func readCorpusBytes(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a one-value corpus file", file)
	}
	lit, ok := strings.CutPrefix(lines[1], "[]byte(")
	lit, ok2 := strings.CutSuffix(lit, ")")
	s, err := strconv.Unquote(lit)
	if !ok || !ok2 || err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return []byte(s)
}

// TestNativeSeedsCommitted: FuzzOpen's committed native seeds are what
// the generator builds now in everything but the random file IDs and
// checksums: each spells a native file that opens (a closed one with
// NoRepair; one not closed gives ErrNeedsRepair, then recovers) to its
// objects, so that the seeds reach the open paths and not only the
// refusal of a stale format. Regenerate with GODETS_GEN_CORPUS=1.
func TestNativeSeedsCommitted(t *testing.T) {
	seeds, err := smallNativeSeeds()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range seeds {
		file := filepath.Join("testdata", "fuzz", "FuzzOpen", s.name)
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatalf("seed %s not committed (GODETS_GEN_CORPUS=1 go test -run TestGenCorpus ./fuzz): %v", s.name, err)
		}
		total += int(fi.Size())
		img, ok := expandInput(readCorpusBytes(t, file))
		if !ok || len(img) != len(s.img) {
			t.Fatalf("seed %s spells %d bytes (ok %v), the generator builds %d", s.name, len(img), ok, len(s.img))
		}
		cfs := tabletest.NewMemFS()
		cfs.Put(path, img)
		tab, err := dets.Open(path, dets.Options{FS: cfs})
		if !s.closed {
			if !errors.Is(err, dets.ErrNeedsRepair) {
				t.Fatalf("seed %s: NoRepair open: %v, want ErrNeedsRepair", s.name, err)
			}
			tab, err = dets.Open(path, dets.Options{FS: cfs, Repair: dets.AutoRepair})
		}
		if err != nil {
			t.Fatalf("seed %s: %v", s.name, err)
		}
		info, err := tab.Info()
		if err != nil || info.Size != s.objects {
			t.Fatalf("seed %s: %d objects (%v), want %d", s.name, info.Size, err, s.objects)
		}
		if err := tab.Check(); err != nil {
			t.Fatalf("seed %s: Check: %v", s.name, err)
		}
		tab.Close()
	}
	if total > 100<<10 {
		t.Fatalf("the native seeds take %d bytes; keep them small", total)
	}
	t.Logf("%d native seeds, %d bytes committed", len(seeds), total)
}
