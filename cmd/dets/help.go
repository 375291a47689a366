package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

const commonFlagsHelp = `Common flags (every command that opens a table; check takes only --wait):
  --wait DURATION   wait up to DURATION (e.g. 500ms, 5s) for another process to
                    release the table; the default 0 tries once. A busy table
                    or an expired wait exits 5.
  --repair MODE     what to do with a file that was not closed properly:
                    no (default: fail with exit 2), auto (repair it, then go
                    on) or force (always rebuild the file). auto and force
                    need write access to the file.
`

const waitFlagHelp = `Common flag:
  --wait DURATION   wait up to DURATION (e.g. 500ms, 5s) for another process to
                    release the table; the default 0 tries once. A busy table
                    or an expired wait exits 5.
`

const exitCodesHelp = `Exit codes:
  0  ok
  1  usage or other error (missing file, bad input, ...)
  2  needs repair: the file was not closed properly
  3  corrupt: check found damage
  4  not a DETS file, or an unsupported version
  5  lock busy, or --wait timed out
`

func topHelp() string {
	var b strings.Builder
	b.WriteString(`dets: inspect, check, repair and move the contents of Erlang/OTP DETS tables.

Every command holds the table's lock (the <file>.slate.lock sidecar) while it
works, so a service that restarts meanwhile waits for it or fails cleanly.

Usage:
  dets COMMAND [flags] FILE [...]
  dets help [COMMAND]
  dets COMMAND --help

Commands:
`)
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
		}
	}
	b.WriteString("\n")
	b.WriteString(commonFlagsHelp)
	b.WriteString("\n")
	b.WriteString(exitCodesHelp)
	b.WriteString(`
Examples:
  dets check /var/lib/app/cache.dets || dets repair --backup /tmp/cache.bak /var/lib/app/cache.dets
  dets dump cache.dets > cache.terms      # erl: {ok, Objects} = file:consult("cache.terms")
  dets load --kind bag new.dets cache.terms
  dets dump --format json a.dets | dets load b.dets
  dets get cache.dets '{user, 42}'        # the objects of one key
  dets stats cache.dets                   # load, bucket and free-space histograms
  dets lock cache.dets -- cp cache.dets /backup/   # a command under the table's lock
  dets demo                               # a guided tour on a throw-away table

A failing command prints one line on stderr (JSON with --json or --format
json). DETS_LOG=error (or warn, info, debug) also shows the library's log
records there.
`)
	return b.String()
}

func commandHelp(c *command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", c.usage, strings.TrimSpace(c.help))
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.setup(fs, &cmdCtx{})
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += " " + name
		}
		fmt.Fprintf(&flags, "  %-22s %s", arg, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(&flags, " (default %s)", f.DefValue)
		}
		flags.WriteString("\n")
	})
	if flags.Len() > 0 {
		fmt.Fprintf(&b, "\nFlags:\n%s", flags.String())
	}
	switch {
	case c.readOnly:
		b.WriteString("\n" + waitFlagHelp)
	case !c.noCommon:
		b.WriteString("\n" + commonFlagsHelp)
	}
	if c.example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.example, "\n"))
	}
	b.WriteString("\n" + exitCodesHelp)
	return b.String()
}
