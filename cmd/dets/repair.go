package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/godets/godets/dets"
)

var repairCmd = &command{
	name:    "repair",
	summary: "rebuild a table from the objects it can read, optionally keeping a backup",
	usage:   "dets repair [--backup PATH] [--repair auto|force] [--wait D] FILE",
	help: `Rebuilds the table from every object the repair scan can read, under the
table's lock, so a service that restarts meanwhile waits or fails cleanly
instead of seeing a half-written file.

By default (--repair force) the file is always rebuilt, which also compacts
a sound file and is what to do after 'dets check' exits 3. With --repair
auto, only a file that was not closed properly is repaired; a sound file is
left as it is.

--backup PATH first copies the file, byte for byte, to PATH (while holding
the lock) and refuses to run if PATH already exists. A repair can lose
objects from damaged buckets, so keep a backup of data you need.`,
	example: `  dets repair --backup /tmp/cache.dets.bak /var/lib/app/cache.dets
  dets repair --repair auto --wait 30s cache.dets`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		backup := fs.String("backup", "", "copy the file to `PATH` before repairing; PATH must not exist")
		return func(args []string) error {
			if err := exactArgs("repair", args, 1, 1, "FILE"); err != nil {
				return err
			}
			mode := dets.ForceRepair
			if c.repairSet {
				if c.repair == dets.NoRepair {
					return usagef("repair with --repair no would do nothing; use auto or force")
				}
				mode = c.repair
			}
			c.repair = mode
			return c.repairFile(args[0], *backup)
		}
	},
}

func (c *cmdCtx) repairFile(path, backup string) error {
	if err := existing(path); err != nil {
		return err
	}
	if backup != "" {
		if _, err := os.Lstat(backup); err == nil {
			return fmt.Errorf("backup %s already exists; refusing to overwrite it", backup)
		}
		if same, err := sameFile(path, backup); err == nil && same {
			return fmt.Errorf("backup %s is the table itself", backup)
		}
	}
	before, err := os.Stat(path)
	if err != nil {
		return err
	}
	var objects int64
	err = c.repairSession(path, backup, func(t *dets.Table) error {
		objects = objectCount(t)
		return nil
	})
	if err != nil {
		return err
	}
	// A repair writes a new file and renames it over the old one, so an
	// unchanged file identity means nothing needed repair.
	if after, err := os.Stat(path); err == nil && os.SameFile(before, after) {
		fmt.Fprintf(c.stdout, "%s: closed properly, nothing to repair: %d objects\n", path, objects)
	} else {
		fmt.Fprintf(c.stdout, "%s: repaired (%s): %d objects\n", path, repairName(c.repair), objects)
	}
	if backup != "" {
		fmt.Fprintf(c.stdout, "%s: backup of the file before the repair\n", backup)
	}
	return nil
}

func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

// copyBackup copies src to dst, which must not exist, and syncs it. A
// failed copy is removed so that a retry is not refused.
func copyBackup(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("backup %s already exists; refusing to overwrite it", dst)
	}
	if err != nil {
		return fmt.Errorf("creating backup: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	if _, err = io.Copy(out, in); err != nil {
		return fmt.Errorf("writing backup %s: %w", dst, err)
	}
	if err = out.Sync(); err != nil {
		return fmt.Errorf("syncing backup %s: %w", dst, err)
	}
	if d, derr := os.Open(filepath.Dir(dst)); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// repairSession opens path with c.repair inside an exclusive session. The
// backup copy (if asked for) is taken inside the session too: the engine
// opens the data file through backupFS, which copies the file first, while
// the lock is already held and before the repair touches anything.
func (c *cmdCtx) repairSession(path, backup string, fn func(*dets.Table) error) error {
	// TODO(dets): draw a progress bar (c.newProgress) from the engine's
	// repair progress hook once dets.Options carries one.
	bfs := &backupFS{FS: dets.OSFS{}, backup: backup}
	err := c.session(path, true, dets.Options{FS: bfs}, fn)
	var be *backupError
	if errors.As(err, &be) {
		return be.err
	}
	return err
}

// backupError marks a failed backup, so it is reported as itself rather
// than as a failure to open the table.
type backupError struct{ err error }

func (e *backupError) Error() string { return e.err.Error() }
func (e *backupError) Unwrap() error { return e.err }

// backupFS is the engine's file system for a repair: the first file the
// engine opens is the table itself, and it is copied to backup before the
// engine sees it. Files pass through unwrapped, so the engine can still
// memory-map them.
type backupFS struct {
	dets.FS
	backup string
	opened bool
}

func (b *backupFS) OpenFile(name string, flag int, perm fs.FileMode) (dets.File, error) {
	first := !b.opened
	b.opened = true
	if first && b.backup != "" {
		if err := copyBackup(name, b.backup); err != nil {
			return nil, &backupError{err}
		}
	}
	return b.FS.OpenFile(name, flag, perm)
}
