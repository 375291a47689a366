package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

var convertCmd = &command{
	name:    "convert",
	summary: "convert a table between the otp9 and native formats",
	usage:   "dets convert --to otp9|native [--force] [--wait D] [--repair MODE] SRC DST",
	help: `Writes the table in SRC into a new file DST in the other format, losslessly:
every object, each key's objects in their order, the kind, key position and
slot bounds. SRC is only read. DST is built in DST.TMP, synced and renamed,
so a DST that exists is either the old file or the whole new one. Both
files' session locks are held throughout, taken in the order of their
resolved paths, so two conversions never wait for each other in a cycle.

DST must not exist unless --force is given. SRC must have been closed
properly unless --repair auto repairs it first (which writes to SRC).

otp9 holds at most about 2 GB, 2^32-1 objects and keys, and at most 2^25
slots: a native table beyond them is refused before any byte of DST is
written ("table exceeds otp9's file size: needs N bytes, limit L"). A
native slot ceiling above 2^25 becomes 2^25, which changes no object.`,
	example: `  dets convert --to native cache.dets cache.native
  dets convert --to otp9 --force cache.native cache.dets`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		to := fs.String("to", "", "the format of DST: otp9 or native")
		force := fs.Bool("force", false, "replace DST if it exists")
		return func(args []string) error {
			if err := exactArgs("convert", args, 2, 2, "SRC DST"); err != nil {
				return err
			}
			var f dets.Format
			switch *to {
			case "otp9":
				f = dets.OTP9
			case "native":
				f = dets.Native
			default:
				return usagef("--to must be otp9 or native, not %q", *to)
			}
			return c.convert(args[0], args[1], f, *force)
		}
	},
}

// resolvedDest is dst with every symbolic link followed, also when dst
// does not exist yet (then its directory's).
func resolvedDest(dst string) (string, error) {
	if r, err := filepath.EvalSymlinks(dst); err == nil {
		return filepath.Abs(r)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(dst))
	if err != nil {
		return "", err
	}
	return filepath.Abs(filepath.Join(dir, filepath.Base(dst)))
}

func (c *cmdCtx) convert(src, dst string, to dets.Format, force bool) error {
	if err := existing(src); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil && !force {
		return fmt.Errorf("%s already exists (give --force to replace it)", dst)
	}
	rs, err := resolvedDest(src)
	if err != nil {
		return fmt.Errorf("%s: %v", src, unwrapPathError(err))
	}
	rd, err := resolvedDest(dst)
	if err != nil {
		return fmt.Errorf("%s: %v", dst, unwrapPathError(err))
	}
	if rs == rd {
		return usagef("SRC and DST are the same file")
	}
	// Both locks, in the order of the resolved paths.
	first, second := rs, rd
	if second < first {
		first, second = second, first
	}
	var st dets.ConvertStats
	opts := exclusive.Options{Wait: c.waitOption()}
	name := map[string]string{rs: src, rd: dst}
	err = exclusive.Locked(first, opts, func(string) error {
		err := exclusive.Locked(second, opts, func(string) error {
			var err error
			st, err = dets.Convert(rs, rd, to, dets.ConvertOptions{Repair: c.repair, Force: force})
			if err != nil {
				return convertError(err, rs, src, rd, dst)
			}
			return nil
		})
		// Worded here, where it is known which file's lock failed: the
		// outer session would wrap it as its own callback's failure.
		var se *exclusive.SessionError
		if errors.As(err, &se) && se.Stage == exclusive.CallbackFailure {
			return wordedError{sessionError(src, c.wait, err)}
		} else if err != nil {
			return wordedError{sessionError(name[second], c.wait, err)}
		}
		return nil
	})
	var w wordedError
	var ce *exclusive.CleanupError
	switch {
	case err == nil:
	case errors.As(err, &w) && !errors.As(err, &ce):
		return w.err
	default:
		return sessionError(name[first], c.wait, err)
	}
	fmt.Fprintf(c.stdout, "%s: converted %s to %s in %s: %d objects, %d keys\n", shown(src), st.From, st.To, shown(dst), st.Objects, st.Keys)
	if st.MaxSlotsClamped {
		fmt.Fprintf(c.stdout, "%s: slot ceiling lowered to otp9's %d\n", shown(dst), st.MaxSlots)
	}
	if st.MinSlotsRaised {
		fmt.Fprintf(c.stdout, "%s: minimum slots raised to native's %d\n", shown(dst), st.MinSlots)
	}
	return nil
}

// wordedError carries an error sessionError already worded, through an
// enclosing session that would word it again.
type wordedError struct{ err error }

func (w wordedError) Error() string { return w.err.Error() }
func (w wordedError) Unwrap() error { return w.err }

// convertError words a conversion's failure with the paths as given.
func convertError(err error, rs, src, rd, dst string) error {
	msg := trimPkg(err.Error())
	if errors.Is(err, fs.ErrExist) {
		msg = dst + " already exists (give --force to replace it)"
	}
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, rs, src), rd, dst)
	return &msgError{msg: msg, err: err}
}
