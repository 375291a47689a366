//go:build !windows

// Package lockfile takes the cross-process lock behind exclusive sessions.
//
// The lock is flock(2) LOCK_EX|LOCK_NB on a sidecar file named
//
//	<resolved-data-path>.slate.lock
//
// next to the data file. flock is chosen over POSIX fcntl locks because its owner
// is the open file description: a second descriptor in the same process is
// excluded exactly like another process, and closing an unrelated descriptor of
// the same inode does not drop it. The kernel releases it when the holder dies.
//
// Rules the package keeps (see docs/locking.md):
//
//   - The sidecar is created empty with mode 0644 (before umask) and is never
//     truncated, written, renamed or deleted. Its presence says nothing; only the
//     kernel lock means ownership. Mode 0644 lets other users see it exist;
//     a user who cannot open it for writing falls back to a read-only
//     descriptor, which flock accepts on local filesystems.
//   - Paths are resolved before the sidecar is chosen: symlinks in the parent
//     directory and in the final element are evaluated first (as the kernel
//     would), and only then is the result made absolute. Aliases that would give
//     one file two sidecars are refused: hard-linked data files, dangling
//     symlinks, symlinked, hard-linked or non-regular sidecars, and data files
//     or sidecars that are themselves mount points.
//   - Only known local filesystems are accepted (an allowlist of statfs
//     f_type on Linux, of f_fstypename on a MNT_LOCAL mount elsewhere);
//     network, cluster, FUSE, overlay and union filesystems, and any type this
//     package does not know, are refused before any lock call.
//   - After flock succeeds, the sidecar's identity is checked again (fstat of the
//     locked descriptor against lstat of the path). If the sidecar was replaced
//     in between, the lock is released and the attempt retried. The data path
//     is checked again too: it must still resolve to the same path, whose
//     sidecar is the one locked. A different file there is no alias: the
//     previous owner may have replaced it (a repair renames a rebuilt file
//     over the path), created or removed it. It is judged like a file found
//     by resolution (regular, one link, not a mount point, local) and the
//     lock describes it from then on. A lock these checks refuse is
//     released at once; if that release fails, the acquisition ends with a
//     *RecheckReleaseError, since this process may still hold the lock.
//   - A caller that will not create the data file (Options.ExistingOnly)
//     leaves no footprint when it is missing: no sidecar is created.
//   - Release is LOCK_UN, then the unlocked descriptor is parked for the next
//     session on the same file instead of closed (parked.go says why that is
//     as safe as a fresh open); idle parked descriptors are closed within
//     about two seconds.
//   - Waiting has one deadline taken from the monotonic clock. A waiter
//     blocks in the kernel (flock without LOCK_NB, in a goroutine of its
//     own; blocked.go), so that it is woken at the release instead of
//     finding the lock taken again at its next poll. Where it cannot (one
//     kernel waiter per file and a bounded number per process) it polls at
//     most every 20 ms, and stops when a pause reaches the deadline.
//   - A waiting acquisition never keeps a lock it obtains after its
//     deadline, however short the delay: the caller's wait is over, so
//     nothing may start under that lock. An attempt that stalled past the
//     deadline, or a kernel grant that came just as the wait ran out, is
//     unlocked and reported as ErrTimedOut; a grant to a waiter the caller
//     has already abandoned is released at once, through the caller's
//     Options.ReleaseAbandoned, which alone can learn that it failed.
//   - A single attempt (Wait zero) takes the lock if it is free at that
//     instant and never queues: it does not defer to waiters, so under
//     sustained contention it mostly fails. Taking turns needs a wait.
//
// Linux, macOS and FreeBSD are supported, with the same contract; the
// platform files say how each system answers the questions (statx and
// openat2 on Linux, lstat, O_NOFOLLOW walks and statfs f_fstypename on the
// other two). Elsewhere every call returns ErrUnsupportedTarget without
// touching the file system.
package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// sidecarPerm is the mode a new sidecar is created with (before umask).
const sidecarPerm = 0o644

