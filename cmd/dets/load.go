package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var loadCmd = &command{
	name:    "load",
	summary: "create or extend a table from file:consult/1 text or a JSON dump",
	usage:   "dets load [--kind set|bag|duplicate_bag] [--keypos N] [--format otp9|native] [--syntax auto|erlang|json] [--wait D] [--repair MODE] FILE [INPUT]",
	help: `Reads Erlang terms in file:consult/1 syntax (each term ends with a dot; %
starts a comment) from INPUT, or from stdin when INPUT is missing or "-",
and inserts them into the table FILE. Every term must be a tuple with at
least KEYPOS elements.

It reads the JSON Lines of 'dets dump --format json' as well (one term a
line, in the mapping that 'dets dump --help' shows), so both dump formats
load back as the same objects. By default (--syntax auto) the input is
JSON if its first non-blank line is a JSON object, which Erlang text never
is.

A missing FILE is created with the given kind, key position and format.
Without --kind it is a set, which keeps one object a key, so an input
that repeats a key (the dump of a bag) is then refused: give its --kind.
An existing FILE is extended: inserts follow the table's kind (a set keeps
the last object per key). Its kind and key position are used unless --kind
or --keypos is given, in which case they must match the file.

The whole input is parsed and checked before the table is touched, so a
syntax error (reported with its line number) or a bad object loads nothing.
Only a failure while writing (a full disk, the otp9 2 GB limit) can leave
part of the input in the table. Objects go in by batches: the error says
how many were written before the batch that failed, and some objects of
that batch may be in the table too.`,
	example: `  dets load --kind bag tags.dets tags.terms
  dets dump old.dets | dets load --keypos 2 new.dets
  dets dump --format json old.dets | dets load --kind bag new.dets
  printf '{a,1}.\n{b,2}.\n' | dets load t.dets`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		kind := fs.String("kind", "set", "table `kind`: set, bag or duplicate_bag; an existing file keeps its own unless given")
		keypos := fs.Int("keypos", 1, "1-based key `position` in each tuple; an existing file keeps its own unless given")
		format := fs.String("format", "otp9", "file `format` for a new file: otp9 or native")
		syntax := fs.String("syntax", "auto", "input `syntax`: erlang, json (what dump --format json writes) or auto (json if the first line is a JSON object)")
		return func(args []string) error {
			if err := exactArgs("load", args, 1, 2, "FILE"); err != nil {
				return err
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			var o dets.Options
			k, err := parseKind(*kind)
			if err != nil {
				return err
			}
			o.Kind = k
			if *keypos < 1 {
				return usagef("--keypos must be 1 or more, not %d", *keypos)
			}
			o.KeyPos = *keypos
			switch *format {
			case "otp9":
				o.Format = dets.OTP9
			case "native":
				o.Format = dets.Native
			default:
				return usagef("--format must be otp9 or native, not %q", *format)
			}
			input := "-"
			if len(args) == 2 {
				input = args[1]
			}
			switch *syntax {
			case "auto", "erlang", "json":
			default:
				return usagef("--syntax must be auto, erlang or json, not %q", *syntax)
			}
			return c.load(args[0], input, *syntax, o, set["kind"], set["keypos"])
		}
	},
}

// consultObject is one parsed term and the line where it starts.
type consultObject struct {
	term etf.Term
	line int
}

