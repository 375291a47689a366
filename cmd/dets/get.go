package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var getCmd = &command{
	name:    "get",
	summary: "print the objects stored under one key",
	usage:   "dets get [--format erlang|json] [--wait D] [--repair MODE] FILE KEY",
	help: `Looks KEY up (dets:lookup/2) and prints every object stored under it, one
per line: in Erlang syntax followed by a dot (file:consult/1 reads them back),
or as JSON Lines with --format json (the mapping of 'dets dump --help').

KEY is an Erlang term in Erlang syntax; quote it for the shell. A trailing
dot is allowed. Keys match exactly (=:=), as in DETS: 1 and 1.0 differ.

A key with no object prints nothing on stdout, says "not found" on stderr
and exits 1.

` + jsonErrorHelp,
	example: `  dets get cache.dets 'user_42'
  dets get cache.dets '{session, <<"ab12">>}'
  dets get --format json cache.dets 42 | jq .`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		format := fs.String("format", "erlang", "output `syntax`: erlang or json")
		c.jsonErrors = func() bool { return *format == "json" }
		return func(args []string) error {
			if err := exactArgs("get", args, 2, 2, "FILE and KEY"); err != nil {
				return err
			}
			if *format != "erlang" && *format != "json" {
				return usagef("--format must be erlang or json, not %q", *format)
			}
			key, err := parseKeyArg(args[1])
			if err != nil {
				return err
			}
			return c.get(args[0], key, *format == "json")
		}
	},
}

// errNotFound is get's answer for a key without objects (exit 1).
var errNotFound = errors.New("not found")

// parseKeyArg reads a key given on the command line in Erlang syntax.
func parseKeyArg(s string) (etf.Term, error) {
	k, err := etf.Parse(s)
	if err != nil {
		return nil, usagef("KEY is not an Erlang term: %v", trimPkg(err.Error()))
	}
	return k, nil
}

func (c *cmdCtx) get(path string, key etf.Term, asJSON bool) error {
	if err := existing(path); err != nil {
		return err
	}
	var objs []etf.Term
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		var err error
		objs, err = t.Lookup(key)
		return err
	})
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("%s: key %s: %w", path, etf.Format(key), errNotFound)
	}
	w := bufio.NewWriter(c.stdout)
	if err := writeTerms(w, objs, asJSON, "object"); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// writeTerms writes each term on its own line, as Erlang text with a dot or
// as JSON; what names the terms in an error.
func writeTerms(w *bufio.Writer, terms []etf.Term, asJSON bool, what string) error {
	var line []byte
	for i, t := range terms {
		var err error
		if line, err = appendTermLine(line[:0], t, asJSON); err != nil {
			return fmt.Errorf("%s %d: %v", what, i+1, err)
		}
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	return nil
}

// appendTermLine appends one output line for t: `Term.` or its JSON.
func appendTermLine(b []byte, t etf.Term, asJSON bool) ([]byte, error) {
	var err error
	if asJSON {
		if b, err = appendJSON(b, t); err != nil {
			return b, fmt.Errorf("cannot be written as JSON: %v", err)
		}
	} else {
		if b, err = etf.AppendFormatStrict(b, t); err != nil {
			return b, fmt.Errorf("cannot be written in Erlang syntax (try --format json): %v", err)
		}
		b = append(b, '.')
	}
	return append(b, '\n'), nil
}
