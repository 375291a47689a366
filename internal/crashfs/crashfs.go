// Package crashfs is an in-memory file system for tests that records every
// mutating operation, injects I/O errors, and builds the file system a power
// loss or a process kill would leave behind (docs/reliability.md §2).
//
// *File satisfies dets.File structurally; FS satisfies dets.FS through a
// three-line OpenFile adapter in the test (method results must match
// exactly). It does not import dets, whose own tests import this package.
//
// # Durability model
//
// Every file has a volatile content (what reads see) and a durable content
// (what survives a crash). File.Sync copies the volatile content to the
// durable one; writes and truncates between two syncs are "pending". A
// directory entry (create, rename, remove) becomes durable at FS.SyncDir, or,
// unless FS.StrictDirs is set, when the file it names is synced (the
// behaviour of ext4 and xfs, whose fsync commits the journal transaction that
// holds the entry).
//
// # Crash images
//
// Image(k, mode, rng) replays the first k recorded operations and returns the
// durable state as a new FS, with each file's pending operations applied
// according to mode (AllWritten keeps the volatile directory too):
//
//	SyncedOnly   none (LevelDB DropUnsyncedData)
//	AllWritten   all, in order (a process kill: the kernel keeps the page cache)
//	Subset       each pending write/truncate independently with p = 1/2, in order
//	Torn512      each 512-byte-aligned piece of each pending write independently
//	             (a device with atomic 512-byte sectors that reorders them)
//	Torn512Junk  as Torn512, but a piece may also come out as zeros or random
//	             bytes (a device without sector atomicity)
//	Torn4096     as Torn512 with 4096-byte pieces (a device with 4 KiB sectors)
//	ZeroTail     the pending operations up to a random one, in order; of the
//	             later ones, what a write or truncate would add past the file's
//	             end comes out as zeros and the rest is lost (a file system
//	             that made the new size durable before the data: XFS's and
//	             ext4's zero-filled tails after a crash)
package crashfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// SectorSize is the granularity of the Torn512 modes.
const SectorSize = 512

// OpKind names a kind of mutating operation.
type OpKind uint8

const (
	OpPut      OpKind = iota + 1 // FS.Put: a durable file placed by the test
	OpCreate                     // OpenFile that creates a file
	OpWrite                      // File.WriteAt
	OpTruncate                   // File.Truncate, and OpenFile with O_TRUNC
	OpSync                       // File.Sync
	OpRename                     // FS.Rename
	OpRemove                     // FS.Remove
	OpSyncDir                    // FS.SyncDir
)