func (c *cmdCtx) load(path, input, syntax string, o dets.Options, kindSet, keyposSet bool) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s: is a directory, not a DETS file", path)
	}
	var data []byte
	var err error
	name := input
	if input == "-" {
		name = "stdin"
		data, err = io.ReadAll(c.stdin)
	} else {
		data, err = os.ReadFile(input)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %v", name, unwrapPathError(err))
	}
	var objs []consultObject
	switch {
	case syntax == "json" || (syntax == "auto" && looksLikeJSON(data)):
		objs, err = parseJSONLines(data)
	default:
		objs, err = parseConsult(data)
	}
	if err != nil {
		return fmt.Errorf("%s: %v; nothing was loaded", name, err)
	}

	for _, ob := range objs {
		tup, ok := ob.term.(etf.Tuple)
		if !ok {
			return fmt.Errorf("%s:%d: %s is not a tuple; nothing was loaded", name, ob.line, clip(etf.Format(ob.term)))
		}
		if len(tup) < max(o.KeyPos, 1) {
			return fmt.Errorf("%s:%d: %s has %s, fewer than keypos %d; nothing was loaded",
				name, ob.line, clip(etf.Format(tup)), elements(len(tup)), max(o.KeyPos, 1))
		}
		if _, err := etf.Encode(tup); err != nil {
			return fmt.Errorf("%s:%d: %v; nothing was loaded", name, ob.line, err)
		}
	}

	// A new file is a set unless --kind says otherwise, and a set keeps one
	// object a key: an input with repeated keys (the dump of a bag, say)
	// would lose objects without a word. Refuse it before creating anything.
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && !kindSet {
		if n, line := repeatedKeys(objs, max(o.KeyPos, 1)); n > 0 {
			return usagef("%s:%d: %d objects repeat an earlier object's key, and a new table is a set, "+
				"which keeps one object a key; give --kind bag or --kind duplicate_bag to keep them "+
				"all (--kind set keeps the last); nothing was loaded", name, line, n)
		}
	}

	// A zero Kind or KeyPos accepts an existing file's own; a new file gets
	// set and 1.
	if !kindSet {
		o.Kind = 0
	}
	if !keyposSet {
		o.KeyPos = 0
	}
	var total int64
	err = c.session(path, true, o, func(t *dets.Table) error {
		// The file's key position is known only now: check every object
		// against it before the first insert.
		_, keypos := tableShape(t)
		for _, ob := range objs {
			if tup := ob.term.(etf.Tuple); len(tup) < keypos {
				return fmt.Errorf("%s:%d: %s has %s, fewer than the table's keypos %d; nothing was loaded",
					name, ob.line, clip(etf.Format(tup)), elements(len(tup)), keypos)
			}
		}
		bar := c.newProgress("load", int64(len(objs)))
		defer bar.Done()
		const batch = 1000
		for i := 0; i < len(objs); i += batch {
			chunk := objs[i:min(i+batch, len(objs))]
			terms := make([]etf.Term, len(chunk))
			for j, ob := range chunk {
				terms[j] = ob.term
			}
			if err := t.Insert(terms...); err != nil {
				// The batches before this one were acknowledged. Insert
				// writes a batch bucket by bucket and does not say which
				// of its objects reached the file before the failure.
				return fmt.Errorf("%d of %d objects were written; writing the next %d failed, and some of them may be in the table: %w",
					i, len(objs), len(chunk), err)
			}
			bar.Set(int64(i + len(chunk)))
		}
		total = objectCount(t)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: loaded %d objects; the table now holds %d objects\n", shown(path), len(objs), total)
	return nil
}

// repeatedKeys counts the objects whose key (element keypos, compared by
// its encoding) an earlier object has, and gives the line of the first.
func repeatedKeys(objs []consultObject, keypos int) (n, line int) {
	seen := make(map[string]bool, len(objs))
	for _, ob := range objs {
		k, err := etf.Encode(ob.term.(etf.Tuple)[keypos-1])
		if err != nil {
			continue // checked above: cannot happen
		}
		if seen[string(k)] {
			if n == 0 {
				line = ob.line
			}
			n++
		}
		seen[string(k)] = true
	}
	return n, line
}

// elements counts a tuple's elements in words: "1 element", "2 elements".
func elements(n int) string {
	if n == 1 {
		return "1 element"
	}
	return strconv.Itoa(n) + " elements"
}

func clip(s string) string {
	const max = 60
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "..."
	}
	return s
}

// parseConsult reads the whole input as file:consult/1 does, remembering
// where each term starts. A syntax error is reported as "line N: ...".
func parseConsult(data []byte) ([]consultObject, error) {
	r := etf.NewReader(bytes.NewReader(data))
	var out []consultObject
	for {
		t, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		var se *etf.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("syntax error at line %d, column %d: %s", se.Line, se.Col, se.Reason)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, consultObject{term: t, line: r.Line()})
	}
}
