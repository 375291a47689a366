package exclusive

import "github.com/godets/godets/internal/lockfile"

// Locked runs fn while holding the table's lock, without opening the table.
// It is for work that must own the file but cannot, or must not, go through
// dets.Open: dets.Repair of a file whose header is destroyed, or a byte copy
// of the file taken before a repair. fn receives the resolved data path (all
// symlinks followed), which is the file the lock protects; use that path,
// not the one passed in.
//
// Acquisition is the same as With's: the same waits, refusals (unsafe
// aliases, unsupported filesystems, quarantined files, a table open in this
// process outside a session) and errors. Only opts.Wait is used; Repair,
// ReadOnly and Table are ignored because nothing is opened. fn's error comes
// back as a *SessionError with stage CallbackFailure. A release failure
// gives a *CleanupError and quarantines the file, as in With. A panic or
// runtime.Goexit in fn releases the lock before it continues.
//
// fn must not open the table with dets.Open and keep it open past its
// return; nothing would close it.
func Locked(path string, opts Options, fn func(resolvedPath string) error) error {
	if fn == nil {
		return ErrNilCallback
	}
	open := func(l *lockfile.Lock) (lockedFile, error) { return lockedFile(l.DataPath()), nil }
	_, err := run(path, opts.Wait, opts.hooks, false, false, open, func(p lockedFile) (struct{}, error) {
		return struct{}{}, fn(string(p))
	})
	return err
}

// lockedFile is what a Locked session "opens": only the resolved path.
type lockedFile string

func (lockedFile) Close() error { return nil }
