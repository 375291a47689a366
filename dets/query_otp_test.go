package dets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
	"github.com/godets/godets/internal/msgen"
	"github.com/godets/godets/internal/otptest"
)

// erlQueries runs the queries of several tables in one erl. In is a list
// of binaries: each a table {File, OpenOptions, Queries}, Queries a list of
// {select | match | match_object, Arg} or {select_delete, Spec, Copy,
// GoCopy}: select_delete runs on Copy (a copy of File), then Copy's
// objects are read, and those of GoCopy (the copy Go ran the same
// select_delete on). Each query answers {ok, Result} or {error, Class};
// each table one binary of the list of its answers.
const erlQueries = `
Read = fun(F, Os0) ->
    {ok, T} = dets:open_file(make_ref(), [{file, F}, {repair, false} | Os0]),
    Os = dets:match_object(T, '_'),
    ok = dets:close(T),
    Os end,
Run = fun(T, {select, MS}) -> dets:select(T, MS);
         (T, {match, P}) -> dets:match(T, P);
         (T, {match_object, P}) -> dets:match_object(T, P) end,
Try = fun(F) -> try {ok, F()} catch error:R -> {error, R} end end,
[begin
   {File, Opts, Qs} = binary_to_term(B),
   {ok, T} = dets:open_file(make_ref(), [{file, File}, {repair, false}, {access, read} | Opts]),
   Rs = [case Q of
           {select_delete, MS, Copy, GoCopy} ->
               {ok, T2} = dets:open_file(make_ref(), [{file, Copy}, {repair, false} | Opts]),
               N = Try(fun() -> dets:select_delete(T2, MS) end),
               ok = dets:close(T2),
               {N, Read(Copy, Opts), Read(GoCopy, Opts)};
           _ -> Try(fun() -> Run(T, Q) end)
         end || Q <- Qs],
   ok = dets:close(T),
   term_to_binary(Rs)
 end || B <- In]`

// keyTwins returns objects for the corner cases of choosing keys: keys
// == but not =:= to each other (2 and 2.0), and map keys, which dets looks
// up as written even when a pattern puts a variable in them.
func keyTwins(g *msgen.Gen, keyPos int) []etf.Term {
	var out []etf.Term
	obj := func(key etf.Term) etf.Term {
		o := g.Object()
		o[keyPos-1] = key
		return o
	}
	for i := range 3 {
		out = append(out, obj(etf.Int(i)), obj(etf.Float(float64(i))))
		out = append(out, obj(etf.Map{{Key: etf.Atom("m"), Value: etf.Int(i)}}))
	}
	return out
}

// twinKeySpec makes a spec whose clauses fix keys that may be == to each
// other (2, 2.0), or put a variable in a map key.
func twinKeySpec(g *msgen.Gen, objs []etf.Term, keyPos int) etf.Term {
	r := g.Rand()
	var ms etf.List
	for range 1 + r.IntN(3) {
		o := objs[r.IntN(len(objs))].(etf.Tuple)
		head := make(etf.Tuple, len(o))
		for i := range head {
			head[i] = etf.Atom("_")
		}
		switch r.IntN(4) {
		case 0:
			head[keyPos-1] = etf.Int(r.IntN(3))
		case 1:
			head[keyPos-1] = etf.Float(float64(r.IntN(3)))
		case 2:
			head[keyPos-1] = etf.Map{{Key: etf.Atom("m"), Value: etf.Atom("$1")}}
		default:
			head[keyPos-1] = o[keyPos-1]
		}
		ms = append(ms, etf.Tuple{head, etf.List{}, etf.List{etf.Atom("$_")}})
	}
	return ms
}

// isBound reports whether q looks up keys rather than scanning.
func isBound(q *otpQuery, keyPos int) bool {
	var s *matchspec.Spec
	var err error
	switch q.op {
	case "match", "match_object":
		s, err = matchspec.MatchSpec(q.arg, matchspec.Object)
	default:
		s, err = matchspec.Compile(q.arg)
	}
	if err != nil {
		return false
	}
	_, ok := s.BoundKeys(keyPos)
	return ok
}

type otpQuery struct {
	op        string // select, match, match_object, select_delete
	arg       etf.Term
	goRes     []etf.Term
	goErr     error
	goCount   int
	copy, own string // select_delete: OTP's copy and Go's

	otpAnswer  etf.Term // {ok, Result} | {error, Class}, or for select_delete {N, Left, GoLeft}
	otpCrashed bool     // erl died of a signal on this query alone
}

// otpQueryTable is one table of the differential test and its queries.
type otpQueryTable struct {
	path    string
	kind    Kind
	keyPos  int
	queries []*otpQuery
}

