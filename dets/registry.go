package dets

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// openTables counts the open Tables of this process by file identity
// (device and inode), so that a second handle that could write beside
// another is refused (ErrAlreadyOpen), and so that package exclusive can
// refuse a file already open outside a session. Identity makes aliases of
// one file (a symlink, a hard link, another spelling of the path) match
// without resolving paths, which keeps the session cycle cheap. Files
// without an identity (test file systems) are not tracked.
var openTables struct {
	sync.Mutex
	m map[fileID]openCount
}

// writerReleases counts the writers' holds released (under openTables'
// lock). An opener stats its file before it can register it (the identity
// comes from that fstat); if a writer released a hold in between, the size
// it read may be from before that writer's last writes, and it stats again.
var writerReleases atomic.Uint64

// openCount is how many Tables (or repairs) of this process hold a file.
type openCount struct{ readers, writers int }

// claim is one hold on a file's entry in openTables.
type claim struct {
	id    fileID
	write bool
	held  bool
}

// take records a hold on id, unless it would let a writer share the file
// with any other holder: two read-only handles may coexist, nothing else
// may. It reports whether the hold was taken.
func (c *claim) take(id fileID, write bool) bool {
	openTables.Lock()
	defer openTables.Unlock()
	n := openTables.m[id]
	if n.writers > 0 || (write && n.readers > 0) {
		return false
	}
	if write {
		n.writers++
	} else {
		n.readers++
	}
	if openTables.m == nil {
		openTables.m = make(map[fileID]openCount)
	}
	openTables.m[id] = n
	*c = claim{id: id, write: write, held: true}
	return true
}

// release drops the hold, if any; it is safe to call twice.
func (c *claim) release() {
	if !c.held {
		return
	}
	c.held = false
	openTables.Lock()
	defer openTables.Unlock()
	n := openTables.m[c.id]
	if c.write {
		n.writers--
		writerReleases.Add(1)
	} else {
		n.readers--
	}
	if n.readers <= 0 && n.writers <= 0 {
		delete(openTables.m, c.id)
		return
	}
	openTables.m[c.id] = n
}

// register takes t's hold on its file (see take), from the identity of
// t.f or of fi (what the opener stat'ed); a refusal is ErrAlreadyOpen.
func (t *Table) register(fi fs.FileInfo) error {
	id, ok := fileIdentity(t.f, fi)
	if !ok || t.reg.take(id, !t.readOnly) {
		return nil
	}
	return alreadyOpen(t.path, !t.readOnly)
}

func alreadyOpen(path string, write bool) error {
	if write {
		return fmt.Errorf("%w: %s (a second handle that could write is refused)", ErrAlreadyOpen, path)
	}
	return fmt.Errorf("%w: %s (open for writing)", ErrAlreadyOpen, path)
}

// claimPath holds the file at path as a writer while a repair replaces
// it: an open Table of this process refuses the repair, and an open
// during it is refused. A file that cannot be stat'ed is not held (the
// repair reports why it cannot read it).
func claimPath(fsys FS, path string) (claim, error) {
	var c claim
	var fi fs.FileInfo
	var err error
	if fsys == nil {
		fi, err = os.Stat(path)
	} else {
		fi, err = fsys.Stat(path)
	}
	if err != nil {
		return c, nil
	}
	if id, ok := idOf(fi); ok && !c.take(id, true) {
		return c, alreadyOpen(path, true)
	}
	return c, nil
}

// fileIdentity is f's device and inode: from f itself when it knows them,
// else from fi (what the opener stat'ed) or a Stat of f.
func fileIdentity(f File, fi fs.FileInfo) (fileID, bool) {
	if idf, ok := f.(identified); ok {
		return idf.identity()
	}
	if fi == nil {
		st, ok := f.(statter)
		if !ok {
			return fileID{}, false
		}
		var err error
		if fi, err = st.Stat(); err != nil {
			return fileID{}, false
		}
	}
	return idOf(fi)
}

// IsOpen reports whether a Table for the file at path (any alias of it) is
// open in this process, or a Repair of it is running.
func IsOpen(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	id, ok := idOf(fi)
	return ok && isOpen(id)
}

// IsOpenID is IsOpen for the file with the given device and inode numbers
// (as stat reports them), for callers that already know the identity: it
// makes no system call. It is always false where IsOpen is (no file
// identities on this platform).
func IsOpenID(dev, ino uint64) bool {
	id, ok := makeID(dev, ino)
	return ok && isOpen(id)
}

func isOpen(id fileID) bool {
	openTables.Lock()
	defer openTables.Unlock()
	_, ok := openTables.m[id]
	return ok
}

type statter interface{ Stat() (fs.FileInfo, error) }

// identified is a File that knows its device and inode (fdFile).
type identified interface{ identity() (fileID, bool) }

// fileSize returns the file's size; for an OS file it also returns the
// FileInfo, so that register needs no second fstat on the open path.
func (t *Table) fileSize() (int64, fs.FileInfo, error) {
	if st, ok := t.f.(statter); ok {
		fi, err := st.Stat()
		if err != nil {
			return 0, nil, err
		}
		return fi.Size(), fi, nil
	}
	size, err := t.f.Size()
	return size, nil, err
}