func (k OpKind) String() string {
	switch k {
	case OpPut:
		return "put"
	case OpCreate:
		return "create"
	case OpWrite:
		return "write"
	case OpTruncate:
		return "truncate"
	case OpSync:
		return "sync"
	case OpRename:
		return "rename"
	case OpRemove:
		return "remove"
	case OpSyncDir:
		return "syncdir"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Mode selects how Image treats pending (unsynced) operations.
type Mode uint8

const (
	SyncedOnly Mode = iota
	AllWritten
	Subset
	Torn512
	Torn512Junk
	Torn4096
	ZeroTail
)

// Modes lists the first five modes, which the otp9 crash tests run.
var Modes = []Mode{SyncedOnly, AllWritten, Subset, Torn512, Torn512Junk}

// AllModes lists every Mode.
var AllModes = []Mode{SyncedOnly, AllWritten, Subset, Torn512, Torn512Junk, Torn4096, ZeroTail}

func (m Mode) String() string {
	switch m {
	case SyncedOnly:
		return "synced-only"
	case AllWritten:
		return "all-written"
	case Subset:
		return "subset"
	case Torn512:
		return "torn512"
	case Torn512Junk:
		return "torn512-junk"
	case Torn4096:
		return "torn4096"
	case ZeroTail:
		return "zero-tail"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Record is one mutating operation, as logged.
type Record struct {
	Kind OpKind
	Node int    // file identity (write, truncate, sync, create, put)
	Name string // create, put, rename (old name), remove
	New  string // rename: the new name
	Off  int64  // write: offset; truncate: new size
	Data []byte // write, put: the bytes
}

func (r Record) String() string {
	switch r.Kind {
	case OpWrite:
		return fmt.Sprintf("write node %d [%d, %d)", r.Node, r.Off, r.Off+int64(len(r.Data)))
	case OpTruncate:
		return fmt.Sprintf("truncate node %d to %d", r.Node, r.Off)
	case OpSync:
		return fmt.Sprintf("sync node %d", r.Node)
	case OpRename:
		return fmt.Sprintf("rename %s -> %s", r.Name, r.New)
	case OpCreate, OpPut:
		return fmt.Sprintf("%s %s as node %d", r.Kind, r.Name, r.Node)
	}
	return fmt.Sprintf("%s %s", r.Kind, r.Name)
}

// ErrInjected is the default error of an injected fault; injected errors are
// *fs.PathError values wrapping the given errno (syscall.EIO by default).
var ErrInjected = syscall.EIO

type node struct {
	data    []byte   // volatile content
	synced  []byte   // durable content
	pending []Record // writes and truncates since the last sync
}

type state struct {
	nodes map[int]*node
	dir   map[string]int // volatile directory
	ddir  map[string]int // durable directory
	next  int
}

func newState() *state {
	return &state{nodes: map[int]*node{}, dir: map[string]int{}, ddir: map[string]int{}}
}

// apply performs r; strictDirs as FS.StrictDirs.
func (s *state) apply(r Record, strictDirs bool) {
	switch r.Kind {
	case OpPut:
		n := &node{data: slices.Clone(r.Data), synced: slices.Clone(r.Data)}
		s.nodes[r.Node] = n
		s.dir[r.Name] = r.Node
		s.ddir[r.Name] = r.Node
	case OpCreate:
		s.nodes[r.Node] = &node{data: []byte{}, synced: []byte{}}
		s.dir[r.Name] = r.Node
	case OpWrite:
		n := s.nodes[r.Node]
		n.data = writeAt(n.data, r.Data, r.Off)
		n.pending = append(n.pending, r)
	case OpTruncate:
		n := s.nodes[r.Node]
		n.data = truncate(n.data, r.Off)
		n.pending = append(n.pending, r)
	case OpSync:
		n := s.nodes[r.Node]
		n.synced = slices.Clone(n.data)
		n.pending = nil
		if !strictDirs {
			for name, id := range s.dir {
				if id == r.Node {
					s.ddir[name] = id
				}
			}
		}
	case OpRename:
		id := s.dir[r.Name]
		delete(s.dir, r.Name)
		s.dir[r.New] = id
	case OpRemove:
		delete(s.dir, r.Name)
	case OpSyncDir:
		s.ddir = maps.Clone(s.dir)
	}
	if r.Node >= s.next {
		s.next = r.Node + 1
	}
}

// zeroTail is ZeroTail's content: b with pending[:cut] applied, and the
// later operations reduced to the zeros they would add past the end.
func zeroTail(b []byte, pending []Record, cut int) []byte {
	for i, r := range pending {
		end := r.Off
		if r.Kind == OpWrite {
			end += int64(len(r.Data))
		}
		switch {
		case i < cut && r.Kind == OpTruncate:
			b = truncate(b, r.Off)
		case i < cut:
			b = writeAt(b, r.Data, r.Off)
		case end > int64(len(b)):
			b = truncate(b, end)
		}
	}
	return b
}

func writeAt(b, p []byte, off int64) []byte {
	if end := off + int64(len(p)); end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[off:], p)
	return b
}

func truncate(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

type fault struct {
	kind       OpKind
	nth        int // fail the nth operation of kind counted from injection (1-based)
	seen       int
	err        error
	persistent bool
	fired      bool
}

// FS is the recording file system. The zero value is not usable; use New.
type FS struct {
	// StrictDirs makes directory entries durable only at SyncDir.
	StrictDirs bool

	mu     sync.Mutex
	st     *state
	log    []Record
	faults []*fault
	fired  []Record // operations that failed by injection
	hook   func(Record) error
}

// New returns an empty FS.
func New() *FS { return &FS{st: newState()} }

func (f *FS) record(r Record) error {
	for _, ft := range f.faults {
		if ft.kind != r.Kind || (ft.fired && !ft.persistent) {
			continue
		}
		ft.seen++
		if ft.seen == ft.nth || (ft.persistent && ft.seen > ft.nth) {
			ft.fired = true
			f.fired = append(f.fired, r)
			return &fs.PathError{Op: r.Kind.String(), Path: f.nameOf(r), Err: ft.err}
		}
	}
	if f.hook != nil {
		if err := f.hook(r); err != nil {
			return err
		}
	}
	f.st.apply(r, f.StrictDirs)
	f.log = append(f.log, r)
	return nil
}

func (f *FS) nameOf(r Record) string {
	if r.Name != "" {
		return r.Name
	}
	for name, id := range f.st.dir {
		if id == r.Node {
			return name
		}
	}
	return fmt.Sprintf("node-%d", r.Node)
}

// Inject makes the nth operation of kind from now on (1-based) fail with
// errno (syscall.EIO or syscall.ENOSPC, for instance) wrapped in an
// *fs.PathError, without effect. If persistent, every later operation of
// that kind fails too.
func (f *FS) Inject(kind OpKind, nth int, errno error, persistent bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno == nil {
		errno = ErrInjected
	}
	f.faults = append(f.faults, &fault{kind: kind, nth: nth, err: errno, persistent: persistent})
}

// ClearFaults removes every injected fault (the disk was given space back).
func (f *FS) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Fired returns the operations that failed by injection, in order.
func (f *FS) Fired() []Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fired)
}

// SetHook installs fn, called before each mutating operation is applied; an
// error from fn fails the operation without effect. Tests use it to stop a
// workload at a chosen point.
func (f *FS) SetHook(fn func(Record) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = fn
}

// Put stores a durable file (content synced, name durable).
func (f *FS) Put(name string, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := Record{Kind: OpPut, Node: f.st.next, Name: name, Data: slices.Clone(b)}
	f.st.apply(r, f.StrictDirs)
	f.log = append(f.log, r)
}

// Get returns a copy of the volatile content of name, or nil if absent.
func (f *FS) Get(name string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.st.dir[name]
	if !ok {
		return nil
	}
	return slices.Clone(f.st.nodes[id].data)
}

// Exists reports whether name is in the (volatile) directory.
func (f *FS) Exists(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.st.dir[name]
	return ok
}

// Names returns the sorted names in the volatile directory.
func (f *FS) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.st.dir))
}

