package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

var inspectCmd = &command{
	name:    "inspect",
	summary: "show a file's raw layout and annotated bytes; write redacted copies",
	usage:   "dets inspect [--slot N | --offset N] [--redact [--out COPY]] [--wait D] FILE",
	help: `Shows the file as bytes, without opening it as a table, so it works on a
damaged file too and never writes to it: the header fields (with what each
value means and whether the MD5 and trailer agree), the part and segment
pointers and the free lists.

--slot N shows slot N's entry and its bucket as annotated bytes: the bucket
header, every record size and, inside every object, each tag, length and
content run, with a preview of texts and numbers. --offset N does the same
for the bucket that holds byte N, or shows 64 bytes from N named by the
region they are in (header, part table, part, segment, free lists).

A native file gets its own view: the superblock and both metas (which one
is current), the root, parts and segments, the free record and the log of
the current epoch (whether the file was closed properly). It is read a
node at a time, so any size can be inspected (--redact, which copies the
file in memory, up to 2 GiB); --slot, --offset and --redact work as above.

--redact replaces every key and value byte (atom texts, string and binary
bytes, integer digits, floats, the identifiers in pids, ports, references
and funs) with a placeholder of the same length, and keeps sizes, tags and
structure; bytes that belong to no bucket or structure (old data in free
blocks) are zeroed. The output then shows no data, and --out COPY writes the
redacted file to COPY (which must not exist) to attach to a bug report.

A redacted copy keeps the damage: 'dets check --redacted COPY' gives the
verdict that 'dets check --redacted FILE' gives the original. --redacted
leaves out the three checks that the data itself decides, which a copy
cannot keep: that each key hashes to its slot, that keys are in order,
and that a bag holds no object twice. A compressed object cannot be
redacted (exit 1, nothing written).`,
	example: `  dets inspect cache.dets
  dets inspect --slot 42 cache.dets
  dets inspect --offset 123456 --redact cache.dets
  dets inspect --redact --out /tmp/cache-redacted.dets cache.dets
  dets check --redacted /tmp/cache-redacted.dets`,
	readOnly: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		slot := fs.Int64("slot", -1, "show slot `N`'s entry and bucket as annotated bytes")
		offset := fs.Int64("offset", -1, "show the bytes at offset `N`, annotated")
		redact := fs.Bool("redact", false, "replace every key and value byte with a same-length placeholder")
		out := fs.String("out", "", "with --redact, write the redacted copy to `COPY` (must not exist)")
		return func(args []string) error {
			if err := exactArgs("inspect", args, 1, 1, "FILE"); err != nil {
				return err
			}
			if c.repair != dets.NoRepair {
				return usagef("inspect never modifies the file, so --repair must be no")
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			switch {
			case set["slot"] && set["offset"]:
				return usagef("--slot and --offset exclude each other")
			case set["slot"] && *slot < 0, set["offset"] && *offset < 0:
				return usagef("--slot and --offset take a number of 0 or more")
			case set["out"] && !*redact:
				return usagef("--out writes only redacted copies; give --redact too")
			case set["out"] && *out == "":
				return usagef("--out needs a file name")
			}
			return c.inspect(args[0], inspectArgs{slot: *slot, offset: *offset, redact: *redact, out: *out})
		}
	},
}

type inspectArgs struct {
	slot, offset int64
	redact       bool
	out          string
}

func (c *cmdCtx) inspect(path string, a inspectArgs) error {
	if err := existing(path); err != nil {
		return err
	}
	if a.out != "" {
		if _, err := os.Lstat(a.out); err == nil {
			return fmt.Errorf("%s already exists; refusing to overwrite it", a.out)
		}
	}
	var text string
	err := exclusive.Locked(path, exclusive.Options{Wait: c.waitOption()}, func(resolved string) error {
		if native, err := isNativeFile(resolved); err != nil {
			return err
		} else if native {
			text, err = inspectNativeFile(path, resolved, a)
			return err
		}
		im, err := dets.ReadImage(resolved)
		if err != nil {
			return &codedError{exitCode(err), fmt.Errorf("%s: %v", path, trimPkg(err.Error()))}
		}
		var st dets.RedactStats
		if a.redact {
			if im, st, err = im.Redact(); err != nil {
				return fmt.Errorf("%s: %v", path, trimPkg(err.Error()))
			}
		}
		if a.out != "" {
			if err := writeNew(a.out, im.Bytes()); err != nil {
				return err
			}
			text = redactedLine(path, a.out, st)
			return nil
		}
		text, err = inspectText(path, im, a)
		return err
	})
	if err != nil {
		return sessionError(path, c.wait, err)
	}
	_, err = fmt.Fprint(c.stdout, text)
	return err
}

