// Package matchspec compiles and runs Erlang match specifications with the
// semantics of OTP 25's ets and dets (ets:match_spec_compile/1 and
// ets:match_spec_run/2, which dets:select/2 uses).
//
// A specification is a list of {Head, Guards, Body} clauses given as an
// etf.Term. Run tries the clauses in order on one object: the first whose
// head matches and whose guards are all true gives the result, the value of
// its last body expression.
//
// # Heads
//
// '_' matches anything; '$N' binds a variable, and a variable that occurs
// again must be exactly equal (=:=, so 1 and 1.0 differ). Constants match
// exactly, floats bit for bit as OTP does (0.0 does not match -0.0).
// Tuples, proper and improper lists nest; a map matches any map that has
// its keys (literals; a variable key is a compile error) with values
// matching its value patterns. OTP's variable numbering is kept: the
// digits wrap at 64 bits and then at signed 32 bits, so '$4294967296' is
// '$0', '$2147483648' and '$01' are plain atoms. Under =:= in OTP 25,
// 0.0 and -0.0 are equal, so a variable may meet both; it keeps the value
// where OTP's match program meets it first: the elements of a tuple or
// list before the tuples and lists among them, and of those the last
// first.
//
// # Guards and bodies
//
// Expressions are '$N', '$_' (the object), '$$' (the variables in number
// order), constants, {const, T}, tuple construction {{E1, ...}}, lists and
// maps whose elements are expressions, and calls {F, A1, ...} of the guard
// functions OTP allows in table specifications: comparisons in Erlang term
// order (== and /= compare numbers by value, =:= and =/= exactly),
// type tests (is_atom, is_float, is_integer, is_list, is_number, is_pid,
// is_port, is_reference, is_tuple, is_map, is_binary, is_function,
// is_map_key, is_record/3), boolean operators (not, xor; and, or,
// andalso, orelse with any number of arguments), arithmetic (+ - * / div
// rem abs, unary + and -, round, trunc, float, with bignums and floats),
// bitwise operators (band bor bxor bnot bsl bsr), element, hd, tl, length,
// size, bit_size, byte_size, map_size, map_get and binary_part/2,3.
// OTP 25 has no tuple_size, is_boolean, min or max in match
// specifications, and neither has this package. self/0 and node/0,1 need
// an Erlang node: compiling them fails with ErrUnsupported.
//
// A guard that raises (element/2 on a non-tuple, arithmetic on an atom)
// fails its clause, and the next clause is tried; so does a guard that is
// not exactly true. In a body, a call that raises evaluates to the atom
// 'EXIT' in its place, as in OTP: [{{'$1'}, [], [{{'$1', {hd, '$1'}}}]}]
// gives {a, 'EXIT'} for the object {a}.
//
// A map built in a guard or body is built in OTP's key order: when two
// keys evaluate to the same term, the later one in that order wins. (OTP
// 25.2's VM crashes when two keys both raise and so are both 'EXIT'; this
// package returns what OTP returns when it survives.)
//
// Integer to float conversion of bignums follows OTP's algorithm, which
// rounds at each 64-bit digit and can differ from correct rounding in the
// last place; float results that overflow raise (badarith).
//
// # Tables
//
// Spec.BoundKeys tells a table which keys to look up instead of scanning,
// decided as dets:select/2 decides it, quirks included (== keys count
// once; a map at the key position is a literal key). MatchSpec builds the
// specifications of dets:match/2, match_object/2 and match_delete/2.
//
// Spec.RejectsRaw tests an object's encoding instead of the object: where
// its heads and guards can be read from the bytes (tuple shapes,
// constants, comparisons, binary_part/byte_size, type tests) it proves
// that Run would reject the object, so a scan decodes only the objects it
// cannot rule out. It never decides a match, only a sure rejection, and
// Spec.FiltersRaw says whether a spec has anything it can read.
//
// # Limits
//
// A specification nested deeper than 1000 levels is refused at compile
// time. Integers produced by arithmetic are limited to MaxIntBits bits
// (OTP allows 128 times more); a larger result raises. Both keep the
// time any specification takes on any object small and bounded.
package matchspec
