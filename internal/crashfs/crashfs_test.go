package crashfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

func mustOpen(t *testing.T, f *FS, name string, flag int) *File {
	t.Helper()
	h, err := f.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestReadWriteTruncate(t *testing.T) {
	f := New()
	if _, err := f.OpenFile("a", os.O_RDWR, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing: %v", err)
	}
	h := mustOpen(t, f, "a", os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if _, err := f.OpenFile("a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL on existing: %v", err)
	}
	h.WriteAt([]byte("hello"), 3)
	if got := f.Get("a"); !bytes.Equal(got, []byte("\x00\x00\x00hello")) {
		t.Fatalf("content %q", got)
	}
	buf := make([]byte, 10)
	n, err := h.ReadAt(buf, 2)
	if n != 6 || err == nil {
		t.Fatalf("short read: %d %v", n, err)
	}
	h.Truncate(4)
	if sz, _ := h.Size(); sz != 4 {
		t.Fatalf("size %d", sz)
	}
	h.Truncate(6)
	if got := f.Get("a"); !bytes.Equal(got, []byte("\x00\x00\x00h\x00\x00")) {
		t.Fatalf("after truncates %q", got)
	}
	ro := mustOpen(t, f, "a", os.O_RDONLY)
	if _, err := ro.WriteAt([]byte("x"), 0); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("write on read-only handle: %v", err)
	}
	h.Close()
	if _, err := h.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("write after close succeeded")
	}
	mustOpen(t, f, "a", os.O_RDWR|os.O_TRUNC)
	if got := f.Get("a"); len(got) != 0 {
		t.Fatalf("O_TRUNC left %q", got)
	}
	if fi, err := f.Stat("a"); err != nil || fi.Size() != 0 {
		t.Fatalf("Stat: %v %v", fi, err)
	}
}

func TestSyncedOnlyAndAllWritten(t *testing.T) {
	f := New()
	h := mustOpen(t, f, "a", os.O_RDWR|os.O_CREATE)
	h.WriteAt([]byte("AAAA"), 0)
	h.Sync()
	afterSync := f.Ops()
	h.WriteAt([]byte("BB"), 1)
	h.Truncate(3)
	if got := f.Crash(SyncedOnly, nil).Get("a"); string(got) != "AAAA" {
		t.Fatalf("synced-only: %q", got)
	}
	if got := f.Crash(AllWritten, nil).Get("a"); string(got) != "ABB" {
		t.Fatalf("all-written: %q", got)
	}
	if got := f.Image(afterSync, AllWritten, nil).Get("a"); string(got) != "AAAA" {
		t.Fatalf("image at the sync: %q", got)
	}
	// Before the first sync the file's name is not durable either, except
	// after a process kill.
	if img := f.Image(2, Subset, rand.New(rand.NewPCG(1, 1))); img.Exists("a") {
		t.Fatal("an unsynced new file survived a power loss")
	}
	if img := f.Image(2, AllWritten, nil); string(img.Get("a")) != "AAAA" {
		t.Fatal("a process kill lost an unsynced new file")
	}
}

func TestDirectoryDurability(t *testing.T) {
	for _, strict := range []bool{false, true} {
		f := New()
		f.StrictDirs = strict
		f.Put("old", []byte("old"))
		h := mustOpen(t, f, "tmp", os.O_RDWR|os.O_CREATE)
		h.WriteAt([]byte("new"), 0)
		h.Sync()
		f.Rename("tmp", "old")
		img := f.Crash(Subset, rand.New(rand.NewPCG(1, 1)))
		if got := img.Get("old"); string(got) != "old" {
			t.Fatalf("strict=%v: rename without SyncDir survived: %q", strict, got)
		}
		if img.Exists("tmp") == strict {
			t.Fatalf("strict=%v: tmp exists=%v after its fsync", strict, img.Exists("tmp"))
		}
		f.SyncDir(".")
		img = f.Crash(SyncedOnly, nil)
		if got := img.Get("old"); string(got) != "new" || img.Exists("tmp") {
			t.Fatalf("strict=%v: after SyncDir: %q, names %v", strict, got, img.Names())
		}
		f.Remove("old")
		if !f.Crash(SyncedOnly, nil).Exists("old") {
			t.Fatal("remove without SyncDir was durable")
		}
	}
}

