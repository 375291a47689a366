package dets

import (
	"io/fs"
	"os"
	"sync"
)

// openTables counts the open Tables of this process by file identity, so
// that package exclusive can refuse a file already open outside a session.
// Identity (device and inode) makes aliases of one file match without
// resolving paths, which keeps the session cycle cheap.
var openTables struct {
	sync.Mutex
	n map[fileID]int
}

// register records t as open when its file is an OS file.
func (t *Table) register() {
	id, ok := fileIdentity(t.f, t.statInfo)
	t.statInfo = nil
	if !ok {
		return
	}
	openTables.Lock()
	defer openTables.Unlock()
	if openTables.n == nil {
		openTables.n = make(map[fileID]int)
	}
	openTables.n[id]++
	t.regID, t.registered = id, true
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

func (t *Table) unregister() {
	if !t.registered {
		return
	}
	t.registered = false
	openTables.Lock()
	defer openTables.Unlock()
	if openTables.n[t.regID] <= 1 {
		delete(openTables.n, t.regID)
		return
	}
	openTables.n[t.regID]--
}

// IsOpen reports whether a Table for the file at path (any alias of it) is
// open in this process.
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
	return openTables.n[id] > 0
}

type statter interface{ Stat() (fs.FileInfo, error) }

// identified is a File that knows its device and inode (fdFile).
type identified interface{ identity() (fileID, bool) }

// fileSize returns the file's size; for an OS file it keeps the FileInfo so
// that register needs no second fstat on the open path.
func (t *Table) fileSize() (int64, error) {
	if st, ok := t.f.(statter); ok {
		fi, err := st.Stat()
		if err != nil {
			return 0, err
		}
		t.statInfo = fi
		return fi.Size(), nil
	}
	return t.f.Size()
}