// maxIdentityRetries bounds immediate retries after the sidecar was replaced
// between open and flock; more than this is treated as an unstable namespace.
const maxIdentityRetries = 8

// Options controls one acquisition.
type Options struct {
	// Wait is how long to keep retrying while the lock is held elsewhere.
	// Zero (or negative) means a single attempt, which fails with ErrBusy.
	Wait time.Duration
	// Refuse, if set, is asked about each resolved data path before any
	// lock attempt on it; a non-nil result ends the acquisition with that
	// error. Package exclusive refuses quarantined files with it.
	Refuse func(data string) error
	// OpenData asks the re-check under the lock to open an existing data
	// file read-write, through the same symlink-free walk that proves the
	// path resolved, and to keep that descriptor for TakeDataFD: the
	// caller then skips opening the path again. A missing data file, or
	// one the walk cannot open (no openat2, no write permission), leaves
	// no descriptor and is re-checked as without OpenData.
	OpenData bool
	// ExistingOnly is for a caller that will not create the data file
	// (a read-only session): a missing data file ends the acquisition
	// with *MissingError (ErrNoDataFile, fs.ErrNotExist). If no sidecar
	// exists either, nothing is created or locked: no session ever
	// materialized the file, so none can be creating it now. If the
	// sidecar exists, the lock is taken and the data path checked again
	// under it, since a session holding it may be replacing the file.
	ExistingOnly bool
	// ReleaseUnused, if set, releases in place of Unlock a lock that the
	// acquisition obtained but will not return, and must release it as
	// Unlock does: a lock obtained after the deadline (a failure comes
	// back inside a *LateReleaseError), or one the checks under the lock
	// refused (inside a *RecheckReleaseError). Package exclusive releases
	// under its registry with it, so that the quarantine of a failed
	// release is in place before another session of the process can take
	// the lock that release dropped.
	ReleaseUnused func(*Lock) error
	// ReleaseAbandoned, if set, releases in place of Unlock a lock that a
	// kernel-blocked waiter (blocked.go) obtains after the acquisition
	// waiting for it gave up, and must release it as Unlock does. It runs
	// later, on the waiter's goroutine, with no acquisition left to return
	// a failure to, so it must deal with one itself: package exclusive
	// quarantines the file as for ReleaseUnused, and logs. The acquisition
	// that gave up on the waiter last is the one whose ReleaseAbandoned
	// runs. Without it a failed release goes unreported.
	ReleaseAbandoned func(*Lock)
	// Hooks replaces system calls in tests; nil in production.
	Hooks *Hooks
}

// Hooks lets tests inject faults and observe the protocol. Every field may be nil.
type Hooks struct {
	// Flock replaces flock(2) for both locking and unlocking.
	Flock func(fd int, how int) error
	// Close replaces closing the sidecar descriptor. It must close fd (tests
	// use it to report an extra failure after the real close). With Close
	// set, Unlock always closes the descriptor instead of parking it.
	Close func(fd int) error
	// BeforeFlock runs after the sidecar is opened and checked (or a parked
	// descriptor taken), just before flock.
	BeforeFlock func(sidecar string)
	// FSType maps the statfs f_type the kernel reported (on macOS and
	// FreeBSD, the code FilesystemError.Magic describes) to the one to judge.
	FSType func(magic uint32) uint32
	// Sleep replaces time.Sleep between attempts.
	Sleep func(d time.Duration)
}

