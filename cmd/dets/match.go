package main

import (
	"flag"
	"iter"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

var matchCmd = &command{
	name:    "match",
	summary: "print the bindings, or the objects, a pattern matches",
	usage:   "dets match [--object] [--count] [--format erlang|json] [--wait D] [--repair MODE] FILE PATTERN",
	help: `Matches PATTERN, an Erlang term as for dets:match/2, against every object
of the table. '_' matches anything; '$1', '$2', ... match anything and bind
it (a variable used twice must match equal terms); anything else must be
equal.

For each object that matches, prints the list of the values bound to the
pattern's variables in the order of their numbers, as [B1,B2]. (Erlang
syntax followed by a dot, which file:consult/1 reads back) or, with
--format json, as a JSON array (the mapping of 'dets dump --help').

--object prints the matching objects themselves (dets:match_object/2).
--count prints only the number of matches.

A pattern whose key is fixed reads only that key's objects. A PATTERN that
does not parse exits 1 with a line saying where it went wrong. Quote it for
the shell.

` + jsonErrorHelp,
	example: `  dets match users.dets "{'\$1', '_', admin}"
  dets match --object users.dets "{'_', '_', admin}"
  dets match --count sessions.dets "{'_', expired}"
  dets match --format json users.dets "{'\$1', '\$2', '_'}"`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		var q queryFlags
		q.declare(fs, c)
		object := fs.Bool("object", false, "print the matching objects instead of the bindings")
		return func(args []string) error {
			if err := exactArgs("match", args, 2, 2, "FILE and PATTERN"); err != nil {
				return err
			}
			if err := q.check(); err != nil {
				return err
			}
			pattern, err := parseQuery("PATTERN", args[1])
			if err != nil {
				return err
			}
			result := matchspec.Bindings
			if *object {
				result = matchspec.Object
			}
			if _, err := matchspec.MatchSpec(pattern, result); err != nil {
				return queryError("PATTERN", err)
			}
			return c.query(args[0], q, func(t *dets.Table) iter.Seq2[etf.Term, error] {
				if *object {
					return t.MatchObjectSeq(pattern)
				}
				return t.MatchSeq(pattern)
			})
		}
	},
}