// otpAnswerQueries sets otpAnswer on every query and returns how many erl
// could not answer. All tables go to one erl first. OTP 25's VM can die
// of a segmentation fault in these runs (a match spec corrupts its heap:
// seed 1796219463338051561 crashed it in CI, while no query of that run
// crashed it alone, so the culprit is not known); otptest.EvalSplit then
// runs the queries again in halves, on fresh copies of the select_delete
// files, down to single queries. A query that crashes erl alone is logged
// and left unanswered.
func otpAnswerQueries(t *testing.T, r *otptest.Runner, tables []*otpQueryTable) int {
	var flat []*otpQuery
	var tableOf []*otpQueryTable
	for _, tb := range tables {
		for _, q := range tb.queries {
			flat, tableOf = append(flat, q), append(tableOf, tb)
		}
	}
	answers, answered, crashed := otptest.EvalSplit(t, len(flat), func(lo, hi int) ([]etf.Term, error) {
		return evalQueries(t, r, flat[lo:hi], tableOf[lo:hi])
	})
	for i, q := range flat {
		q.otpAnswer, q.otpCrashed = answers[i], !answered[i]
		if q.otpCrashed {
			t.Logf("erl died on %s(%s) alone; not compared", q.op, etf.Format(q.arg))
		}
	}
	return crashed
}

// evalQueries runs qs in one erl, each on its table tableOf[i] (the
// queries of a table are contiguous), and returns erl's answers in order.
func evalQueries(t *testing.T, r *otptest.Runner, qs []*otpQuery, tableOf []*otpQueryTable) ([]etf.Term, error) {
	var in [][]byte
	var counts []int
	for i := 0; i < len(qs); {
		tb, j := tableOf[i], i
		for j < len(qs) && tableOf[j] == tb {
			j++
		}
		raw := readFileT(t, tb.path)
		var args etf.List
		for _, q := range qs[i:j] {
			if q.op == "select_delete" {
				must(t, os.WriteFile(q.copy, raw, 0o644)) // fresh, in case a crashed run changed it
				args = append(args, etf.Tuple{etf.Atom(q.op), q.arg, etf.Str(q.copy), etf.Str(q.own)})
			} else {
				args = append(args, etf.Tuple{etf.Atom(q.op), q.arg})
			}
		}
		opts := etf.List{etf.Tuple{etf.Atom("type"), kindAtom(tb.kind)}, etf.Tuple{etf.Atom("keypos"), etf.Int(tb.keyPos)}}
		enc, err := etf.Encode(etf.Tuple{etf.Str(tb.path), opts, args})
		must(t, err)
		in, counts = append(in, enc), append(counts, j-i)
		i = j
	}
	out, err := r.EvalErr(erlQueries, in...)
	if err != nil {
		return nil, err
	}
	if len(out) != len(in) {
		t.Fatalf("erl answered for %d tables of %d", len(out), len(in))
	}
	var answers []etf.Term
	for i, b := range out {
		v, err := etf.Decode(b)
		must(t, err)
		l, ok := v.(etf.List)
		if !ok || len(l) != counts[i] {
			t.Fatalf("erl answered %d queries of %d", len(l), counts[i])
		}
		answers = append(answers, l...)
	}
	return answers, nil
}

// TestQueryOTPDifferential: random tables of every kind written by Go, and
// random select, match, match_object and select_delete queries run by Go
// and by OTP on copies of the same file; the results must be the same
// multisets, and after select_delete the counts and the objects left, in
// OTP's file and in Go's, the same.
func TestQueryOTPDifferential(t *testing.T) {
	r := otptest.Erl(t)
	seed := testSeed(t)
	perTable := 360
	if testing.Short() {
		perTable = 60
	}
	dir := t.TempDir()
	var tables []*otpQueryTable
	total, bound := 0, 0
	for ti, kind := range []Kind{Set, Set, Bag, Bag, DuplicateBag, DuplicateBag} {
		keyPos := 1 + ti%2
		g := msgen.New(uint64(seed) + uint64(ti))
		g.KeyPos = keyPos
		rng := g.Rand()
		tb := &otpQueryTable{path: filepath.Join(dir, fmt.Sprintf("%s-%d.dets", kind, keyPos)), kind: kind, keyPos: keyPos}
		tab, err := Open(tb.path, Options{Kind: kind, KeyPos: keyPos})
		must(t, err)
		objs := append(g.Objects(100+rng.IntN(300)), keyTwins(g, keyPos)...)
		must(t, tab.Insert(objs...))
		for range rng.IntN(20) { // some deletes, so buckets move
			must(t, tab.DeleteObject(objs[rng.IntN(len(objs))]))
		}
		must(t, tab.Close())
		sample := func() etf.Term { return objs[rng.IntN(len(objs))] }
		for i := range perTable {
			q := &otpQuery{}
			switch x := rng.IntN(20); {
			case x < 6:
				q.op, q.arg = "select", g.Spec(objs)
			case x < 7:
				q.op, q.arg = "select", g.ExprSpec(objs)
			case x < 8:
				q.op, q.arg = "select", twinKeySpec(g, objs, keyPos)
			case x < 12:
				q.op, q.arg = "match", g.Pattern(sample())
			case x < 16:
				q.op, q.arg = "match_object", g.Pattern(sample())
			default:
				q.op, q.arg = "select_delete", g.DeleteSpec(objs)
				if etf.Equal(q.arg, etf.List{etf.Tuple{etf.Atom("_"), etf.List{}, etf.List{etf.Atom("$_")}}}) {
					// OTP 25's select_delete fails on exactly this
					// spec with a dets_bug error (it takes the
					// shortcut of a plain traversal for it).
					q.arg = etf.List{etf.Tuple{etf.Atom("_"), etf.List{}, etf.List{etf.False}}}
				}
				q.copy = fmt.Sprintf("%s.otp%d", tb.path, i)
				q.own = fmt.Sprintf("%s.go%d", tb.path, i)
				raw := readFileT(t, tb.path)
				must(t, os.WriteFile(q.copy, raw, 0o644))
				must(t, os.WriteFile(q.own, raw, 0o644))
			}
			if isBound(q, keyPos) {
				bound++
			}
			tb.queries = append(tb.queries, q)
			total++
		}
		runGoQueries(t, tb.path, tb.queries)
		tables = append(tables, tb)
	}
	crashed := otpAnswerQueries(t, r, tables)
	if crashed > total/100 {
		t.Fatalf("erl crashed on %d queries of %d (seed %d)", crashed, total, seed)
	}
	failures, nonEmpty, deleted := 0, 0, 0
	for _, tb := range tables {
		for _, q := range tb.queries {
			if q.otpCrashed {
				continue
			}
			if len(q.goRes) > 0 {
				nonEmpty++
			}
			if q.goCount > 0 {
				deleted++
			}
			if msg := compareQuery(t, q, q.otpAnswer); msg != "" {
				failures++
				t.Errorf("%s: %s(%s): %s", filepath.Base(tb.path), q.op, etf.Format(q.arg), msg)
				if failures >= 10 {
					t.Fatalf("too many differences (seed %d)", seed)
				}
			}
		}
	}
	t.Logf("%d queries on %d tables: %d with bound keys, %d reads with results, %d select_deletes that deleted, %d not answered (erl crashed)", total, len(tables), bound, nonEmpty, deleted, crashed)
}

