// Package etf models Erlang terms and converts them to and from the external
// term format (the bytes of erlang:term_to_binary/1), Erlang text syntax, and
// erlang:phash2/1,2.
//
// The term model is a small set of Go types that all satisfy Term:
//
//	Atom        'ok', true, 'hello world'
//	Int         integers that fit in int64 (the fast path)
//	*BigInt     integers outside int64; never holds a value that fits in Int
//	Float       finite IEEE-754 doubles (Erlang has no NaN or infinities)
//	Binary      <<1,2,3>>
//	Bitstring   <<5:3>>: a bit string whose length is not a multiple of 8
//	Tuple       {a,1}
//	List        [1,2,3], "abc", [] (a proper list; nil or empty is [])
//	*ImproperList [a|b]
//	Map         #{a => 1}
//	*Opaque     pids, references, ports and funs, kept as their exact bytes
//
// Terms built with these types compare with Compare and Equal as Erlang does.
// Use the constructors (NewInt, Str, ...) to get normalized values.
//
// # Terms kept as encodings
//
// Raw and RawBatch are for storage engines that keep terms as their
// encodings and hash, order, slice and decode them without building terms
// or with fewer allocations (the dets engine does). Other programs need
// neither. Raw's doc has the rules for the bytes they take.
package etf

import (
	"math"
	"math/big"
)

// Type names the Erlang type of a term, in Erlang term order:
// number < atom < reference < fun < port < pid < tuple < map < nil < list < bit string.
type Type uint8

const (
	TypeNumber Type = iota + 1
	TypeAtom
	TypeReference
	TypeFun
	TypePort
	TypePid
	TypeTuple
	TypeMap
	TypeNil
	TypeList
	TypeBitstring
)

