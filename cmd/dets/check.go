package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var checkCmd = &command{
	name:    "check",
	summary: "check a table for damage without modifying it",
	usage:   "dets check [--wait D] FILE",
	help: `Checks a table's structure and reads every object, without writing to the
file: it is opened read-only and never repaired (that is 'dets repair').

On a native file every object carries its own checksum: check names each
damaged object by its offset, slot and, where the key element still
decodes, its key ("(unverified)" when the object's checksum failed), then
prints a summary line.

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
	var report *dets.CheckReport
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		in, err := t.Info()
		if err != nil {
			return err
		}
		if in.Format == dets.Native {
			// Native checks every object record on its own and names
			// the damaged ones; the check decodes each object too.
			if redacted {
				// A read would test the keys' hashes, which a redacted
				// copy does not keep: the count is the checked one.
				objects = int64(in.Size)
				return t.CheckStructure()
			}
			r, err := t.CheckReport()
			if err != nil {
				return err
			}
			report, objects = &r, r.Objects
			return r.Err()
		}
		if redacted {
			if err := t.CheckStructure(); err != nil {
				return err
			}
		} else {
			r, err := t.CheckReport()
			if err != nil {
				return err
			}
			report = &r
			if err := r.Err(); err != nil {
				return err
			}
		}
		// Decode every object too: Check proves the structure, this proves
		// that a dump would succeed. An object too deep to decode, which
		// Check listed, is sound all the same.
		for enc, err := range t.RawAll() {
			if err != nil {
				return err
			}
			if _, err := etf.Decode(enc); err != nil && !errors.Is(err, etf.ErrTooDeep) {
				return err
			}
			objects++
		}
		return nil
	})
	switch exitCode(err) {
	case exitOK:
		fmt.Fprintf(c.stdout, "%s: ok (%d objects)\n", shown(path), objects)
		if report != nil && report.DeepCount > 0 {
			fmt.Fprintf(c.stdout, "%s: %s nested deeper than %d levels: sound (OTP reads them), kept by repair and convert, "+
				"but too deep for this tool to decode (dump and get fail on them)\n", shown(path), plural(report.DeepCount, "object"), etf.MaxDepth)
		}
		if report != nil && report.LeakedBytes > 0 {
			// Space no block names: lost until a repair, never data.
			fmt.Fprintf(c.stdout, "%s: %s bytes are in no block (leaked space; a repair recovers it)\n", shown(path), grouped(int64(report.LeakedBytes)))
		}
		return nil
	case exitNeedsRepair:
		return &codedError{exitNeedsRepair, fmt.Errorf("%s: not closed properly (run 'dets repair %s')", path, path)}
	case exitCorrupt:
		if report != nil && report.DamagedCount > 0 {
			c.printDamage(path, report)
			return &codedError{exitCorrupt, fmt.Errorf("%s: damage found (run 'dets repair' to rebuild it from its sound objects)", path)}
		}
		return &codedError{exitCorrupt, fmt.Errorf("damage found: %w (run 'dets repair' to rebuild it)", err)}
	}
	return err
}

// printDamage names each damaged object of a native file, then the other
// problems, then a summary (docs/format-native.md §13.2).
func (c *cmdCtx) printDamage(path string, r *dets.CheckReport) {
	for _, d := range r.Damaged {
		key := "key unreadable"
		if d.KeyOK {
			key = "key " + clip(etf.Format(d.Key))
			if !d.Verified() {
				key += " (unverified)"
			}
		}
		fmt.Fprintf(c.stdout, "%s: object at 0x%016x (slot %d): %s; %s\n", shown(path), d.Offset, d.Slot, d.Reason, key)
	}
	if n := r.DamagedCount - int64(len(r.Damaged)); n > 0 {
		fmt.Fprintf(c.stdout, "%s: %s more damaged objects not listed\n", shown(path), grouped(n))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(c.stdout, "%s: %s\n", shown(path), oneLine(trimPkg(p.Error())))
	}
	fmt.Fprintf(c.stdout, "%s: %s in %s; %s sound\n", shown(path),
		plural(r.DamagedCount, "damaged object"), plural(r.DamagedBuckets, "bucket"), plural(r.Objects, "object"))
}

// plural is "1 bucket", "2 buckets", with digits grouped.
func plural(n int64, what string) string {
	if n != 1 {
		what += "s"
	}
	return grouped(n) + " " + what
}

// grouped writes n with a comma every three digits.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
