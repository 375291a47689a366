package lockfile

import (
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/windows"
)

// The Windows lease.
//
// The lock is a named kernel semaphore with count 1 and maximum 1, named
// from the canonical path of the data file (semname.go): its final path
// (GetFinalPathNameByHandle, every symlink and junction followed), or for a
// file still to be created the final path of its directory and the base
// name, case-folded. Taking the lock is taking the count; releasing it is
// ReleaseSemaphore, then CloseHandle.
//
// Why not the Unix way: LockFileEx byte-range locks are mandatory on
// Windows, so every reader of a locked sidecar would fail, and a sidecar
// held open without sharing pins its name, so the directory could not be
// removed while a session runs. A named semaphore is a kernel object that
// leaves nothing on the file system and is destroyed with its last handle,
// so a process that dies holding the lock frees it when the system closes
// its handles.
//
// Why not a named mutex, which the system would even mark as abandoned
// when its owner dies: a mutex is owned by the thread that took it and
// only that thread may release it, while Go moves a goroutine between
// threads at will. A mutex is also recursive, so a second session on the
// same thread would get in instead of being refused. A semaphore has no
// owner: any goroutine of the process may release it, and a second
// session in the process finds the count at zero like another process.
//
// Why a waiter polls instead of blocking in WaitForSingleObject: a
// semaphore has no owner, so the system cannot give a dead holder's count
// back. The count comes back only because the object dies with its last
// handle. A waiter blocked in the kernel holds a handle, and so keeps a
// dead holder's semaphore alive at count zero; waiters arriving while
// others still wait would keep it so for good. So no handle is kept
// while the lock is held elsewhere: each attempt opens the semaphore,
// waits for it with a zero timeout and closes it again, at most every
// PollInterval until the deadline. The price is fairness: a waiter only
// gets the lock if it is free when it looks. As on Unix, a count obtained
// after the deadline, however slightly, is given back: ErrTimedOut.
//
// Under the lock the data path is resolved again. If it now names another
// file (a symlink re-pointed, a directory replaced), whose lock is another
// semaphore, the lock is released and the acquisition fails with
// IdentityChanged, as on Unix. A file created, replaced or removed at the
// same path is judged as resolution would judge it, and the lock
// describes it from then on.
//
// Refused, as on Unix: hard-linked data files (two paths, two names),
// dangling symlinks, directories, devices and pipes at the data path, and
// names Win32 would rewrite (splitNewPath). Network paths, mapped network
// drives (their final path is a UNC path) and other drives that are not
// local, and filesystems other than NTFS, ReFS, FAT, FAT32 and exFAT are
// refused with ErrUnsupportedFilesystem.

// Acquire resolves path and takes its lock.
func Acquire(path string, opts Options) (*Lock, error) {
	var start time.Time
	if opts.Wait > 0 {
		start = time.Now()
	}
	t, err := resolve(path, opts.Hooks)
	if err != nil {
		return nil, err
	}
	return t.acquire(start, opts)
}

// Acquire takes the target's lock. The wait starts now.
func (t *Target) Acquire(opts Options) (*Lock, error) {
	var start time.Time
	if opts.Wait > 0 {
		start = time.Now()
	}
	return t.acquire(start, opts)
}

// Resolve turns path into a Target (see resolve). The parent directory
// must exist.
func Resolve(path string, h *Hooks) (*Target, error) { return resolve(path, h) }

func (t *Target) acquire(start time.Time, opts Options) (*Lock, error) {
	h := opts.Hooks
	var deadline time.Time
	if opts.Wait > 0 {
		// time.Now carries a monotonic reading: a wall-clock step cannot
		// move the deadline.
		deadline = start.Add(opts.Wait)
	}
	if opts.Refuse != nil {
		if err := opts.Refuse(t.Data); err != nil {
			return nil, err
		}
	}
	l, err := t.take(h, opts.Wait > 0, deadline)
	if err != nil {
		return nil, err
	}
	nt, err := resolve(t.raw, h)
	switch {
	case err != nil:
		// Refused as resolution refuses; the error stands.
	case nt.folded != t.folded:
		// Another file now, under another lock than the one taken.
		err = &AliasError{Kind: IdentityChanged, Path: t.Data}
	case opts.ExistingOnly && !nt.dataExists:
		err = &MissingError{Path: nt.Data}
	case opts.Wait > 0 && time.Since(deadline) > 0:
		// Late, by however little: the caller's wait is over. Give the
		// lock back rather than start work under it, naming the file
		// as a timely acquisition would.
		l.target = nt
		return nil, releaseLate(l, opts.ReleaseUnused)
	}
	if err != nil {
		// Refused under the lock. A count that may still be taken ends
		// the acquisition as a *RecheckReleaseError, not as err alone.
		if uerr := releaseUnused(l, opts.ReleaseUnused); uerr != nil {
			return nil, &RecheckReleaseError{Path: l.DataPath(), Cause: err, Err: uerr}
		}
		return nil, err
	}
	// nt, not t: a file created since resolution has its name as stored
	// now, and its identity.
	l.target = nt
	return l, nil
}

// take opens the semaphore and takes its count: once for a single
// attempt (ErrBusy), otherwise polling until deadline (ErrTimedOut).
// Between attempts no handle is kept (see the top of this file).
func (t *Target) take(h *Hooks, wait bool, deadline time.Time) (*Lock, error) {
	sleep := time.Sleep
	if h != nil && h.Sleep != nil {
		sleep = h.Sleep
	}
	for {
		if h != nil && h.BeforeFlock != nil {
			h.BeforeFlock(t.Sidecar)
		}
		sem, err := openSemaphore(t.Sidecar)
		if err == ErrUnsupportedTarget {
			return nil, err
		}
		if err != nil {
			return nil, &fs.PathError{Op: "CreateSemaphore", Path: t.Sidecar, Err: err}
		}
		ev, err := windows.WaitForSingleObject(sem, 0)
		switch {
		case err == nil && ev == windows.WAIT_OBJECT_0:
			return &Lock{h: sem, target: t}, nil
		case err == nil && ev == uint32(windows.WAIT_TIMEOUT):
			windows.CloseHandle(sem)
		default:
			// WAIT_FAILED; WAIT_ABANDONED is for mutexes only.
			windows.CloseHandle(sem)
			if err == nil {
				err = fmt.Errorf("unexpected wait result 0x%x", ev)
			}
			return nil, &fs.PathError{Op: "WaitForSingleObject", Path: t.Sidecar, Err: err}
		}
		if !wait {
			return nil, ErrBusy
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, ErrTimedOut
		}
		sleep(min(PollInterval, remaining))
		if remaining <= PollInterval {
			// The pause ran to the deadline: a count taken now would be
			// late, so only taken to be given back.
			return nil, ErrTimedOut
		}
	}
}

// Unlock releases the lock: ReleaseSemaphore, then CloseHandle. The handle
// is closed even if the release failed; the count then comes back when
// the last handle to the semaphore anywhere is closed. Both errors are
// joined. A second call returns ErrReleased.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return ErrReleased
	}
	l.released = true
	sem := l.h
	l.h = 0
	var rerr, cerr error
	if err := releaseSemaphore(sem); err != nil {
		rerr = &fs.PathError{Op: "ReleaseSemaphore", Path: l.target.Sidecar, Err: err}
	}
	if err := windows.CloseHandle(sem); err != nil {
		cerr = fmt.Errorf("lockfile: closing semaphore: %w", err)
	}
	return JoinLine(rerr, cerr)
}