// Target is a resolved data path with its sidecar, checked for aliases and
// filesystem type but not yet locked.
type Target struct {
	raw     string
	Data    string // absolute data path with every symlink resolved
	Sidecar string // Data + SidecarSuffix
	// dataID identifies the data file if it existed when resolved.
	dataID     fileID
	dataExists bool
	// tentative: Data is raw, taken as already resolved because a session
	// on it left a parked descriptor (see parked.go), without the openat2
	// proof. The re-check under the lock still demands that proof; if it
	// fails the attempt asks for a fresh resolution (errStaleResolve)
	// instead of reporting IdentityChanged.
	tentative bool
	// dataZ and sidecarZ are Data and Sidecar, NUL-terminated, for system
	// calls that would otherwise copy the path on every call.
	dataZ, sidecarZ []byte
}

// newTarget builds a Target for the resolved path data with one allocation
// for both NUL-terminated paths; Sidecar's string shares those bytes.
func newTarget(raw, data string) *Target {
	n := len(data)
	b := make([]byte, 0, 2*n+len(SidecarSuffix)+2)
	b = append(b, data...)
	b = append(b, 0)
	b = append(b, data...)
	b = append(b, SidecarSuffix...)
	b = append(b, 0)
	t := &Target{raw: raw, Data: data, dataZ: b[:n+1], sidecarZ: b[n+1:]}
	t.Sidecar = stringBeforeNUL(t.sidecarZ)
	return t
}

type fileID struct{ dev, ino uint64 }

// ID identifies a locked sidecar inode; equal IDs mean the same lock.
type ID struct{ Dev, Ino uint64 }

// Lock is a held sidecar lock. It keeps the raw descriptor, which nothing
// closes behind its back (no finalizer), so the lock lives until Unlock.
type Lock struct {
	mu     sync.Mutex
	fd     int
	id     ID
	target *Target
	hooks  *Hooks
	magic  uint32 // statfs f_type of the sidecar's filesystem, as the kernel gave it
	// (magic and the flags share one word, so that the Lock stays in the
	// 80-byte size class.)
	release bool
	// parkable: Unlock may park the descriptor (see parked.go). Set only
	// when the kernel gave the mount-root attribute, which the re-check of
	// a parked descriptor relies on, and Hooks.Close is not observing.
	parkable bool
	// dataFD is the data file opened read-write by the re-check
	// (Options.OpenData), until TakeDataFD hands it out or Unlock
	// closes it; noFD otherwise. dataSize is its size then.
	dataFD   int
	dataSize int64
	// waitedAt is when (monoNow) an acquisition of this file by this
	// process last had to wait, zero if none is known, handed on through
	// the parked descriptor; see yieldTurn.
	waitedAt int64
}

// Acquire resolves path and takes its sidecar lock.
func Acquire(path string, opts Options) (*Lock, error) {
	if !supported {
		return nil, ErrUnsupportedTarget
	}
	var start time.Time
	if opts.Wait > 0 {
		start = time.Now()
	}
	t, err := resolve(path, opts.Hooks, true)
	if err != nil {
		return nil, err
	}
	return t.acquire(start, opts)
}

// Acquire takes the target's sidecar lock. The wait starts now.
func (t *Target) Acquire(opts Options) (*Lock, error) {
	if !supported {
		return nil, ErrUnsupportedTarget
	}
	var start time.Time
	if opts.Wait > 0 {
		start = time.Now()
	}
	return t.acquire(start, opts)
}

// deadlineFor returns the monotonic deadline for a wait starting at start.
// time.Now carries a monotonic reading, and Sub/Until use it, so a wall-clock
// step cannot move the deadline.
func deadlineFor(start time.Time, wait time.Duration) time.Time {
	return start.Add(max(wait, 0))
}

