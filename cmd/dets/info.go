package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

var infoCmd = &command{
	name:    "info",
	summary: "print a summary of a table (kind, keypos, format, counts, size, clean close)",
	usage:   "dets info [--json] [--wait D] [--repair MODE] FILE",
	help: `Prints what a table is: its kind (set, bag or duplicate_bag), key position,
file format, number of objects and keys, slot counts, file size, and whether
it was closed properly. For a native file it also shows the format's
revision and checksums, both meta pages (generation, and whether the
fallback is valid), the records pending in the log, and the generation at
which a repair last verified every object.

The file is opened read-only. A file that was not closed properly cannot be
opened without repair: info then reports "closed properly: no" and exits 2.
With --repair auto it is repaired first (this writes to the file).

--json prints one JSON object with these stable fields:
  file (string), format ("otp9" or "native"), version (number), kind ("set",
  "bag" or "duplicate_bag"), keypos, objects, keys, slots {min, current, max},
  file_size (bytes), closed_properly (bool); for a native file also
  native {revision, checksum, keyHash, metaGen, metaPage, fallbackGen,
  fallbackValid, logRecords, verifiedGen}.
Fields that could not be read (a file that needs repair) are left out.

` + jsonErrorHelp,
	example: `  dets info /var/lib/app/cache.dets
  dets info --json cache.dets | jq .objects`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		asJSON := fs.Bool("json", false, "print JSON instead of text, and report a failure as JSON on stderr")
		c.jsonErrors = func() bool { return *asJSON }
		return func(args []string) error {
			if err := exactArgs("info", args, 1, 1, "FILE"); err != nil {
				return err
			}
			return c.info(args[0], *asJSON)
		}
	},
}

// tableInfo is what `dets info` prints; the JSON names are part of the
// command's contract.
type tableInfo struct {
	File           string     `json:"file"`
	Format         string     `json:"format,omitempty"`
	Version        int        `json:"version,omitempty"`
	Kind           string     `json:"kind,omitempty"`
	KeyPos         int        `json:"keypos,omitempty"`
	Objects        *int64     `json:"objects,omitempty"`
	Keys           *int64     `json:"keys,omitempty"`
	Slots          *slotsInfo `json:"slots,omitempty"`
	FileSize       int64      `json:"file_size"`
	ClosedProperly bool       `json:"closed_properly"`
	Native         *nativeJS  `json:"native,omitempty"`
}

// nativeJS is the native format's state (docs/format-native.md §13.3).
type nativeJS struct {
	Revision      uint32 `json:"revision"`
	Checksum      string `json:"checksum"`
	KeyHash       string `json:"keyHash"`
	MetaGen       uint64 `json:"metaGen"`
	MetaPage      string `json:"metaPage"`
	FallbackGen   uint64 `json:"fallbackGen"`
	FallbackValid bool   `json:"fallbackValid"`
	LogRecords    int    `json:"logRecords"`
	VerifiedGen   uint64 `json:"verifiedGen"`
}

// nativeState reads the format state of a native file for info; nil for
// an otp9 file or one whose header pages cannot be read.
func nativeState(path string) *nativeJS {
	ni, err := dets.ReadNativeInfo(path)
	if err != nil {
		return nil
	}
	return &nativeJS{Revision: ni.Revision, Checksum: ni.Checksum, KeyHash: ni.KeyHash,
		MetaGen: ni.MetaGen, MetaPage: ni.MetaPage, FallbackGen: ni.FallbackGen,
		FallbackValid: ni.FallbackValid, LogRecords: ni.LogRecords, VerifiedGen: ni.VerifiedGen}
}

type slotsInfo struct {
	Min     int64 `json:"min"`
	Current int64 `json:"current"`
	Max     int64 `json:"max"`
}

// infoAfterSession, nil outside tests, runs when info's session found
// that the file needs repair, before info reads what it still can.
var infoAfterSession func()

func (c *cmdCtx) info(path string, asJSON bool) error {
	if err := existing(path); err != nil {
		return err
	}
	var ti tableInfo
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		var err error
		if ti, err = describe(path, t); err == nil && ti.Format == dets.Native.String() {
			ti.Native = nativeState(path)
		}
		return err
	})
	code := exitCode(err)
	if err != nil && code != exitNeedsRepair {
		return err
	}
	if err != nil {
		// The table cannot be opened without repair; say so in the
		// summary, read under the lock as the session's reads are.
		ti = tableInfo{File: path, ClosedProperly: false}
		if infoAfterSession != nil {
			infoAfterSession()
		}
		lerr := exclusive.Locked(path, exclusive.Options{Wait: c.waitOption()}, func(resolved string) error {
			if sz, serr := fileSize(resolved); serr == nil {
				ti.FileSize = sz
			}
			// A native file's header pages still say what it is.
			if ti.Native = nativeState(resolved); ti.Native != nil {
				ti.Format = dets.Native.String()
			}
			return nil
		})
		if lerr != nil {
			return sessionError(path, c.wait, lerr)
		}
	}
	if asJSON {
		b, jerr := json.MarshalIndent(ti, "", "  ")
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(c.stdout, "%s\n", b)
	} else {
		c.printInfo(ti)
	}
	return err
}

func (c *cmdCtx) printInfo(ti tableInfo) {
	var b strings.Builder
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(&b, "%-16s %s\n", k+":", fmt.Sprintf(format, args...))
	}
	row("file", "%s", shown(ti.File))
	if ti.Kind != "" {
		row("kind", "%s", ti.Kind)
		row("keypos", "%d", ti.KeyPos)
		if ti.Native == nil {
			row("format", "%s (version %d)", ti.Format, ti.Version)
		}
	}
	if n := ti.Native; n != nil {
		row("format", "native (revision %d), checksums %s, key hash %s", n.Revision, n.Checksum, n.KeyHash)
		other := map[string]string{"A": "B", "B": "A"}[n.MetaPage]
		if n.FallbackValid {
			row("meta", "%s gen %d (current), %s gen %d (valid)", n.MetaPage, n.MetaGen, other, n.FallbackGen)
		} else {
			row("meta", "%s gen %d (current), %s not valid", n.MetaPage, n.MetaGen, other)
		}
		if n.LogRecords == 0 {
			row("log", "empty: closed properly")
		} else {
			row("log", "%d records pending: not closed properly", n.LogRecords)
		}
		if n.VerifiedGen == 0 {
			row("verified", "never by a repair; run 'dets check' for a full read")
		} else {
			row("verified", "all objects at gen %d (repair); run 'dets check' for a full read", n.VerifiedGen)
		}
	}
	if ti.Objects != nil {
		row("objects", "%d", *ti.Objects)
	}
	if ti.Keys != nil {
		row("keys", "%d", *ti.Keys)
	}
	if ti.Slots != nil {
		row("slots", "%d (min %d, max %d)", ti.Slots.Current, ti.Slots.Min, ti.Slots.Max)
	}
	row("file size", "%d bytes", ti.FileSize)
	if ti.ClosedProperly {
		row("closed properly", "yes")
	} else {
		row("closed properly", "no (needs repair)")
	}
	fmt.Fprint(c.stdout, b.String())
}
