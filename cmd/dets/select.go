package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"iter"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

var selectCmd = &command{
	name:    "select",
	summary: "print what a match specification returns, or delete by one",
	usage:   "dets select [--delete] [--count] [--format erlang|json] [--wait D] [--repair MODE] FILE MATCHSPEC",
	help: `Runs the match specification MATCHSPEC, written in Erlang syntax as for
dets:select/2 (a list of {Head, Guards, Body} clauses), over the table and
prints each result on stdout, one per line, as an Erlang term followed by a
dot (file:consult/1 reads the output back as the list dets:select/2 gives),
or as JSON Lines with --format json (the mapping of 'dets dump --help').

When every clause's head fixes the key, only those keys are read, as OTP
does; otherwise every object is. Results come in the table's traversal
order, which is not sorted.

--count prints only the number of results.

--delete deletes every object for which the spec returns true (as
dets:select_delete/2) and reports on stderr how many it deleted; with
--count the number goes to stdout instead.

A MATCHSPEC that does not parse or is not a valid match specification exits
1 with a line saying where it went wrong. Quote it for the shell.

` + jsonErrorHelp,
	example: `  dets select users.dets "[{{'\$1', '\$2', '\$3'}, [{'>', '\$3', 30}], ['\$1']}]"
  dets select --count users.dets "[{{'_', '_', admin}, [], [true]}]"
  dets select --format json users.dets "[{{'\$1', '_', '_'}, [], [{{'\$1'}}]}]"
  dets select --delete sessions.dets "[{{'_', '\$1'}, [{'<', '\$1', 1700000000}], [true]}]"`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		var q queryFlags
		q.declare(fs, c)
		del := fs.Bool("delete", false, "delete the objects the spec returns true for, print how many")
		return func(args []string) error {
			if err := exactArgs("select", args, 2, 2, "FILE and MATCHSPEC"); err != nil {
				return err
			}
			if err := q.check(); err != nil {
				return err
			}
			ms, err := parseQuery("MATCHSPEC", args[1])
			if err != nil {
				return err
			}
			if _, err := matchspec.Compile(ms); err != nil {
				return queryError("MATCHSPEC", err)
			}
			if *del {
				return c.deleteBy(args[0], q, func(t *dets.Table) (int, error) { return t.SelectDelete(ms) })
			}
			return c.query(args[0], q, func(t *dets.Table) iter.Seq2[etf.Term, error] { return t.SelectSeq(ms) })
		}
	},
}

// queryFlags are the output flags select and match share.
type queryFlags struct {
	format *string
	count  *bool
}

func (q *queryFlags) declare(fs *flag.FlagSet, c *cmdCtx) {
	q.format = fs.String("format", "erlang", "output `syntax`: erlang or json")
	q.count = fs.Bool("count", false, "print only the number of results")
	c.jsonErrors = func() bool { return *q.format == "json" }
}

func (q *queryFlags) check() error {
	if *q.format != "erlang" && *q.format != "json" {
		return usagef("--format must be erlang or json, not %q", *q.format)
	}
	return nil
}

// parseQuery reads a query argument in Erlang syntax; what names it in the
// message.
func parseQuery(what, text string) (etf.Term, error) {
	t, err := etf.Parse(text)
	if err != nil {
		return nil, queryError(what, err)
	}
	return t, nil
}

// queryError words a query that does not parse or compile: what, then the
// parser's or compiler's own reason without its package prefix.
func queryError(what string, err error) error {
	msg := err.Error()
	for _, p := range []string{"etf: ", "matchspec: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return usagef("%s: %s", what, msg)
}

// query prints the results of run's query on the table at path.
func (c *cmdCtx) query(path string, q queryFlags, run func(*dets.Table) iter.Seq2[etf.Term, error]) error {
	if err := existing(path); err != nil {
		return err
	}
	w := bufio.NewWriterSize(c.stdout, 64<<10)
	var n int64
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		var line []byte
		for res, err := range run(t) {
			if err != nil {
				return queryFailure(err)
			}
			n++
			if *q.count {
				continue
			}
			line = line[:0]
			if *q.format == "json" {
				if line, err = appendJSON(line, res); err != nil {
					return fmt.Errorf("result %d cannot be written as JSON: %v", n, err)
				}
			} else {
				if line, err = etf.AppendFormatStrict(line, res); err != nil {
					return fmt.Errorf("result %d cannot be written in Erlang syntax (try --format json): %v", n, err)
				}
				line = append(line, '.')
			}
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
		}
		return nil
	})
	if err == nil && *q.count {
		fmt.Fprintln(w, n)
	}
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("writing output: %w", ferr)
	}
	return err
}

// deleteBy runs a deleting query in a write session and reports the count.
func (c *cmdCtx) deleteBy(path string, q queryFlags, del func(*dets.Table) (int, error)) error {
	if err := existing(path); err != nil {
		return err
	}
	var n int
	err := c.session(path, true, dets.Options{}, func(t *dets.Table) error {
		var err error
		n, err = del(t)
		if err != nil {
			return fmt.Errorf("after deleting %d objects: %w", n, queryFailure(err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case *q.count:
		fmt.Fprintln(c.stdout, n)
	case *q.format == "json":
		fmt.Fprintf(c.stderr, "{\"deleted\":%d}\n", n)
	default:
		fmt.Fprintf(c.stderr, "deleted %d objects\n", n)
	}
	return nil
}

// queryFailure makes a spec the table refuses a usage error (the spec
// was checked before the session, so this is a safety net).
func queryFailure(err error) error {
	if errors.Is(err, matchspec.ErrBadSpec) {
		return queryError("query", err)
	}
	return err
}