func (t *Target) acquire(start time.Time, opts Options) (*Lock, error) {
	h := opts.Hooks
	if opts.Refuse != nil {
		if err := opts.Refuse(t.Data); err != nil {
			return nil, err
		}
	}
	// A single attempt needs no clock at all.
	var deadline time.Time
	if opts.Wait > 0 {
		deadline = deadlineFor(start, opts.Wait)
	}
	identityRetries := 0
	// blocked is a lock a kernel-blocked wait obtained, still to be
	// re-checked as an attempt's flock would be.
	var blocked *Lock
	waited := false
	retried := false    // a single attempt made again after an abandoned waiter's release
	var releases uint64 // abandonedReleases before the last attempt
	for {
		var l *Lock
		var err error
		if blocked != nil {
			l, err = t.verifyLocked(blocked, opts)
			blocked = nil
		} else {
			releases = abandonedReleases.Load()
			l, err = t.attempt(h, opts, deadline)
		}
		switch {
		case err == nil:
			if opts.Wait > 0 && time.Since(deadline) > 0 {
				// Late, by however little: the caller's wait is over.
				// Give the lock back rather than start work under it.
				return nil, releaseLate(l, opts.ReleaseUnused)
			}
			if waited {
				l.waitedAt = monoNow()
			}
			return l, nil
		case err == errStaleResolve:
			// The tentative path was not the resolved one after all:
			// resolve it properly (once; the new Target is not
			// tentative) and ask Refuse again about the new path.
			nt, rerr := resolve(t.raw, h, false)
			if rerr != nil {
				return nil, rerr
			}
			if opts.Refuse != nil {
				if rerr := opts.Refuse(nt.Data); rerr != nil {
					return nil, rerr
				}
			}
			t = nt
			continue
		case errors.Is(err, errSidecarReplaced):
			identityRetries++
			if identityRetries > maxIdentityRetries {
				return nil, &AliasError{Kind: IdentityChanged, Path: t.Sidecar}
			}
			continue
		case errors.Is(err, errWouldBlock):
			waited = true
			// l is the unlocked descriptor the attempt tried.
			if opts.Wait <= 0 {
				bl, berr := t.singleAttemptFailed(l, h, opts.ReleaseAbandoned, retried, releases)
				switch {
				case berr == nil:
					blocked = bl
					continue
				case berr == errRetryNow:
					retried = true
					continue
				}
				return nil, berr
			}
			remaining := time.Until(deadline)
			if remaining <= 0 {
				l.parkOrClose()
				return nil, ErrTimedOut
			}
			if h == nil || h.Sleep == nil {
				bl, berr := t.waitBlocked(l, deadline, opts.ReleaseAbandoned)
				switch {
				case berr == nil:
					blocked = bl
					continue
				case berr == errRetryNow:
					continue
				case berr != errWouldBlock:
					return nil, berr
				}
				// No kernel wait for this descriptor (another session
				// of this process already waits in the kernel for the
				// file, or too many do): poll.
				if remaining = time.Until(deadline); remaining <= 0 {
					return nil, ErrTimedOut
				}
			} else {
				l.parkOrClose()
			}
			sleep := time.Sleep
			if h != nil && h.Sleep != nil {
				sleep = h.Sleep
			}
			sleep(min(PollInterval, remaining))
			if remaining <= PollInterval {
				// The pause ran to the deadline: a lock taken now would
				// be late, so only taken to be given back.
				return nil, ErrTimedOut
			}
		default:
			return nil, err
		}
	}
}

var (
	errWouldBlock      = errors.New("lockfile: would block")
	errDataUnlinked    = errors.New("lockfile: the data file lost its name while it was resolved")
	errRetryNow        = errors.New("lockfile: released by an abandoned waiter; try again")
	errSidecarReplaced = errors.New("lockfile: sidecar replaced")
	errStaleResolve    = errors.New("lockfile: tentative resolution is stale")
)

// Resolve turns path into a Target: symlinks are evaluated before the path is
// made absolute, so "link/../x" means what the kernel means. The parent
// directory must exist. Alias, mount-point and filesystem checks of the data
// file run here; the sidecar's name is checked by each attempt, just before
// it is opened.
func Resolve(path string, h *Hooks) (*Target, error) {
	if !supported {
		return nil, ErrUnsupportedTarget
	}
	return resolve(path, h, false)
}