// TestRandomModes: every byte of a Subset or Torn512 image comes from the
// synced content or from one of the pending writes at that offset, and
// Torn512 keeps each sector of a write whole (all old or all new).
func TestRandomModes(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 1))
	for iter := range 200 {
		f := New()
		base := bytes.Repeat([]byte{'o'}, 4096)
		f.Put("a", base)
		h := mustOpen(t, f, "a", os.O_RDWR)
		var writes [][2]int64
		for i := range 1 + r.IntN(6) {
			off := int64(r.IntN(4096))
			n := int64(1 + r.IntN(1500))
			h.WriteAt(bytes.Repeat([]byte{byte('A' + i)}, int(n)), off)
			writes = append(writes, [2]int64{off, n})
		}
		all := f.Get("a")
		for _, mode := range []Mode{Subset, Torn512} {
			img := f.Crash(mode, r).Get("a")
			if len(img) > len(all) || len(img) < len(base) {
				t.Fatalf("iter %d %s: size %d outside [%d, %d]", iter, mode, len(img), len(base), len(all))
			}
			for i, c := range img {
				ok := i < len(base) && c == 'o' || c == 0
				for w, wr := range writes {
					if int64(i) >= wr[0] && int64(i) < wr[0]+wr[1] && c == byte('A'+w) {
						ok = true
					}
				}
				if !ok {
					t.Fatalf("iter %d %s: byte %d = %q comes from no write", iter, mode, i, c)
				}
			}
			if mode == Torn512 && len(writes) == 1 {
				w := writes[0]
				for s := w[0] / SectorSize * SectorSize; s < w[0]+w[1]; s += SectorSize {
					lo, hi := max(s, w[0]), min(s+SectorSize, w[0]+w[1])
					first := img[lo]
					for i := lo; i < hi; i++ {
						if img[i] != first {
							t.Fatalf("iter %d: sector at %d is torn inside", iter, s)
						}
					}
				}
			}
		}
		// Junk mode may put anything in, but never changes synced bytes
		// outside the pending writes.
		img := f.Crash(Torn512Junk, r).Get("a")
		for i := range base {
			in := false
			for _, wr := range writes {
				if int64(i) >= wr[0]/SectorSize*SectorSize && int64(i) < wr[0]+wr[1] {
					in = true
				}
			}
			if !in && img[i] != 'o' {
				t.Fatalf("iter %d: junk mode changed byte %d outside the writes", iter, i)
			}
		}
	}
}

func TestSubsetCoversBothOutcomes(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 2))
	f := New()
	f.Put("a", []byte("xx"))
	h := mustOpen(t, f, "a", os.O_RDWR)
	h.WriteAt([]byte("A"), 0)
	h.WriteAt([]byte("B"), 1)
	seen := map[string]bool{}
	for range 200 {
		seen[string(f.Crash(Subset, r).Get("a"))] = true
	}
	for _, want := range []string{"xx", "Ax", "xB", "AB"} {
		if !seen[want] {
			t.Errorf("subset never produced %q (saw %v)", want, seen)
		}
	}
}

