package matchspec

import (
	"slices"

	"github.com/godets/godets/etf"
)

// Result names what a pattern-based query returns for each matching
// object, as OTP's dets:match/2, match_object/2 and match_delete/2 do.
type Result uint8

const (
	// Bindings returns the list of the pattern's variables in variable
	// number order ('$$'), as dets:match/2.
	Bindings Result = iota + 1
	// Object returns the object itself ('$_'), as dets:match_object/2.
	Object
	// True returns the atom true, as dets:match_delete/2 uses.
	True
)

// Spec is a compiled match specification. It is immutable, so one Spec may
// be run from many goroutines at once.
type Spec struct {
	clauses []clause
	// maxSlots is the largest variable count of any clause: Run's
	// binding array.
	maxSlots int
	// raw is the raw filter's form of each clause (raw.go), nil when the
	// filter is off.
	raw []rawClause
}

// clause is one {Head, Guards, Body} of a specification.
type clause struct {
	head   pattern
	slots  int     // distinct variables bound by head
	guards []*expr // each must evaluate to true
	body   *expr   // the last body expression: its value is the result
}

// atoms every evaluation may return, kept as interface values once so that
// returning them never allocates.
var (
	termTrue  etf.Term = etf.True
	termFalse etf.Term = etf.False
	termExit  etf.Term = etf.Atom("EXIT")
)

// inlineSlots variables fit in Run's stack array; more are rare and make
// Run allocate its bindings.
const inlineSlots = 16

// Run tests one object. ok reports whether a clause's head matched and all
// its guards were true; result is then that clause's last body expression,
// which is what OTP's select returns for the object. A body expression that
// raises in OTP evaluates to the atom 'EXIT' at the call that raised, as in
// ets and dets. Run never panics and does not allocate when no clause's head
// matches. The result may share memory with obj and with the spec's
// constants: callers must not modify it.
func (s *Spec) Run(obj etf.Term) (result etf.Term, ok bool) {
	if s == nil || obj == nil {
		return nil, false
	}
	var inline [inlineSlots]etf.Term
	var vars []etf.Term
	if s.maxSlots <= inlineSlots {
		vars = inline[:s.maxSlots]
	} else {
		vars = make([]etf.Term, s.maxSlots)
	}
	for i := range s.clauses {
		c := &s.clauses[i]
		v := vars[:c.slots]
		if !c.head.match(obj, v) {
			continue
		}
		if !guardsHold(c, obj, v) {
			continue
		}
		return body(c.body, obj, v), true
	}
	return nil, false
}

// guardsHold evaluates a clause's guards in order; a guard that raises or
// is anything but true fails the clause, as in OTP.
func guardsHold(c *clause, obj etf.Term, vars []etf.Term) bool {
	if len(c.guards) == 0 {
		return true
	}
	for _, g := range c.guards {
		v, ok := eval(g, obj, vars, false)
		if !ok {
			return false
		}
		if a, isAtom := v.(etf.Atom); !isAtom || a != etf.True {
			return false
		}
	}
	return true
}

// BoundKeys reports the keys a table reads instead of scanning, decided
// exactly as OTP's dets does (dets:find_all_keys/3), because the choice
// changes results:
//
//   - every clause head must be a tuple, or the table scans; a tuple
//     smaller than keyPos (1-based) is skipped, as it never matches;
//   - element keyPos must hold no variable: no '_' and no atom '$' followed
//     by what list_to_integer/1 reads ('$01' and '$-1' count, although
//     heads treat them as plain atoms), looking into tuples and lists but
//     not into maps, so a map there is a literal key to look up;
//   - keys that are == are one key, the one of the later clause, as
//     lists:usort/1 keeps it, so [{{1,'_'},[],['$_']},{{1.0,'_'},[],['$_']}]
//     reads only key 1.0 and never returns the objects of key 1.
//
// The keys come in Erlang term order. The table looks each one up (=:=, as
// a lookup does) and runs the spec on what it finds. ok is false when the
// table must scan.
func (s *Spec) BoundKeys(keyPos int) (keys []etf.Term, ok bool) {
	if s == nil || keyPos < 1 {
		return nil, false
	}
	for i := len(s.clauses) - 1; i >= 0; i-- {
		head, isTuple := s.clauses[i].head.lit.(etf.Tuple)
		if !isTuple {
			return nil, false
		}
		if len(head) < keyPos {
			continue
		}
		if containsVariable(head[keyPos-1], 0) {
			return nil, false
		}
		keys = append(keys, head[keyPos-1])
	}
	if len(keys) == 0 {
		return nil, false
	}
	slices.SortStableFunc(keys, etf.Compare)
	return slices.CompactFunc(keys, func(a, b etf.Term) bool { return etf.Compare(a, b) == 0 }), true
}

// containsVariable is dets's test for a key that is not bound.
func containsVariable(t etf.Term, depth int) bool {
	if depth > maxDepth {
		return true
	}
	switch v := t.(type) {
	case etf.Atom:
		return v == "_" || (len(v) > 1 && v[0] == '$' && readsAsInteger(string(v[1:])))
	case etf.Tuple:
		for _, e := range v {
			if containsVariable(e, depth+1) {
				return true
			}
		}
	case etf.List:
		for _, e := range v {
			if containsVariable(e, depth+1) {
				return true
			}
		}
	case *etf.ImproperList:
		if v == nil {
			return false
		}
		for _, e := range v.Elems {
			if containsVariable(e, depth+1) {
				return true
			}
		}
		return containsVariable(v.Tail, depth+1)
	}
	return false
}

// readsAsInteger reports whether list_to_integer/1 accepts s: an optional
// sign and one or more decimal digits.
func readsAsInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// MatchSpec compiles the specification OTP builds for a pattern query:
// [{Pattern, [], ['$$']}] for dets:match/2 (Bindings),
// [{Pattern, [], ['$_']}] for match_object/2 (Object) and
// [{Pattern, [], [true]}] for match_delete/2 (True).
func MatchSpec(pattern etf.Term, result Result) (*Spec, error) {
	var body etf.Term
	switch result {
	case Bindings:
		body = etf.Atom("$$")
	case Object:
		body = etf.Atom("$_")
	case True:
		body = etf.True
	default:
		return nil, &CompileError{Reason: "unknown result kind"}
	}
	return Compile(etf.List{etf.Tuple{pattern, etf.List{}, etf.List{body}}})
}
