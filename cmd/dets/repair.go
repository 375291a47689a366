package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

var repairCmd = &command{
	name:    "repair",
	summary: "rebuild a table from the objects it can read, optionally keeping a backup",
	usage:   "dets repair [--backup PATH] [--kind K --keypos N] [--repair auto|force] [--wait D] FILE",
	help: `Rebuilds the table from every object the repair scan can read, under the
table's lock, so a service that restarts meanwhile waits or fails cleanly
instead of seeing a half-written file. The new file is written next to the
old one and renamed over it, so a crash during the repair leaves the old
file as it was.

By default (--repair force) the file is always rebuilt, which also compacts
a sound file and is what to do after 'dets check' exits 3. With --repair
auto, only a file that was not closed properly is repaired; a sound file is
left as it is.

After the repair a summary goes to stdout: the objects and keys in the new
file, how many whole objects the scan found, how many damaged objects it
dropped, and from how many buckets only some objects could be kept. On a
terminal, a progress bar on stderr follows the scan and the rebuild.

The table's kind and key position come from the file's header. If the
header itself is destroyed, the file is refused as not a DETS file (exit 4)
and left untouched; give --kind and --keypos to say what the table was, and
the scan rebuilds it from the objects it finds. A file in which the scan
finds no object at all is still refused. With a sound header, --kind and
--keypos must match it.

--backup PATH first copies the file, byte for byte, to PATH (while holding
the lock) and refuses to run if PATH already exists. When FILE is a
symbolic link, the backup is a copy of the data file it points to. A
repair can lose objects from damaged buckets, so keep a backup of data you
need.`,
	example: `  dets repair --backup /tmp/cache.dets.bak /var/lib/app/cache.dets
  dets repair --repair auto --wait 30s cache.dets
  dets repair --kind bag --keypos 2 --backup headless.bak headless.dets`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		backup := fs.String("backup", "", "copy the file to `PATH` before repairing; PATH must not exist")
		kind := fs.String("kind", "", "table `kind` (set, bag or duplicate_bag) for a file whose header is destroyed; must match a sound header")
		keypos := fs.Int("keypos", 0, "1-based key `position` for a file whose header is destroyed; must match a sound header")
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
			var o dets.Options
			if *kind != "" {
				k, err := parseKind(*kind)
				if err != nil {
					return err
				}
				o.Kind = k
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			if set["keypos"] && *keypos < 1 {
				return usagef("--keypos must be 1 or more, not %d", *keypos)
			}
			o.KeyPos = *keypos
			return c.repairFile(args[0], *backup, o)
		}
	},
}

func parseKind(s string) (dets.Kind, error) {
	switch s {
	case "set":
		return dets.Set, nil
	case "bag":
		return dets.Bag, nil
	case "duplicate_bag":
		return dets.DuplicateBag, nil
	}
	return 0, usagef("--kind must be set, bag or duplicate_bag, not %q", s)
}

// repairFile repairs path under the table's lock without opening it as a
// table first: dets.Repair reads the file itself, which is what makes a
// file with a destroyed header repairable. shape carries --kind/--keypos.
func (c *cmdCtx) repairFile(path, backup string, shape dets.Options) error {
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
	var (
		stats    dets.RepairStats
		repaired bool
		objects  int64 // of a sound file left alone
	)
	err := exclusive.Locked(path, exclusive.Options{Wait: c.waitOption()}, func(resolved string) error {
		if backup != "" {
			// The resolved path is the data file itself, never a link.
			if err := copyBackup(resolved, backup); err != nil {
				return &codedError{exitError, err}
			}
		}
		var err error
		repaired, objects, stats, err = c.repairLocked(resolved, shape)
		if err != nil {
			return engineError(err, resolved, path, shape)
		}
		return nil
	})
	if err != nil {
		return sessionError(path, c.wait, err)
	}
	if !repaired {
		fmt.Fprintf(c.stdout, "%s: closed properly, nothing to repair: %d objects\n", shown(path), objects)
	} else {
		fmt.Fprintf(c.stdout, "%s: repaired (%s): %d objects, %d keys\n", shown(path), repairName(c.repair), stats.Objects, stats.Keys)
		fmt.Fprintf(c.stdout, "%s: scan found %d whole objects, dropped %d damaged objects, kept part of %d buckets\n",
			shown(path), stats.ObjectsFound, stats.ObjectsDropped, stats.BucketsPartial)
	}
	if backup != "" {
		fmt.Fprintf(c.stdout, "%s: backup of the file before the repair\n", shown(backup))
	}
	return nil
}

// repairLocked runs while the lock is held. With --repair auto it first
// opens the file read-only to see whether it needs repair at all.
func (c *cmdCtx) repairLocked(resolved string, shape dets.Options) (repaired bool, objects int64, st dets.RepairStats, err error) {
	if c.repair == dets.AutoRepair {
		t, err := dets.Open(resolved, dets.Options{ReadOnly: true, Kind: shape.Kind, KeyPos: shape.KeyPos})
		switch {
		case err == nil:
			objects = objectCount(t)
			return false, objects, st, t.Close()
		case errors.Is(err, dets.ErrNeedsRepair):
		case exitCode(err) == exitNotDETS && shape.Kind != 0 && shape.KeyPos != 0:
			// A destroyed header, and the caller said what the table was.
		default:
			return false, 0, st, err
		}
	}
	progress, done := c.rebuildProgress("repair")
	st, err = dets.Repair(resolved, shape, progress)
	done()
	if err != nil && (shape.Kind == 0 || shape.KeyPos == 0) {
		// dets.Repair refuses a header it cannot trust before writing
		// anything. Opening the file says why, in the terms of the exit
		// codes: not a DETS file, or an unsupported version, is exit 4.
		if t, perr := dets.Open(resolved, dets.Options{ReadOnly: true}); perr == nil {
			t.Close()
		} else if exitCode(perr) == exitNotDETS {
			err = perr
		}
	}
	return err == nil, 0, st, err
}

// rebuildProgress returns the engine's progress hook for a repair (or a
// compaction: label names it) and a function that clears the bar, or a nil
// hook when stderr is not a terminal.
func (c *cmdCtx) rebuildProgress(label string) (func(dets.RepairProgress), func()) {
	if !c.stderrTTY {
		return nil, func() {}
	}
	var (
		bar   *progress
		phase string
		found int64
	)
	hook := func(p dets.RepairProgress) {
		if p.Phase != phase {
			bar.Done()
			phase = p.Phase
			if phase == "scan" {
				bar = c.newProgress(label+": scanning bytes", p.BytesTotal)
			} else {
				bar = c.newProgress(label+": writing objects", found)
			}
		}
		if phase == "scan" {
			found = p.Objects
			bar.SetTotal(p.BytesTotal)
			bar.Set(p.BytesScanned)
			return
		}
		bar.Set(p.Objects)
	}
	return hook, func() { bar.Done() }
}

// engineError words an engine error for the operator: the typed path in
// place of the resolved one, and a hint for a file refused as not DETS.
func engineError(err error, resolved, path string, shape dets.Options) error {
	msg := trimPkg(err.Error())
	msg = strings.TrimSuffix(msg, ": "+resolved)
	msg = strings.ReplaceAll(msg, resolved, path)
	if exitCode(err) == exitNotDETS && (shape.Kind == 0 || shape.KeyPos == 0) {
		msg += " (if its header was destroyed, give --kind and --keypos to rebuild it from the objects)"
	}
	return &msgError{msg: msg, err: err}
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
