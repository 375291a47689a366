package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

var versionCmd = &command{
	name:    "version",
	summary: "print the version and source revision of this dets binary",
	usage:   "dets version [--json]    (or dets --version)",
	help: `Prints the module version of this binary, the source revision it was built
from (with the commit time, and "modified" if the working tree had changes),
and the Go version. A binary built outside a version-controlled tree, or
run with 'go run', may not know its revision; it then says "unknown".

--json prints one object with the fields module, version, revision, time,
modified (bool) and go; unknown fields are empty strings.`,
	example: `  dets version
  dets --version`,
	noCommon: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		asJSON := fs.Bool("json", false, "print JSON instead of text")
		c.jsonErrors = func() bool { return *asJSON }
		return func(args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q (usage: dets version [--json])", args[0])
			}
			v := readVersion()
			if *asJSON {
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "%s\n", b)
				return nil
			}
			fmt.Fprintln(c.stdout, v.String())
			return nil
		}
	},
}

// buildVersion is what the binary knows about its own build.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Time     string `json:"time"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

func readVersion() buildVersion {
	info, _ := debug.ReadBuildInfo()
	return versionFrom(info)
}

// versionFrom reads a build's description; nil is a binary without one.
func versionFrom(info *debug.BuildInfo) buildVersion {
	v := buildVersion{Go: runtime.Version()}
	if info == nil {
		return v
	}
	v.Module, v.Version = info.Main.Path, info.Main.Version
	if v.Go == "" {
		v.Go = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line that 'dets version' prints, e.g.
// "dets github.com/godets/godets v1.2.0 (revision 0123abcd, 2026-01-02T03:04:05Z) go1.26.0".
func (v buildVersion) String() string {
	var b strings.Builder
	b.WriteString("dets")
	if v.Module != "" {
		b.WriteString(" " + v.Module)
	}
	version := v.Version
	if version == "" {
		version = "(unknown version)"
	}
	b.WriteString(" " + version)
	rev := "unknown"
	if v.Revision != "" {
		rev = v.Revision
		if v.Time != "" {
			rev += ", " + v.Time
		}
		if v.Modified {
			rev += ", modified"
		}
	}
	fmt.Fprintf(&b, " (revision %s) %s", rev, v.Go)
	return b.String()
}