// resolve is Resolve; with tentativeOK it may return a tentative Target
// (see Target.tentative) when a parked descriptor says path was resolved
// before.
func resolve(path string, h *Hooks, tentativeOK bool) (*Target, error) {
	for tries := 0; ; tries++ {
		t, err := resolveOnce(path, h, tentativeOK)
		if err != errDataUnlinked {
			return t, err
		}
		if tries >= maxIdentityRetries {
			return nil, &AliasError{Kind: IdentityChanged, Path: path}
		}
	}
}

// resolveOnce is one try of resolve. It gives errDataUnlinked when the data
// file it found lost its name before it could be checked.
func resolveOnce(path string, h *Hooks, tentativeOK bool) (*Target, error) {
	// A NUL ends the name the kernel reads: "t.dets\x00x" would lock and
	// open t.dets itself as its sidecar, outside the table's lock.
	if path == "" || strings.IndexByte(path, 0) >= 0 {
		return nil, &AliasError{Kind: InvalidName, Path: path}
	}
	var t *Target
	if tentativeOK && isParked(path) {
		// A session on path, as its resolved path, parked its descriptor:
		// take path as resolved again. One lstat gives what the checks
		// before the lock need; it describes the same file the resolved
		// path would, because path is absolute and clean (it was a
		// resolved path) and the kernel walks such a path the way
		// EvalSymlinks does. Whether path is still free of symlinks is
		// proved under the lock.
		t = newTarget(path, path)
		if st, err := lstatIDz(t.dataZ, path); err == nil && st.mode.IsRegular() {
			t.tentative = true
			if err := t.checkDataInfo(st, h); err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	if filepath.IsAbs(path) && filepath.Clean(path) == path {
		if t == nil {
			t = newTarget(path, path)
		}
		if st, ok := statCanonical(t.dataZ, path); ok {
			// path is already the resolved path of an existing file.
			if err := t.checkDataInfo(st, h); err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	data, err := resolvePath(path)
	if err != nil {
		return nil, err
	}
	t = newTarget(path, data)
	if err := t.checkData(h); err != nil {
		return nil, err
	}
	return t, nil
}

// resolvePath resolves path as the kernel would and makes it absolute. An
// already canonical path of an existing file never gets here (statCanonical
// answers it first).
func resolvePath(path string) (string, error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		r, err := filepath.EvalSymlinks(path)
		if err != nil {
			// EvalSymlinks reports loops without an errno; ask the kernel.
			if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) || isLoop(serr) {
				return "", &AliasError{Kind: DanglingSymlink, Path: path}
			}
			return "", err
		}
		return filepath.Abs(r)
	case err == nil:
		r, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", err
		}
		return filepath.Abs(r)
	case errors.Is(err, fs.ErrNotExist):
		// A new file: resolve the parent as given (no lexical cleaning, which
		// would get "link/.." wrong) and keep the final element.
		i := strings.LastIndexByte(path, '/')
		dir, base := path[:i+1], path[i+1:]
		if base == "" || base == "." || base == ".." {
			return "", &AliasError{Kind: InvalidName, Path: path}
		}
		if dir == "" {
			dir = "."
		}
		rd, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "", err
		}
		ad, err := filepath.Abs(rd)
		if err != nil {
			return "", err
		}
		return filepath.Join(ad, base), nil
	default:
		return "", err
	}
}

// checkData refuses a data file (or, for a new file, a directory) on an
// unsupported filesystem, and a data file that exists but could be reached
// under another sidecar; it records the file's identity for the re-check
// under the lock.
func (t *Target) checkData(h *Hooks) error {
	st, err := lstatIDz(t.dataZ, t.Data)
	if errors.Is(err, fs.ErrNotExist) {
		return checkFS(filepath.Dir(t.Data), h)
	}
	if err != nil {
		return err
	}
	return t.checkDataInfo(st, h)
}

