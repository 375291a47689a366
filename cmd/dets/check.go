package main

import (
	"flag"
	"fmt"

	"github.com/godets/godets/dets"
)

var checkCmd = &command{
	name:    "check",
	summary: "check a table for damage without modifying it",
	usage:   "dets check [--wait D] FILE",
	help: `Checks a table's structure and reads every object, without writing to the
file: it is opened read-only and never repaired (that is 'dets repair').

Exit status 0 means the file is sound. 2 means it was not closed properly
(for example its owner crashed) and needs 'dets repair'. 3 means damage was
found; 'dets repair' rebuilds the file from the objects it can still read.

--redacted checks a redacted copy ('dets inspect --redact --out'): it leaves
out the three checks whose outcome the keys and values decide (each key
hashes to its slot, keys are in order, a bag holds no object twice), so
that the copy and its original get the same verdict.`,
	example: `  dets check /var/lib/app/cache.dets
  dets check --wait 10s cache.dets || dets repair --backup cache.bak cache.dets`,
	readOnly: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		redacted := fs.Bool("redacted", false, "leave out the checks that the data decides, for a copy written by 'dets inspect --redact --out'")
		return func(args []string) error {
			if err := exactArgs("check", args, 1, 1, "FILE"); err != nil {
				return err
			}
			if c.repair != dets.NoRepair {
				return usagef("check never modifies the file, so --repair must be no (use 'dets repair')")
			}
			return c.check(args[0], *redacted)
		}
	},
}

func (c *cmdCtx) check(path string, redacted bool) error {
	if err := existing(path); err != nil {
		return err
	}
	var objects int64
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		check := t.Check
		if redacted {
			check = t.CheckStructure
		}
		if err := check(); err != nil {
			return err
		}
		// Decode every object too: Check proves the structure, this proves
		// that a dump would succeed.
		for _, err := range t.All() {
			if err != nil {
				return err
			}
			objects++
		}
		return nil
	})
	switch exitCode(err) {
	case exitOK:
		fmt.Fprintf(c.stdout, "%s: ok (%d objects)\n", path, objects)
		return nil
	case exitNeedsRepair:
		return &codedError{exitNeedsRepair, fmt.Errorf("%s: not closed properly (run 'dets repair %s')", path, path)}
	case exitCorrupt:
		return &codedError{exitCorrupt, fmt.Errorf("damage found: %w (run 'dets repair' to rebuild it)", err)}
	}
	return err
}