// Ops returns the number of recorded operations (the log length).
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.log)
}

// Log returns a copy of the recorded operations.
func (f *FS) Log() []Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// Crash returns Image(f.Ops(), mode, rng).
func (f *FS) Crash(mode Mode, rng *rand.Rand) *FS { return f.Image(f.Ops(), mode, rng) }

// Image returns the file system a crash right after the first k recorded
// operations leaves, under mode. Only durable directory entries survive,
// except in AllWritten (a process kill), which keeps them all.
// rng drives the random modes and may be nil for the others. The result
// has a fresh log that starts with one OpPut per file.
func (f *FS) Image(k int, mode Mode, rng *rand.Rand) *FS {
	return f.Images(k, []Mode{mode}, rng)[0]
}

// Images is Image for several modes at one crash point: the log is
// replayed once.
func (f *FS) Images(k int, modes []Mode, rng *rand.Rand) []*FS {
	f.mu.Lock()
	s := newState()
	for _, r := range f.log[:k] {
		s.apply(r, f.StrictDirs)
	}
	strict := f.StrictDirs
	f.mu.Unlock()
	out := make([]*FS, len(modes))
	for i, mode := range modes {
		out[i] = s.image(mode, strict, rng)
	}
	return out
}

// image builds the FS a crash in mode leaves of state s.
func (s *state) image(mode Mode, strict bool, rng *rand.Rand) *FS {
	out := New()
	out.StrictDirs = strict
	dir := s.ddir
	if mode == AllWritten {
		dir = s.dir // a process kill loses nothing the kernel has
	}
	for _, name := range slices.Sorted(maps.Keys(dir)) {
		n := s.nodes[dir[name]]
		out.Put(name, crashContent(n, mode, rng))
	}
	return out
}