// checkDataInfo is checkData for an existing data file whose (not followed)
// stat result is st.
func (t *Target) checkDataInfo(st statInfo, h *Hooks) error {
	// A file that is not a mount root lies on its directory's mount, so one
	// verdict for that mount covers both the directory and the file. It
	// comes from the mount-ID cache when the kernel gave a unique mount ID
	// that a sidecar descriptor has already been checked on; otherwise both
	// are asked with statfs, as the directory first.
	fsDone := false
	if st.rootKnown && !st.mountRoot && st.mode.IsRegular() {
		if magic, ok := cachedFSType(st); ok {
			if err := judgeFS(magic, filepath.Dir(t.Data), h); err != nil {
				return err
			}
			fsDone = true
		}
	}
	if !fsDone {
		if err := checkFS(filepath.Dir(t.Data), h); err != nil {
			return err
		}
	}
	switch {
	case st.mode&fs.ModeSymlink != 0:
		// Resolution raced with a new symlink.
		return &AliasError{Kind: IdentityChanged, Path: t.Data}
	case !st.mode.IsRegular():
		return &AliasError{Kind: NonRegularData, Path: t.Data}
	case st.nlink == 0:
		// The file was found by an open and then lost its name before
		// the stat: another owner's repair renamed its rebuilt file over
		// the path, or the file was removed. Not an alias: look again.
		return errDataUnlinked
	case st.nlink != 1:
		return &AliasError{Kind: HardLinkedData, Path: t.Data}
	}
	mnt, err := mountRootOf(t.Data, st)
	if err != nil {
		return err
	}
	if mnt {
		return &AliasError{Kind: MountPoint, Path: t.Data}
	}
	if !fsDone {
		if err := checkFS(t.Data, h); err != nil {
			return err
		}
	}
	t.dataExists = true
	t.dataID = st.id
	return nil
}

// checkSidecarName refuses a sidecar path that exists as anything but a plain,
// singly linked regular file, and says whether it exists. It never opens
// the path.
func (t *Target) checkSidecarName() (exists bool, err error) {
	st, err := lstatIDz(t.sidecarZ, t.Sidecar)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case st.mode&fs.ModeSymlink != 0:
		return true, &AliasError{Kind: SymlinkSidecar, Path: t.Sidecar}
	case !st.mode.IsRegular():
		return true, &AliasError{Kind: NonRegularSidecar, Path: t.Sidecar}
	case st.nlink != 1:
		return true, &AliasError{Kind: HardLinkedSidecar, Path: t.Sidecar}
	}
	mnt, err := mountRootOf(t.Sidecar, st)
	if err != nil {
		return true, err
	}
	if mnt {
		return true, &AliasError{Kind: MountPoint, Path: t.Sidecar}
	}
	return true, nil
}

// attempt makes one lock attempt: get a descriptor of the sidecar (a parked
// one, or a fresh open after the name checks), flock it without blocking,
// then check under the lock that the path still names the locked inode and
// what the data path names now (verifyLocked). When the lock is held
// elsewhere it returns errWouldBlock with the unlocked descriptor in l, for
// the caller to wait on, park or close. deadline is the wait's (zero for a
// single attempt).
func (t *Target) attempt(h *Hooks, opts Options, deadline time.Time) (*Lock, error) {
	l := &Lock{fd: noFD, dataFD: noFD, target: t, hooks: h}
	if p, ok := takeParked(t.Data); ok {
		// Opened, checked and judged by an earlier attempt; a
		// descriptor's filesystem never changes, but the verdict is
		// asked again so that the FSType hook still applies.
		l.fd, l.id, l.magic = p.fd, ID{Dev: p.id.dev, Ino: p.id.ino}, p.magic
		l.parkable = h == nil || h.Close == nil
		if err := judgeFS(p.magic, t.Sidecar, h); err != nil {
			l.closeOnly()
			return nil, err
		}
		l.waitedAt = p.waitedAt
		if p.waitedAt != 0 && opts.Wait > 0 {
			yieldTurn(p.waitedAt, deadline, h)
		}
	} else if err := t.openFresh(l, h, opts.ExistingOnly); err != nil {
		return nil, err
	}
	if h != nil && h.BeforeFlock != nil {
		h.BeforeFlock(t.Sidecar)
	}
	if err := l.flock(lockExclusiveNB); err != nil {
		if errors.Is(err, errWouldBlock) {
			// Held elsewhere; the descriptor holds nothing.
			return l, errWouldBlock
		}
		l.closeOnly()
		return nil, &fs.PathError{Op: "flock", Path: t.Sidecar, Err: err}
	}
	return t.verifyLocked(l, opts)
}