// runGoQueries runs the queries in Go: the reads on the table at path, each
// select_delete on its own copy.
func runGoQueries(t *testing.T, path string, qs []*otpQuery) {
	tab, err := Open(path, Options{ReadOnly: true})
	must(t, err)
	defer tab.Close()
	for _, q := range qs {
		switch q.op {
		case "select":
			q.goRes, q.goErr = tab.Select(q.arg)
		case "match":
			q.goRes, q.goErr = tab.Match(q.arg)
		case "match_object":
			q.goRes, q.goErr = tab.MatchObject(q.arg)
		case "select_delete":
			own, err := Open(q.own, Options{})
			must(t, err)
			q.goCount, q.goErr = own.SelectDelete(q.arg)
			must(t, own.Check())
			must(t, own.Close())
		}
	}
}

// compareQuery compares Go's answer to q with OTP's, and returns what
// differs, or "".
func compareQuery(t *testing.T, q *otpQuery, answer etf.Term) string {
	if q.op == "select_delete" {
		a := answer.(etf.Tuple)
		if msg := compareOutcome(q.goErr, a[0], func(res etf.Term) string {
			if n, ok := res.(etf.Int); !ok || int(n) != q.goCount {
				return fmt.Sprintf("Go deleted %d, OTP %v", q.goCount, res)
			}
			return ""
		}); msg != "" {
			return msg
		}
		otpLeft := sortTerms(a[1].(etf.List))
		if d := diffTerms(sortTerms(a[2].(etf.List)), otpLeft); d != "" {
			return "objects left in Go's file, read by OTP, against OTP's: " + d
		}
		tab, err := Open(q.copy, Options{ReadOnly: true})
		if err != nil {
			return "Go cannot open OTP's file after select_delete: " + err.Error()
		}
		defer tab.Close()
		if d := diffTerms(tableObjects(t, tab), otpLeft); d != "" {
			return "OTP's file read by Go against OTP's own reading: " + d
		}
		return ""
	}
	return compareOutcome(q.goErr, answer, func(res etf.Term) string {
		l, ok := res.(etf.List)
		if !ok {
			return fmt.Sprintf("OTP answered %v", res)
		}
		if d := diffTerms(sortTerms(q.goRes), sortTerms(l)); d != "" {
			return fmt.Sprintf("Go %v, OTP %v: %s", q.goRes, l, d)
		}
		return ""
	})
}

// compareOutcome checks that Go failed where OTP raised badarg, and
// otherwise compares the results with same.
func compareOutcome(goErr error, answer etf.Term, same func(etf.Term) string) string {
	a := answer.(etf.Tuple)
	switch {
	case a[0] == etf.Atom("error") && errors.Is(goErr, ErrBadArgument):
		return ""
	case a[0] == etf.Atom("error"):
		return fmt.Sprintf("OTP raised %v, Go gave %v", a[1], goErr)
	case goErr != nil:
		return fmt.Sprintf("Go failed with %v, OTP answered %v", goErr, a[1])
	}
	return same(a[1])
}
