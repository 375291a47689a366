package main

import (
	"bufio"
	"flag"
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var dumpCmd = &command{
	name:    "dump",
	summary: "print every object, in Erlang syntax or as JSON",
	usage:   "dets dump [--format erlang|json] [--wait D] [--repair MODE] FILE",
	help: `Prints every object of the table on stdout, one per line, in the table's
traversal order (which is not sorted).

--format erlang (the default) writes each object as an Erlang term followed
by a dot, so that file:consult/1 reads the whole dump back as the same list
of objects, and 'dets load' loads it into another table.

--format json writes JSON Lines with the mapping below, which 'dets load'
reads back as the same terms.

` + jsonErrorHelp + `

` + jsonMappingHelp,
	example: `  dets dump cache.dets > cache.terms
  erl -noshell -eval '{ok, Objs} = file:consult("cache.terms"), io:format("~p~n", [length(Objs)]), halt().'
  dets dump --format json cache.dets | jq -c '.tuple[0]'
  dets dump old.dets | dets load new.dets`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		format := fs.String("format", "erlang", "output `syntax`: erlang or json")
		c.jsonErrors = func() bool { return *format == "json" }
		return func(args []string) error {
			if err := exactArgs("dump", args, 1, 1, "FILE"); err != nil {
				return err
			}
			if *format != "erlang" && *format != "json" {
				return usagef("--format must be erlang or json, not %q", *format)
			}
			return c.dump(args[0], *format == "json")
		}
	},
}

func (c *cmdCtx) dump(path string, asJSON bool) error {
	if err := existing(path); err != nil {
		return err
	}
	w := bufio.NewWriterSize(c.stdout, 64<<10)
	var n int64
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		bar := c.newProgress("dump", objectCount(t))
		defer bar.Done()
		var line []byte
		for obj, err := range t.All() {
			if err != nil {
				return err
			}
			line = line[:0]
			if asJSON {
				if line, err = appendJSON(line, obj); err != nil {
					return fmt.Errorf("object %d cannot be written as JSON: %v", n+1, err)
				}
			} else {
				if line, err = etf.AppendFormatStrict(line, obj); err != nil {
					return fmt.Errorf("object %d cannot be written in Erlang syntax (file:consult/1 could not read it back; try --format json): %v", n+1, err)
				}
				line = append(line, '.')
			}
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
			n++
			bar.Set(n)
		}
		return nil
	})
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("writing output: %w", ferr)
	}
	return err
}
