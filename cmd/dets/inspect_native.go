package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/godets/godets/dets"
)

// isNativeFile reports whether the file at path has native's version word
// (docs/format-native.md §4.1); a file too short for it is not native.
func isNativeFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [20]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return dets.IsNativeHeader(b[:]), nil
}

// inspectNativeFile is inspect's text for a native file: the file is read
// a node at a time (dets.NativeImage), never whole.
func inspectNativeFile(path, resolved string, a inspectArgs) (string, error) {
	f, err := os.Open(resolved)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	im, err := dets.NewNativeImage(path, f, st.Size())
	if err != nil {
		return "", &codedError{exitCode(err), fmt.Errorf("%s: %v", path, trimPkg(err.Error()))}
	}
	if a.redact {
		red, st, err := im.Redact()
		if err != nil {
			return "", fmt.Errorf("%s: %v", path, trimPkg(err.Error()))
		}
		if a.out != "" {
			if err := writeNew(a.out, red); err != nil {
				return "", err
			}
			return redactedLine(path, a.out, st), nil
		}
		if im, err = dets.NewNativeImage(path, bytes.NewReader(red), int64(len(red))); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	switch {
	case a.slot >= 0:
		e, err := im.Slot(a.slot)
		if err != nil {
			return "", usagef("%v", trimPkg(err.Error()))
		}
		fmt.Fprintf(&b, "slot %d: entry at %d: %d-byte room at %d (as of the last checkpoint)\n", e.Slot, e.At, e.Size, e.Ptr)
		if e.Size == 0 {
			b.WriteString("empty slot\n")
			break
		}
		b.WriteString(dets.FormatRows(im.AnnotateBucket(e.Ptr, e.Size)))
	case a.offset >= 0:
		if err := offsetRows(&b, im, a.offset, im.Size()); err != nil {
			return "", err
		}
	default:
		nativeOverview(&b, path, im)
	}
	return b.String(), nil
}

func nativeOverview(b *strings.Builder, path string, im *dets.NativeImage) {
	fmt.Fprintf(b, "file: %s (%d bytes, native format)\n\nsuperblock and metas:\n", path, im.Size())
	for _, f := range im.Fields() {
		val := fmt.Sprint(f.Value)
		if f.Size == 8 && (f.Name == "magic" || f.Name == "sxh" || strings.HasPrefix(f.Name, "meta ") || f.Name == "file id") {
			val = fmt.Sprintf("%#016x", f.Value)
		}
		fmt.Fprintf(b, "  %10d  %-16s %-20s %s\n", f.Offset, f.Name, val, f.Note)
	}
	parts, segs, err := im.Tree()
	if err != nil {
		fmt.Fprintf(b, "\ntree: %v\n", trimPkg(err.Error()))
	} else {
		fmt.Fprintf(b, "\nparts (%d):\n", len(parts))
		for _, p := range parts {
			fmt.Fprintf(b, "  %6d at %-12d -> %d %s\n", p.Index, p.At, p.Addr, trimPkg(p.Bad))
		}
		// A large table has thousands of segments: the first and the
		// last few say where the tree lives; --offset names any other.
		const shown = 8
		fmt.Fprintf(b, "\nsegments (%d):\n", len(segs))
		for i, s := range segs {
			if i == shown && len(segs) > 2*shown {
				fmt.Fprintf(b, "  ... %d more\n", len(segs)-2*shown)
			}
			if i < shown || i >= len(segs)-shown || len(segs) <= 2*shown {
				fmt.Fprintf(b, "  %6d at %-12d -> %d\n", s.Index, s.At, s.Addr)
			}
		}
	}
	fmt.Fprintf(b, "\nfree record:\n")
	if fr, err := im.Free(); err != nil {
		fmt.Fprintf(b, "  stopped: %v\n", trimPkg(err.Error()))
	} else {
		fmt.Fprintf(b, "  at %d, %d bytes: %d free blocks, %d quarantined, %d runs with free cells\n", fr.At, fr.Len, fr.Buddy, fr.Quar, fr.Runs)
		fmt.Fprintf(b, "  %d bytes free and %d quarantined below the data end; %d bytes past it\n", fr.FreeBytes, fr.QuarBytes, fr.PastDataEnd)
	}
	fmt.Fprintf(b, "\nlog:\n")
	ls, err := im.Log()
	switch {
	case err != nil:
		fmt.Fprintf(b, "  %v\n", trimPkg(err.Error()))
	case ls.Closed:
		fmt.Fprintf(b, "  head page at %d: no record passes: closed properly\n", ls.Head)
	default:
		fmt.Fprintf(b, "  head page at %d: not closed properly; %d records in %d whole groups (%d puts, %d empties, %d growth steps), seq %d..%d, %d more log blocks\n",
			ls.Head, ls.Records, ls.Groups, ls.Puts, ls.Empties, ls.Grows, ls.FirstSeq, ls.LastSeq, len(ls.Blocks))
	}
	if ls.ReadFailed != "" {
		fmt.Fprintf(b, "  read stopped: %s\n", ls.ReadFailed)
	}
}
