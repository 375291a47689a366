package main

import (
	"bufio"
	"flag"
	"fmt"

	"github.com/godets/godets/dets"
)

var keysCmd = &command{
	name:    "keys",
	summary: "print every key, or with --count how many there are",
	usage:   "dets keys [--count] [--format erlang|json] [--wait D] [--repair MODE] FILE",
	help: `Prints every key of the table once, one per line, in traversal order (not
sorted): in Erlang syntax followed by a dot, so file:consult/1 reads the list
of keys back, or as JSON Lines with --format json.

--count prints only the number of keys (dets:info(T, no_keys)).

` + jsonErrorHelp,
	example: `  dets keys cache.dets | head
  dets keys --count cache.dets
  dets keys --format json cache.dets | jq -c .`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		count := fs.Bool("count", false, "print only the number of keys")
		format := fs.String("format", "erlang", "output `syntax`: erlang or json")
		c.jsonErrors = func() bool { return *format == "json" }
		return func(args []string) error {
			if err := exactArgs("keys", args, 1, 1, "FILE"); err != nil {
				return err
			}
			if *format != "erlang" && *format != "json" {
				return usagef("--format must be erlang or json, not %q", *format)
			}
			return c.keys(args[0], *count, *format == "json")
		}
	},
}

func (c *cmdCtx) keys(path string, count, asJSON bool) error {
	if err := existing(path); err != nil {
		return err
	}
	w := bufio.NewWriterSize(c.stdout, 64<<10)
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		if count {
			in, err := t.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%d\n", in.NoKeys)
			return nil
		}
		var line []byte
		n := 0
		for k, err := range t.Keys() {
			if err != nil {
				return err
			}
			n++
			if line, err = appendTermLine(line[:0], k, asJSON); err != nil {
				return fmt.Errorf("key %d: %v", n, err)
			}
			if _, err := w.Write(line); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
		}
		return nil
	})
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("writing output: %w", ferr)
	}
	return err
}