func TestInject(t *testing.T) {
	f := New()
	h := mustOpen(t, f, "a", os.O_RDWR|os.O_CREATE)
	f.Inject(OpWrite, 2, syscall.ENOSPC, false)
	if _, err := h.WriteAt([]byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	_, err := h.WriteAt([]byte("2"), 1)
	var pe *fs.PathError
	if !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) {
		t.Fatalf("second write: %v, want a *fs.PathError wrapping ENOSPC", err)
	}
	if got := f.Get("a"); string(got) != "1" {
		t.Fatalf("a failed write had an effect: %q", got)
	}
	if _, err := h.WriteAt([]byte("3"), 1); err != nil {
		t.Fatalf("once-only fault fired again: %v", err)
	}
	f.Inject(OpSync, 1, nil, true)
	for range 3 {
		if err := h.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("persistent sync fault: %v", err)
		}
	}
	if got := f.Crash(SyncedOnly, nil); got.Exists("a") {
		t.Fatal("a failed sync made the file durable")
	}
	if n := len(f.Fired()); n != 4 {
		t.Fatalf("Fired: %d records, want 4", n)
	}
	f.ClearFaults()
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.Crash(SyncedOnly, nil).Get("a"); string(got) != "13" {
		t.Fatalf("after a good sync: %q", got)
	}
}

func TestHookStops(t *testing.T) {
	f := New()
	h := mustOpen(t, f, "a", os.O_RDWR|os.O_CREATE)
	stop := errors.New("stop")
	f.SetHook(func(r Record) error {
		if r.Kind == OpSync {
			return stop
		}
		return nil
	})
	h.WriteAt([]byte("a"), 0)
	if err := h.Sync(); !errors.Is(err, stop) {
		t.Fatalf("hook: %v", err)
	}
	if n := f.Ops(); n != 2 {
		t.Fatalf("ops %d, want 2 (create, write)", n)
	}
	if log := f.Log(); log[1].Kind != OpWrite || log[1].String() == "" {
		t.Fatalf("log %v", log)
	}
}

// TestNewModes: Torn4096 keeps each 4 KiB sector of a write whole and takes
// bytes only from the synced content or the writes; ZeroTail gives a
// prefix of the pending writes, then zeros up to the final length.
func TestNewModes(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(testutil.Seed(t)), 3))
	for iter := range 200 {
		f := New()
		base := bytes.Repeat([]byte{'o'}, 8192)
		f.Put("a", base)
		h := mustOpen(t, f, "a", os.O_RDWR)
		var writes [][2]int64
		for i := range 1 + r.IntN(4) {
			off := int64(r.IntN(12000))
			n := int64(1 + r.IntN(6000))
			h.WriteAt(bytes.Repeat([]byte{byte('A' + i)}, int(n)), off)
			writes = append(writes, [2]int64{off, n})
		}
		all := f.Get("a")
		img := f.Crash(Torn4096, r).Get("a")
		for i, c := range img {
			ok := i < len(base) && c == 'o' || c == 0
			for w, wr := range writes {
				if int64(i) >= wr[0] && int64(i) < wr[0]+wr[1] && c == byte('A'+w) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("iter %d torn4096: byte %d = %q comes from no write", iter, i, c)
			}
		}
		if len(writes) == 1 {
			w := writes[0]
			for s := w[0] / 4096 * 4096; s < w[0]+w[1]; s += 4096 {
				lo, hi := max(s, w[0]), min(s+4096, w[0]+w[1], int64(len(img)))
				for i := lo; i < hi; i++ {
					if img[i] != img[lo] {
						t.Fatalf("iter %d: 4 KiB sector at %d is torn inside", iter, s)
					}
				}
			}
		}
		// ZeroTail: some prefix of the writes, applied to base, then zeros.
		img = f.Crash(ZeroTail, r).Get("a")
		if len(img) != len(all) {
			t.Fatalf("iter %d zero-tail: size %d, want the final %d", iter, len(img), len(all))
		}
		matched := false
		for cut := 0; cut <= len(writes) && !matched; cut++ {
			want := bytes.Clone(base)
			for _, wr := range writes[:cut] {
				want = writeAt(want, bytes.Repeat([]byte{byte('A' + slices.Index(writes, wr))}, int(wr[1])), wr[0])
			}
			want = truncate(want, int64(len(all)))
			matched = bytes.Equal(img, want)
		}
		if !matched {
			t.Fatalf("iter %d zero-tail: image is no prefix of the writes with a zero tail", iter)
		}
	}
}
