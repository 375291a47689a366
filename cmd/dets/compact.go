package main

import (
	"flag"
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

var compactCmd = &command{
	name:    "compact",
	summary: "rebuild a sound table without its free space, printing the sizes",
	usage:   "dets compact [--dry-run] [--wait D] FILE",
	help: `Rebuilds the table into a new file with no free space between its buckets
(the same rebuild as 'dets repair', which OTP does with {repair, force}) and
prints the file size before and after.

compact refuses a file that is not sound, so that it never drops an object:
the whole table is checked first (as 'dets check' does) under the table's
lock, and a file that was not closed properly (exit 2) or is damaged (exit
3) is left as it is; 'dets repair' is the command for those. The new file
is written next to the old one and renamed over it, so a crash leaves the
old file as it was.

--dry-run only estimates the size after compaction (from 'dets stats'
numbers) and writes nothing. The estimate counts the buckets as they are;
the rebuild spreads the keys over a new number of slots, so the real size
differs somewhat.

On a terminal, a progress bar on stderr follows the rebuild.`,
	example: `  dets compact /var/lib/app/cache.dets
  dets compact --dry-run cache.dets`,
	readOnly: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		dryRun := fs.Bool("dry-run", false, "estimate the size after compaction and write nothing")
		return func(args []string) error {
			if err := exactArgs("compact", args, 1, 1, "FILE"); err != nil {
				return err
			}
			if c.repair != dets.NoRepair {
				return usagef("compact rebuilds only a sound file, so --repair must be no (use 'dets repair')")
			}
			if *dryRun {
				return c.compactEstimate(args[0])
			}
			return c.compact(args[0])
		}
	},
}

func (c *cmdCtx) compactEstimate(path string) error {
	if err := existing(path); err != nil {
		return err
	}
	var st dets.Stats
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		var err error
		st, err = t.Stats()
		return err
	})
	if err != nil {
		return checkedError(path, err) // compact takes no --repair: no hint of it
	}
	before, err := fileSize(path)
	if err != nil {
		return err
	}
	after := st.CompactedSize()
	fmt.Fprintf(c.stdout, "%s: %d bytes now, about %d bytes after compaction (%s), %d objects (dry run, nothing written)\n",
		shown(path), before, after, sizeChange(before, after), st.Objects)
	return nil
}

func (c *cmdCtx) compact(path string) error {
	if err := existing(path); err != nil {
		return err
	}
	var before, after int64
	var stats dets.RepairStats
	err := exclusive.Locked(path, exclusive.Options{Wait: c.waitOption()}, func(resolved string) error {
		objects, err := soundObjects(resolved)
		if err != nil {
			return engineError(err, resolved, path, dets.Options{Kind: dets.Set, KeyPos: 1})
		}
		if before, err = fileSize(resolved); err != nil {
			return err
		}
		progress, done := c.rebuildProgress("compact")
		stats, err = dets.Repair(resolved, dets.Options{}, progress)
		done()
		if err != nil {
			return engineError(err, resolved, path, dets.Options{Kind: dets.Set, KeyPos: 1})
		}
		if stats.Objects != objects {
			// Cannot happen for a file that passed Check; say so loudly.
			return fmt.Errorf("the rebuilt file holds %d objects, the table held %d", stats.Objects, objects)
		}
		after, err = fileSize(resolved)
		return err
	})
	if err != nil {
		return checkedError(path, sessionError(path, c.wait, err))
	}
	fmt.Fprintf(c.stdout, "%s: compacted: %d bytes before, %d bytes after (%s), %d objects, %d keys\n",
		shown(path), before, after, sizeChange(before, after), stats.Objects, stats.Keys)
	return nil
}

// soundObjects opens the file read-only and checks it whole, as dets check
// does, returning its object count.
func soundObjects(path string) (int64, error) {
	t, err := dets.Open(path, dets.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer t.Close()
	if err := t.Check(); err != nil {
		return 0, err
	}
	var n int64
	for _, err := range t.All() {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// checkedError words the refusals of a file that is not sound.
func checkedError(path string, err error) error {
	switch exitCode(err) {
	case exitNeedsRepair:
		return &codedError{exitNeedsRepair, fmt.Errorf("%s: not closed properly; compact rebuilds only a sound file (run 'dets repair %s')", path, path)}
	case exitCorrupt:
		return &codedError{exitCorrupt, fmt.Errorf("damage found, nothing written: %w (run 'dets repair --backup PATH %s')", err, path)}
	}
	return err
}

func sizeChange(before, after int64) string {
	if before <= 0 {
		return "new"
	}
	d := float64(after-before) / float64(before) * 100
	switch {
	case after == before:
		return "unchanged"
	case d < 0:
		return fmt.Sprintf("%.1f%% smaller", -d)
	}
	return fmt.Sprintf("%.1f%% larger", d)
}