// verifyLocked runs the checks due once l's descriptor holds the lock. Is
// the sidecar name still ours, singly linked, regular and not a mount
// point? For a parked descriptor this is also the check that the sidecar
// was not replaced, re-pointed or mounted over since it was opened. Then
// the data path is checked again (recheckData). Any failure unlocks
// (releaseRefused); if that fails too, the acquisition ends there, with
// no retry, as a *RecheckReleaseError.
func (t *Target) verifyLocked(l *Lock, opts Options) (*Lock, error) {
	cur, err := lstatIDz(t.sidecarZ, t.Sidecar)
	if err != nil || cur.id != (fileID{l.id.Dev, l.id.Ino}) || cur.nlink != 1 || !cur.mode.IsRegular() || cur.mountRoot {
		var cause error = &AliasError{Kind: IdentityChanged, Path: t.Sidecar}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			cause = err
		}
		if rerr := releaseRefused(l, cause, opts.ReleaseUnused); rerr != nil {
			return nil, rerr
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errSidecarReplaced
	}
	nt, dataFD, dataSize, err := t.recheckData(opts.OpenData, opts.Hooks)
	if err == nil && opts.ExistingOnly && !nt.dataExists {
		err = &MissingError{Path: t.Data}
	}
	if err != nil {
		cause := err
		if err == errStaleResolve {
			// Released, the path would be resolved afresh; a lock that
			// may still be held ends the acquisition instead, and what
			// ended it is that the path no longer resolves as it did.
			cause = &AliasError{Kind: IdentityChanged, Path: t.Data}
		}
		if rerr := releaseRefused(l, cause, opts.ReleaseUnused); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	l.target = nt
	l.dataFD, l.dataSize = dataFD, dataSize
	return l, nil
}

// openFresh opens the sidecar into l after checking its name (so that a
// FIFO, device or directory is never opened), then checks the descriptor.
// With existingOnly and no data file, a missing sidecar is not created: the
// attempt ends with *MissingError and nothing was written.
func (t *Target) openFresh(l *Lock, h *Hooks, existingOnly bool) error {
	exists, err := t.checkSidecarName()
	if err != nil {
		return err
	}
	create := !existingOnly || t.dataExists
	if !exists && !create {
		return &MissingError{Path: t.Data}
	}
	fd, err := openSidecar(t.sidecarZ, t.Sidecar, create)
	if err != nil {
		if !create && errors.Is(err, fs.ErrNotExist) {
			return &MissingError{Path: t.Data}
		}
		return err
	}
	l.fd = fd
	st, err := fstatID(fd, t.Sidecar)
	if err != nil {
		l.closeOnly()
		return err
	}
	switch {
	case !st.mode.IsRegular():
		l.closeOnly()
		return &AliasError{Kind: NonRegularSidecar, Path: t.Sidecar}
	case st.nlink != 1:
		l.closeOnly()
		return &AliasError{Kind: HardLinkedSidecar, Path: t.Sidecar}
	}
	magic, err := checkFDFS(fd, st, t.Sidecar, h)
	if err != nil {
		l.closeOnly()
		return err
	}
	l.id = ID{Dev: st.id.dev, Ino: st.id.ino}
	l.magic = magic
	l.parkable = st.rootKnown && (h == nil || h.Close == nil)
	return nil
}

// DataPath is the resolved absolute data path to open.
func (l *Lock) DataPath() string { return l.target.Data }

// SidecarPath is the lock file's path.
func (l *Lock) SidecarPath() string { return l.target.Sidecar }

// ID identifies the locked sidecar inode.
func (l *Lock) ID() ID { return l.id }

// DataID identifies the data file as re-checked under the lock; ok is false
// when there was no data file.
func (l *Lock) DataID() (id ID, ok bool) {
	return ID{Dev: l.target.dataID.dev, Ino: l.target.dataID.ino}, l.target.dataExists
}

// TakeDataFD returns the descriptor of the data file opened read-write
// under the lock (Options.OpenData), named by DataPath, with the size the
// re-check read from it, and hands its ownership to the caller. ok is false
// when there is none, on every call after the first, and after Unlock.
// Close the descriptor before Unlock: one that outlives the lock is an
// owner the lock does not see.
func (l *Lock) TakeDataFD() (fd int, size int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fd = l.dataFD
	if fd == noFD {
		return noFD, 0, false
	}
	l.dataFD = noFD
	return fd, l.dataSize, true
}

// Unlock releases the lock: LOCK_UN while the descriptor is still valid,
// then the descriptor is parked for the next session on the same file (see
// parked.go) or closed. A data file descriptor that was never taken is
// closed first. A failed LOCK_UN always closes, which drops the
// lock anyway; both errors are joined. A second call returns ErrReleased.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.release || l.fd == noFD {
		return ErrReleased
	}
	return l.unlock()
}