func crashContent(n *node, mode Mode, rng *rand.Rand) []byte {
	b := slices.Clone(n.synced)
	if mode == SyncedOnly {
		return b
	}
	if mode == AllWritten {
		return slices.Clone(n.data)
	}
	if mode == ZeroTail {
		return zeroTail(b, n.pending, rng.IntN(len(n.pending)+1))
	}
	sector := int64(SectorSize)
	if mode == Torn4096 {
		sector = 4096
	}
	for _, r := range n.pending {
		if r.Kind == OpTruncate {
			if rng.IntN(2) == 0 {
				b = truncate(b, r.Off)
			}
			continue
		}
		if mode == Subset {
			if rng.IntN(2) == 0 {
				b = writeAt(b, r.Data, r.Off)
			}
			continue
		}
		// Torn: sector-aligned pieces.
		for start := r.Off; start < r.Off+int64(len(r.Data)); {
			end := min((start/sector+1)*sector, r.Off+int64(len(r.Data)))
			piece := r.Data[start-r.Off : end-r.Off]
			choice := rng.IntN(2)
			if mode == Torn512Junk {
				choice = rng.IntN(4)
			}
			switch choice {
			case 0: // the new bytes
				b = writeAt(b, piece, start)
			case 1: // the old bytes stay (the file may still grow to cover them)
				if end > int64(len(b)) {
					b = truncate(b, end)
				}
			case 2:
				b = writeAt(b, make([]byte, len(piece)), start)
			case 3:
				junk := make([]byte, len(piece))
				for i := range junk {
					junk[i] = byte(rng.Uint32())
				}
				b = writeAt(b, junk, start)
			}
			start = end
		}
	}
	return b
}

// File is an open file of an FS.
type File struct {
	fs     *FS
	id     int
	name   string
	ro     bool
	closed bool
}

// OpenFile opens name with os.OpenFile flag semantics (O_RDONLY, O_RDWR,
// O_WRONLY, O_CREATE, O_EXCL, O_TRUNC). It returns the concrete *File, so a
// caller whose FS interface returns its own File interface wraps it in a
// three-line adapter (Go matches method signatures exactly).
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.st.dir[name]
	if !ok {
		if flag&os.O_CREATE == 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		id = f.st.next
		if err := f.record(Record{Kind: OpCreate, Node: id, Name: name}); err != nil {
			return nil, err
		}
	} else if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	}
	ro := flag&(os.O_RDWR|os.O_WRONLY) == 0
	if flag&os.O_TRUNC != 0 && !ro && len(f.st.nodes[id].data) > 0 {
		if err := f.record(Record{Kind: OpTruncate, Node: id, Off: 0}); err != nil {
			return nil, err
		}
	}
	return &File{fs: f, id: id, name: name, ro: ro}, nil
}

// Remove removes name.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.st.dir[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	return f.record(Record{Kind: OpRemove, Name: name})
}

// Rename renames oldpath to newpath, replacing newpath.
func (f *FS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.st.dir[oldpath]; !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	return f.record(Record{Kind: OpRename, Name: oldpath, New: newpath})
}

// SyncDir makes every directory entry durable (the FS has one directory).
func (f *FS) SyncDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.record(Record{Kind: OpSyncDir, Name: dir})
}

// Stat returns the size and name of a file.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.st.dir[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fileInfo{name: name, size: int64(len(f.st.nodes[id].data))}, nil
}

type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o644 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

// errClosed is returned by a File after Close.
var errClosed = errors.New("crashfs: file already closed")

func (h *File) check(write bool, op string) error {
	if h.closed {
		return &fs.PathError{Op: op, Path: h.name, Err: errClosed}
	}
	if write && h.ro {
		return &fs.PathError{Op: op, Path: h.name, Err: fs.ErrPermission}
	}
	return nil
}

// ReadAt reads from the volatile content.
func (h *File) ReadAt(b []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(false, "read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: h.name, Err: fs.ErrInvalid}
	}
	data := h.fs.st.nodes[h.id].data
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(b, data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt records and applies a write.
func (h *File) WriteAt(b []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(true, "write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: h.name, Err: fs.ErrInvalid}
	}
	if err := h.fs.record(Record{Kind: OpWrite, Node: h.id, Off: off, Data: slices.Clone(b)}); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Truncate records and applies a size change.
func (h *File) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(true, "truncate"); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: h.name, Err: fs.ErrInvalid}
	}
	return h.fs.record(Record{Kind: OpTruncate, Node: h.id, Off: size})
}

// Sync makes the volatile content durable.
func (h *File) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(false, "sync"); err != nil {
		return err
	}
	return h.fs.record(Record{Kind: OpSync, Node: h.id})
}

// Size returns the volatile size.
func (h *File) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(false, "stat"); err != nil {
		return 0, err
	}
	return int64(len(h.fs.st.nodes[h.id].data)), nil
}

// Close closes the handle; it does not sync.
func (h *File) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return &fs.PathError{Op: "close", Path: h.name, Err: errClosed}
	}
	h.closed = true
	return nil
}
