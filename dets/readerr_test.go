package dets

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/godets/godets/etf"
)

// Read errors belong to the call that met them; only failed writes (and
// inconsistent state) keep a table in error mode and make Close fail (see
// the classification in Close's doc).

const reObjects = 600

func reObj(i int) etf.Term { return tup(etf.Int(i), bin("value of some length"), etf.Int(i*7)) }

// damagedFile writes a closed table of reObjects objects and overwrites 12
// bytes of the object with key damaged (the start of its encoding), as the
// issue's scenario does. It returns the file's path.
func damagedFile(t *testing.T, damaged int) string {
	t.Helper()
	path := tmpFile(t, "damaged.dets")
	tab, err := Open(path, Options{})
	must(t, err)
	for i := range reObjects {
		must(t, tab.Insert(reObj(i)))
	}
	tab.mu.Lock()
	e, err := tab.entry(tab.slotFor(keyHash(etf.Int(damaged))))
	tab.mu.Unlock()
	must(t, err)
	must(t, tab.Close())
	if e.size == 0 {
		t.Fatal("the damaged key has no bucket")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	junk := []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
	_, err = f.WriteAt(junk, int64(e.ptr)+bucketHeaderSize+4)
	must(t, err)
	must(t, f.Close())
	return path
}

// traverseErr runs All to its end and returns its error.
func traverseErr(tab *Table) (n int, err error) {
	for _, err := range tab.All() {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func TestReadErrorReadOnlyCloses(t *testing.T) {
	path := damagedFile(t, 77)
	before := fileHash(t, path)
	tab, err := Open(path, Options{ReadOnly: true})
	must(t, err)
	if n, err := traverseErr(tab); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("All of a damaged table: %v after %d objects, want ErrCorrupt", err, n)
	}
	if _, err := tab.Lookup(etf.Int(77)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Lookup of the damaged object: %v, want ErrCorrupt", err)
	}
	wantLookup(t, tab, etf.Int(78), reObj(78))
	if err := tab.Sync(); err != nil {
		t.Fatalf("Sync after read errors: %v", err)
	}
	if err := tab.Close(); err != nil {
		t.Fatalf("Close after read errors: %v", err)
	}
	if fileHash(t, path) != before {
		t.Fatal("a read-only session changed the file")
	}
	if IsOpen(path) {
		t.Fatal("still registered after Close")
	}
}

func TestReadErrorReadWriteCloses(t *testing.T) {
	path := damagedFile(t, 77)
	tab, err := Open(path, Options{})
	must(t, err)
	if n, err := traverseErr(tab); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("All of a damaged table: %v after %d objects, want ErrCorrupt", err, n)
	}
	// A writing call that meets the damage before it writes fails alone.
	if err := tab.Delete(etf.Int(77)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Delete of the damaged object: %v, want ErrCorrupt", err)
	}
	must(t, tab.Insert(reObj(reObjects)))
	must(t, tab.Delete(etf.Int(5)))
	if err := tab.Close(); err != nil {
		t.Fatalf("Close after read errors: %v", err)
	}
	tab, err = Open(path, Options{Repair: NoRepair})
	if err != nil {
		t.Fatalf("reopen with NoRepair: %v", err)
	}
	defer tab.Close()
	wantLookup(t, tab, etf.Int(reObjects), reObj(reObjects))
	wantLookup(t, tab, etf.Int(5))
	wantLookup(t, tab, etf.Int(78), reObj(78))
	if info, err := tab.Info(); err != nil || info.Size != reObjects {
		t.Fatalf("Info after reopen: %+v, %v; want %d objects", info, err, reObjects)
	}
}

// faultFS is the OS file system with read and write errors on demand: the
// n-th read (or write) from when it is armed fails with EIO. Its files
// cannot be mapped, so every read reaches ReadAt.
type faultFS struct {
	OSFS
	mu                 sync.Mutex
	failRead, failWrit int // countdown; 0: off
	fired              bool
}

type faultFile struct {
	File
	fs *faultFS
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return faultFile{file, f}, nil
}

func (f *faultFS) arm(reads, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRead, f.failWrit, f.fired = reads, writes, false
}

// hit counts one operation down and reports whether it fails.
func (f *faultFS) hit(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n == 0 {
		return false
	}
	*n--
	if *n == 0 {
		f.fired = true
		return true
	}
	return false
}

func (f faultFile) ReadAt(b []byte, off int64) (int, error) {
	if f.fs.hit(&f.fs.failRead) {
		return 0, &os.PathError{Op: "read", Path: "fault", Err: syscall.EIO}
	}
	return f.File.ReadAt(b, off)
}

func (f faultFile) WriteAt(b []byte, off int64) (int, error) {
	if f.fs.hit(&f.fs.failWrit) {
		return 0, &os.PathError{Op: "write", Path: "fault", Err: syscall.EIO}
	}
	return f.File.WriteAt(b, off)
}

// TestReadIOErrorNotSticky: an EIO from a read, in a read or in a writing
// call before it writes, is that call's error; the table goes on and
// closes normally.
func TestReadIOErrorNotSticky(t *testing.T) {
	ffs := &faultFS{}
	path := tmpFile(t, "eio.dets")
	tab, err := Open(path, Options{FS: ffs})
	must(t, err)
	for i := range reObjects {
		must(t, tab.Insert(reObj(i)))
	}
	ffs.arm(1, 0)
	if _, err := tab.Lookup(etf.Int(3)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Lookup with a failing read: %v, want EIO", err)
	}
	ffs.arm(1, 0)
	if err := tab.Insert(reObj(3)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Insert with a failing read: %v, want EIO", err)
	}
	wantLookup(t, tab, etf.Int(3), reObj(3))
	mustCheck(t, tab)
	if err := tab.Close(); err != nil {
		t.Fatalf("Close after read errors: %v", err)
	}
	tab = openT(t, path, Options{})
	wantLookup(t, tab, etf.Int(3), reObj(3))
}

// TestSaveReadErrorKeepsFreeLists: a read failing at any point of Sync's
// tail compaction (which reads the top bucket before it moves it) fails
// that Sync only; a Sync without the fault then saves a table whose free
// lists account for every block (Check) and whose objects are all there.
func TestSaveReadErrorKeepsFreeLists(t *testing.T) {
	t.Parallel()
	failed, moved := 0, 0
	for nth := 1; nth <= 12; nth++ {
		ffs := &faultFS{}
		path := filepath.Join(t.TempDir(), "compact.dets")
		tab, err := Open(path, Options{FS: ffs})
		must(t, err)
		blocks := countMoves(tab)
		for i := range reObjects {
			must(t, tab.Insert(reObj(i)))
		}
		must(t, tab.Sync())
		for i := 0; i < reObjects; i += 3 {
			must(t, tab.Delete(etf.Int(i)))
		}
		ffs.arm(nth, 0)
		err = tab.Sync()
		ffs.mu.Lock()
		fired := ffs.fired
		ffs.mu.Unlock()
		ffs.arm(0, 0)
		if fired != (err != nil) || (err != nil && !errors.Is(err, syscall.EIO)) {
			t.Fatalf("read #%d fails: Sync returned %v (fault fired: %v)", nth, err, fired)
		}
		if err != nil {
			failed++
		}
		must(t, tab.Sync())
		moved += int(blocks.Load())
		mustCheck(t, tab)
		for i := range reObjects {
			var want []etf.Term
			if i%3 != 0 {
				want = []etf.Term{reObj(i)}
			}
			wantLookup(t, tab, etf.Int(i), want...)
		}
		must(t, tab.Close())
	}
	if failed < 6 || moved == 0 {
		t.Fatalf("only %d of 12 faults hit the save, which moved %d blocks", failed, moved)
	}
	t.Logf("%d of 12 faults hit the save; %d blocks moved", failed, moved)
}

// TestWriteErrorStillFailsClose: a failed write keeps the table in error
// mode, after earlier read errors too: Close returns it and does not save,
// so the file needs repair, which finds the objects written before.
func TestWriteErrorStillFailsClose(t *testing.T) {
	ffs := &faultFS{}
	path := tmpFile(t, "wfail.dets")
	tab, err := Open(path, Options{FS: ffs})
	must(t, err)
	for i := range 100 {
		must(t, tab.Insert(reObj(i)))
	}
	ffs.arm(1, 0)
	if _, err := tab.Lookup(etf.Int(1)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Lookup with a failing read: %v", err)
	}
	ffs.arm(0, 1)
	if err := tab.Insert(reObj(100)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Insert with a failing write: %v, want EIO", err)
	}
	if _, err := tab.Lookup(etf.Int(1)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Lookup after a failed write: %v, want the sticky error", err)
	}
	if err := tab.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close after a failed write: %v, want the write's error", err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("open after a failed close: %v, want ErrNeedsRepair", err)
	}
	tab = openT(t, path, Options{Repair: AutoRepair})
	for i := range 100 {
		wantLookup(t, tab, etf.Int(i), reObj(i))
	}
}