// releaseRefused releases l, which the checks under the lock refused for
// cause, through release (Options.ReleaseUnused) or else Unlock, never
// parking its descriptor: the sidecar it names may not be the one at the
// path any more. A failed release gives a *RecheckReleaseError.
func releaseRefused(l *Lock, cause error, release func(*Lock) error) error {
	l.parkable = false
	if err := releaseUnused(l, release); err != nil {
		return &RecheckReleaseError{Path: l.DataPath(), Cause: cause, Err: err}
	}
	return nil
}

// unlock is Unlock with l.mu held. The descriptor is parked only when
// parkable (releaseRefused clears it for a sidecar that may not be ours).
func (l *Lock) unlock() error {
	l.release = true
	if l.dataFD != noFD {
		// Never written through, so closing it cannot lose data.
		_ = closeFD(l.dataFD)
		l.dataFD = noFD
	}
	if err := l.flock(lockUnlock); err != nil {
		uerr := &fs.PathError{Op: "unlock", Path: l.target.Sidecar, Err: err}
		return JoinLine(uerr, l.closeFile())
	}
	if l.parkable {
		l.parkOrClose()
		return nil
	}
	return l.closeFile()
}

// parkOrClose hands an unlocked descriptor to the parked set, or closes it.
func (l *Lock) parkOrClose() {
	l.release = true
	if l.parkable {
		fd := l.fd
		l.fd = noFD
		parkFD(l.target.Data, parkedFD{fd: fd, id: fileID{l.id.Dev, l.id.Ino}, magic: l.magic, waitedAt: l.waitedAt})
		return
	}
	_ = l.closeFile()
}

func (l *Lock) closeOnly() {
	l.release = true
	_ = l.closeFile()
}

func (l *Lock) closeFile() error {
	fd := l.fd
	// Forget the number first: after close it may name another file.
	l.fd = noFD
	var err error
	if l.hooks != nil && l.hooks.Close != nil {
		err = l.hooks.Close(fd)
	} else {
		err = closeFD(fd)
	}
	if err != nil {
		return fmt.Errorf("lockfile: closing sidecar: %w", err)
	}
	return nil
}
