package matchspec

import (
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
// matches.
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

// BoundKeys reports the keys a table needs to read when every clause that
// can match a table object (a tuple of at least keyPos elements) has a
// ground key at keyPos (1-based): no variable, no '_' and no map pattern in
// it. The keys are distinct; a table reads only their slots and still runs
// the spec on what it finds there. ok is false when some clause could match
// an object of any key.
func (s *Spec) BoundKeys(keyPos int) (keys []etf.Term, ok bool) {
	if s == nil || keyPos < 1 {
		return nil, false
	}
	var seen [][]byte
	for i := range s.clauses {
		h := &s.clauses[i].head
		switch h.kind {
		case patAny, patBind, patSame:
			return nil, false
		case patTuple:
		default:
			continue // a non-tuple head never matches a table object
		}
		if len(h.elems) < keyPos {
			continue
		}
		k := &h.elems[keyPos-1]
		if !k.ground() {
			return nil, false
		}
		key := k.literal()
		// Dedupe by encoding: -0.0 and 0.0 are Equal but are different
		// keys to a table that hashes their encodings.
		b, err := etf.Encode(key)
		if err != nil {
			return nil, false
		}
		dup := false
		for _, o := range seen {
			if string(o) == string(b) {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, b)
			keys = append(keys, key)
		}
	}
	return keys, true
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