var typeNames = [...]string{"", "number", "atom", "reference", "fun", "port", "pid", "tuple", "map", "nil", "list", "bitstring"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// Term is an Erlang term. The concrete types are listed in the package doc;
// no other type implements Term.
type Term interface {
	// Type reports the term's place in Erlang term order.
	Type() Type
	// String returns the term in Erlang syntax, as Format does.
	String() string
	isTerm()
}

// Atom is an Erlang atom. Its text is UTF-8; atoms longer than 255
// characters cannot be encoded.
type Atom string

// Int is an integer that fits in int64.
type Int int64

// BigInt is an integer outside the int64 range. Construct it with NewBigInt,
// which returns an Int when the value fits, so each integer has one form.
type BigInt struct{ v big.Int }

// Float is a finite double. NaN and infinities cannot be encoded.
type Float float64

// Binary is a byte-aligned bit string.
type Binary []byte

// Bitstring is a bit string whose bit length is not a multiple of 8.
// Bytes holds the bits, most significant first; the last byte uses its top
// Bits bits (1..7) and its low bits are zero.
type Bitstring struct {
	Bytes []byte
	Bits  uint8
}

// Tuple is an Erlang tuple.
type Tuple []Term

// List is a proper list. A nil or empty List is [].
type List []Term

// ImproperList is a list whose tail is not []: [a, b | Tail].
// Elems is never empty and Tail is never a List.
type ImproperList struct {
	Elems []Term
	Tail  Term
}

// Map is an Erlang map. Its pairs may be in any order and its keys are
// distinct under Equal; Encode writes them in Erlang's canonical order.
type Map []Pair

// Pair is one key-value association of a Map.
type Pair struct {
	Key, Value Term
}

// Opaque holds a term this package does not model (pid, reference, port,
// fun, export). Raw is the term's complete external encoding starting with its
// tag byte, so it survives a round trip byte for byte.
type Opaque struct {
	Raw []byte
}

func (Atom) Type() Type          { return TypeAtom }
func (Int) Type() Type           { return TypeNumber }
func (*BigInt) Type() Type       { return TypeNumber }
func (Float) Type() Type         { return TypeNumber }
func (Binary) Type() Type        { return TypeBitstring }
func (Bitstring) Type() Type     { return TypeBitstring }
func (Tuple) Type() Type         { return TypeTuple }
func (*ImproperList) Type() Type { return TypeList }
func (Map) Type() Type           { return TypeMap }

// Type of a List is TypeNil for [] and TypeList otherwise.
func (l List) Type() Type {
	if len(l) == 0 {
		return TypeNil
	}
	return TypeList
}

// Type of an Opaque term follows its tag byte.
func (o *Opaque) Type() Type {
	if o == nil || len(o.Raw) == 0 {
		return TypeReference
	}
	switch o.Raw[0] {
	case tagPid, tagNewPid:
		return TypePid
	case tagPort, tagNewPort, tagV4Port:
		return TypePort
	case tagNewFun, tagExport, tagFun:
		return TypeFun
	default:
		return TypeReference
	}
}

func (Atom) isTerm()          {}
func (Int) isTerm()           {}
func (*BigInt) isTerm()       {}
func (Float) isTerm()         {}
func (Binary) isTerm()        {}
func (Bitstring) isTerm()     {}
func (Tuple) isTerm()         {}
func (List) isTerm()          {}
func (*ImproperList) isTerm() {}
func (Map) isTerm()           {}
func (*Opaque) isTerm()       {}

func (a Atom) String() string          { return Format(a) }
func (i Int) String() string           { return Format(i) }
func (b *BigInt) String() string       { return Format(b) }
func (f Float) String() string         { return Format(f) }
func (b Binary) String() string        { return Format(b) }
func (b Bitstring) String() string     { return Format(b) }
func (t Tuple) String() string         { return Format(t) }
func (l List) String() string          { return Format(l) }
func (l *ImproperList) String() string { return Format(l) }
func (m Map) String() string           { return Format(m) }
func (o *Opaque) String() string       { return Format(o) }

// Common atoms.
const (
	True      Atom = "true"
	False     Atom = "false"
	Undefined Atom = "undefined"
	OK        Atom = "ok"
)

// Nil is the empty list [].
var Nil = List(nil)

// Bool returns the atom true or false.
func Bool(b bool) Atom {
	if b {
		return True
	}
	return False
}

// NewInt returns i as an Int.
func NewInt(i int64) Term { return Int(i) }

// NewBigInt returns v as an Int when it fits in int64 and as a *BigInt
// otherwise. v is copied.
func NewBigInt(v *big.Int) Term {
	if v.IsInt64() {
		return Int(v.Int64())
	}
	b := new(BigInt)
	b.v.Set(v)
	return b
}

// NewUint returns u as an Int or, above math.MaxInt64, a *BigInt.
func NewUint(u uint64) Term {
	if u <= math.MaxInt64 {
		return Int(int64(u))
	}
	return NewBigInt(new(big.Int).SetUint64(u))
}

// Big returns a copy of the value as a big.Int.
func (b *BigInt) Big() *big.Int { return new(big.Int).Set(&b.v) }

// Sign returns -1, 0 or +1.
func (b *BigInt) Sign() int { return b.v.Sign() }

// Str returns s as an Erlang string: a list of its Unicode code points.
func Str(s string) List {
	l := make(List, 0, len(s))
	for _, r := range s {
		l = append(l, Int(r))
	}
	return l
}

// AsString reports whether l is a printable Erlang string (a list of valid
// Unicode code points) and returns it as Go text. [] is the empty string.
func (l List) AsString() (string, bool) {
	buf := make([]rune, 0, len(l))
	for _, e := range l {
		i, ok := e.(Int)
		if !ok || i < 0 || i > 0x10FFFF || (i >= 0xD800 && i <= 0xDFFF) {
			return "", false
		}
		buf = append(buf, rune(i))
	}
	return string(buf), true
}

// NewTuple returns a tuple of the given elements.
func NewTuple(elems ...Term) Tuple { return Tuple(elems) }

// NewList returns a proper list of the given elements.
func NewList(elems ...Term) List { return List(elems) }

// NewImproperList returns [elems... | tail]. With no elements it returns tail
// itself; with a List tail the result is flattened to a proper or improper
// list as Erlang would build it.
func NewImproperList(tail Term, elems ...Term) Term {
	switch t := tail.(type) {
	case List:
		out := make(List, 0, len(elems)+len(t))
		return append(append(out, elems...), t...)
	case *ImproperList:
		if t == nil { // not a term: kept as the tail, as any other
			break
		}
		out := make([]Term, 0, len(elems)+len(t.Elems))
		out = append(append(out, elems...), t.Elems...)
		return &ImproperList{Elems: out, Tail: t.Tail}
	}
	if len(elems) == 0 {
		return tail
	}
	return &ImproperList{Elems: append([]Term(nil), elems...), Tail: tail}
}

// Get returns the value stored under key (compared with Equal).
func (m Map) Get(key Term) (Term, bool) {
	for _, p := range m {
		if Equal(p.Key, key) {
			return p.Value, true
		}
	}
	return nil, false
}

// Element returns the 1-based element i of t, as erlang:element/2 does.
func (t Tuple) Element(i int) (Term, bool) {
	if i < 1 || i > len(t) {
		return nil, false
	}
	return t[i-1], true
}

// External term format tags (erts/emulator/beam/external.h). Part of the
// format; never change.
const (
	tagVersion        = 131
	tagCompressed     = 80
	tagNewFloat       = 70
	tagBitBinary      = 77
	tagAtomCacheRef   = 82
	tagNewPid         = 88
	tagNewPort        = 89
	tagNewerReference = 90
	tagSmallInteger   = 97
	tagInteger        = 98
	tagFloat          = 99
	tagAtom           = 100
	tagReference      = 101
	tagPort           = 102
	tagPid            = 103
	tagSmallTuple     = 104
	tagLargeTuple     = 105
	tagNil            = 106
	tagString         = 107
	tagList           = 108
	tagBinary         = 109
	tagSmallBig       = 110
	tagLargeBig       = 111
	tagNewFun         = 112
	tagExport         = 113
	tagNewReference   = 114
	tagSmallAtom      = 115
	tagMap            = 116
	tagFun            = 117
	tagAtomUTF8       = 118
	tagSmallAtomUTF8  = 119
	tagV4Port         = 120
)

// Indexes into a running node's atom table, which OTP uses only inside
// itself (decode refuses them: they name nothing in a file).
const (
	tagAtomInternalRef2 = 73
	tagAtomInternalRef3 = 75
)