// redactedLine is what inspect --redact --out prints.
func redactedLine(path, out string, st dets.RedactStats) string {
	return fmt.Sprintf("%s: redacted copy written to %s: %d objects in %d buckets, %d content bytes replaced, %d other bytes zeroed (check it with 'dets check --redacted %s')\n",
		path, out, st.Objects, st.Buckets, st.ContentBytes, st.ZeroedBytes, out)
}

// writeNew writes b to a new file at path, synced; a failed write removes it.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s already exists; refusing to overwrite it", path)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %v", path, unwrapPathError(err))
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %v", path, unwrapPathError(err))
	}
	return nil
}

func inspectText(path string, im *dets.Image, a inspectArgs) (string, error) {
	var b strings.Builder
	size := int64(len(im.Bytes()))
	switch {
	case a.slot >= 0:
		e, err := im.Slot(a.slot)
		if err != nil {
			return "", usagef("%v", trimPkg(err.Error()))
		}
		fmt.Fprintf(&b, "slot %d: entry at %d: size %d, pointer %d\n", e.Slot, e.At, e.Size, e.Ptr)
		if e.Size == 0 {
			b.WriteString("empty slot\n")
			break
		}
		if e.Ptr < 0 || e.Ptr+e.Size > size {
			b.WriteString("the bucket lies outside the file\n")
			break
		}
		b.WriteString(dets.FormatRows(im.AnnotateBucket(e.Ptr, e.Size)))
	case a.offset >= 0:
		if err := offsetRows(&b, im, a.offset, size); err != nil {
			return "", err
		}
	default:
		overview(&b, path, im)
	}
	return b.String(), nil
}

// regionView is what --offset needs of a file, in either format.
type regionView interface {
	RegionOf(off int64) dets.Region
	AnnotateBucket(ptr, size int64) []dets.Annotation
	HexRows(off, n int64) []dets.Annotation
}

// offsetRows is --offset: the region that holds byte off, then the bucket
// it is in, annotated, or 64 bytes from off.
func offsetRows(b *strings.Builder, v regionView, off, size int64) error {
	if off >= size {
		return usagef("offset %d is beyond the end of the file (%d bytes)", off, size)
	}
	r := v.RegionOf(off)
	fmt.Fprintf(b, "offset %d: in %s\n", off, r)
	if r.Name == "bucket" {
		b.WriteString(dets.FormatRows(v.AnnotateBucket(r.Start, r.End-r.Start)))
		return nil
	}
	b.WriteString(dets.FormatRows(v.HexRows(off, 64)))
	return nil
}

func overview(b *strings.Builder, path string, im *dets.Image) {
	fmt.Fprintf(b, "file: %s (%d bytes)\n\nheader:\n", shown(path), len(im.Bytes()))
	for _, f := range im.HeaderFields() {
		val := fmt.Sprint(f.Value)
		if f.Name == "cookie" || f.Name == "md5" {
			val = fmt.Sprintf("%#x", f.Value)
		}
		if f.Name == "md5" {
			val = ""
		}
		fmt.Fprintf(b, "  %10d  %-18s %-10s %s\n", f.Offset, f.Name, val, f.Note)
	}
	pointers := func(title string, ps []dets.Pointer) {
		fmt.Fprintf(b, "\n%s (%d):\n", title, len(ps))
		for _, p := range ps {
			fmt.Fprintf(b, "  %6d at %-10d -> %d %s\n", p.Index, p.At, p.Addr, p.Bad)
		}
	}
	pointers("parts", im.Parts())
	pointers("segments", im.Segments())
	ls, err := im.FreeLists()
	fmt.Fprintf(b, "\nfree lists:\n")
	for _, l := range ls {
		const shown = 8
		addrs := fmt.Sprint(l.Addrs[:min(len(l.Addrs), shown)])
		if len(l.Addrs) > shown {
			addrs = strings.TrimSuffix(addrs, "]") + " ...]"
		}
		fmt.Fprintf(b, "  %10d  %8d-byte blocks: %d %s\n", l.At, l.BlockSize, len(l.Addrs), addrs)
	}
	if err != nil {
		fmt.Fprintf(b, "  stopped: %v\n", err)
	}
}
