//go:build !windows

package lockfile

import (
	"errors"
	"io/fs"
)

// The data path's re-check under the lock.

// recheckData confirms, under the lock, that the raw path still resolves to
// the chosen data path, and checks the file it names now. It returns the
// Target describing that file: t itself, or a copy that took the identity
// of a data file replaced, created or removed while the lock was awaited
// (see recheckInfo). With openData and an existing data file, the proof is
// made on a read-write descriptor of the file, which is returned with the
// file's size (noFD otherwise); every failure closes it.
func (t *Target) recheckData(openData bool, h *Hooks) (*Target, int, int64, error) {
	if t.raw == t.Data {
		// The caller gave the resolved path: it still resolves to itself
		// exactly when no element of it has become a symlink, which one
		// openat2(RESOLVE_NO_SYMLINKS) answers atomically.
		if openData {
			if fd, st, ok := openCanonical(t.dataZ, t.Data, dataOpenFlags); ok {
				return t.keepData(fd, st, h)
			}
		}
		if st, ok := statCanonical(t.dataZ, t.Data); ok {
			nt, err := t.recheckInfo(st, h)
			return nt, noFD, 0, err
		}
		if t.tentative {
			return nil, noFD, 0, errStaleResolve
		}
	}
	data, err := resolvePath(t.raw)
	if err != nil {
		return nil, noFD, 0, err
	}
	if data != t.Data {
		// Another file now, under another sidecar than the one locked.
		return nil, noFD, 0, &AliasError{Kind: IdentityChanged, Path: t.Data}
	}
	if openData {
		// t.Data is resolved: the symlink-free walk reaches it unless
		// something changed, and then the lstat below says what.
		if fd, st, ok := openCanonical(t.dataZ, t.Data, dataOpenFlags); ok {
			return t.keepData(fd, st, h)
		}
	}
	st, err := lstatIDz(t.dataZ, t.Data)
	if errors.Is(err, fs.ErrNotExist) {
		if t.dataExists {
			// Removed by the holder before us: a new file for this
			// session, as if it had never existed.
			nt := *t
			nt.dataExists, nt.dataID = false, fileID{}
			return &nt, noFD, 0, nil
		}
		return t, noFD, 0, nil
	}
	if err != nil {
		return nil, noFD, 0, err
	}
	nt, err := t.recheckInfo(st, h)
	return nt, noFD, 0, err
}

// keepData returns the data descriptor fd, whose statx result is st, if
// the re-check accepts st; otherwise it closes fd.
func (t *Target) keepData(fd int, st statInfo, h *Hooks) (*Target, int, int64, error) {
	nt, err := t.recheckInfo(st, h)
	if err != nil {
		_ = closeFD(fd)
		return nil, noFD, 0, err
	}
	return nt, fd, st.size, nil
}

// recheckInfo checks the data file's current stat result under the lock.
//
// A different file than Resolve saw is not an alias by itself: replacing
// the file under the lock is part of the protocol (a repair, compaction or
// conversion writes a new file and renames it over the path), and a
// session waiting meanwhile must go on with the new file. What the lock
// must guarantee is that the file about to be opened is reached by exactly
// one sidecar, the one now locked. The path still resolves to t.Data (the
// caller proved it), whose sidecar is the locked one, so the new file is
// judged like any file Resolve finds: regular, one link, not a mount point,
// on a local filesystem. The returned copy of t carries its identity.
func (t *Target) recheckInfo(st statInfo, h *Hooks) (*Target, error) {
	switch {
	case !st.mode.IsRegular():
		return nil, &AliasError{Kind: NonRegularData, Path: t.Data}
	case st.nlink != 1:
		return nil, &AliasError{Kind: HardLinkedData, Path: t.Data}
	case st.rootKnown && st.mountRoot:
		// The file itself mounted over its own name (same identity).
		return nil, &AliasError{Kind: MountPoint, Path: t.Data}
	case t.dataExists && st.id == t.dataID:
		return t, nil
	}
	nt := *t
	if err := nt.checkDataInfo(st, h); err != nil {
		return nil, err
	}
	return &nt, nil
}
