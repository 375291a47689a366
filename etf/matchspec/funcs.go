package matchspec

import (
	"fmt"

	"github.com/godets/godets/etf"
)

// fn names a guard function.
type fn uint8

const (
	fnNone fn = iota
	fnAbs
	fnElement
	fnHd
	fnTl
	fnLength
	fnMapGet
	fnMapSize
	fnRound
	fnTrunc
	fnFloat
	fnSize
	fnBitSize
	fnByteSize
	fnBinaryPart2
	fnBinaryPart3
	fnPlus1
	fnNeg
	fnAdd
	fnSub
	fnMul
	fnFDiv
	fnDiv
	fnRem
	fnBand
	fnBor
	fnBxor
	fnBnot
	fnBsl
	fnBsr
	fnGt
	fnGe
	fnLt
	fnLe
	fnExactEq
	fnEq
	fnExactNe
	fnNe
	fnIsAtom
	fnIsFloat
	fnIsInteger
	fnIsList
	fnIsNumber
	fnIsPid
	fnIsPort
	fnIsReference
	fnIsTuple
	fnIsMap
	fnIsBinary
	fnIsFunction
	fnIsMapKey
	fnIsRecord
	fnNot
	fnXor
	fnAnd
	fnOr
	fnAndAlso
	fnOrElse
)

// signature is a function's name and arity; variadic ones (and, or,
// andalso, orelse) take one or more arguments and are listed with -1.
type signature struct {
	name  etf.Atom
	arity int
}

// functions are the guard functions OTP 25 allows in the match
// specifications of tables (ets and dets), checked against erl.
var functions = map[signature]fn{
	{"abs", 1}: fnAbs, {"element", 2}: fnElement, {"hd", 1}: fnHd, {"tl", 1}: fnTl,
	{"length", 1}: fnLength, {"map_get", 2}: fnMapGet, {"map_size", 1}: fnMapSize,
	{"round", 1}: fnRound, {"trunc", 1}: fnTrunc, {"float", 1}: fnFloat,
	{"size", 1}: fnSize, {"bit_size", 1}: fnBitSize, {"byte_size", 1}: fnByteSize,
	{"binary_part", 2}: fnBinaryPart2, {"binary_part", 3}: fnBinaryPart3,
	{"+", 1}: fnPlus1, {"-", 1}: fnNeg, {"+", 2}: fnAdd, {"-", 2}: fnSub, {"*", 2}: fnMul,
	{"/", 2}: fnFDiv, {"div", 2}: fnDiv, {"rem", 2}: fnRem,
	{"band", 2}: fnBand, {"bor", 2}: fnBor, {"bxor", 2}: fnBxor, {"bnot", 1}: fnBnot,
	{"bsl", 2}: fnBsl, {"bsr", 2}: fnBsr,
	{">", 2}: fnGt, {">=", 2}: fnGe, {"<", 2}: fnLt, {"=<", 2}: fnLe,
	{"=:=", 2}: fnExactEq, {"==", 2}: fnEq, {"=/=", 2}: fnExactNe, {"/=", 2}: fnNe,
	{"is_atom", 1}: fnIsAtom, {"is_float", 1}: fnIsFloat, {"is_integer", 1}: fnIsInteger,
	{"is_list", 1}: fnIsList, {"is_number", 1}: fnIsNumber, {"is_pid", 1}: fnIsPid,
	{"is_port", 1}: fnIsPort, {"is_reference", 1}: fnIsReference, {"is_tuple", 1}: fnIsTuple,
	{"is_map", 1}: fnIsMap, {"is_binary", 1}: fnIsBinary, {"is_function", 1}: fnIsFunction,
	{"is_map_key", 2}: fnIsMapKey, {"is_record", 3}: fnIsRecord,
	{"not", 1}: fnNot, {"xor", 2}: fnXor,
	{"and", -1}: fnAnd, {"or", -1}: fnOr, {"andalso", -1}: fnAndAlso, {"orelse", -1}: fnOrElse,
}

// unsupported are allowed by OTP but need an Erlang process or node.
var unsupported = map[signature]bool{{"self", 0}: true, {"node", 0}: true, {"node", 1}: true}

func lookup(name etf.Atom, arity int) (fn, *CompileError) {
	if f, ok := functions[signature{name, arity}]; ok {
		return f, nil
	}
	if f, ok := functions[signature{name, -1}]; ok {
		if arity >= 1 {
			return f, nil
		}
		return fnNone, &CompileError{Reason: fmt.Sprintf("%s takes at least one argument", name)}
	}
	if unsupported[signature{name, arity}] {
		return fnNone, &CompileError{Reason: fmt.Sprintf("%s/%d needs an Erlang node", name, arity), Unsupported: true}
	}
	return fnNone, &CompileError{Reason: fmt.Sprintf("unknown function %s/%d", etf.Format(name), arity)}
}

// apply runs a function of up to three arguments; ok false is an
// exception in OTP.
func apply(f fn, a, b, c etf.Term) (etf.Term, bool) {
	switch f {
	case fnGt:
		return boolTerm(etf.Compare(a, b) > 0), true
	case fnGe:
		return boolTerm(etf.Compare(a, b) >= 0), true
	case fnLt:
		return boolTerm(etf.Compare(a, b) < 0), true
	case fnLe:
		return boolTerm(etf.Compare(a, b) <= 0), true
	case fnEq:
		return boolTerm(etf.Compare(a, b) == 0), true
	case fnNe:
		return boolTerm(etf.Compare(a, b) != 0), true
	case fnExactEq:
		return boolTerm(etf.Equal(a, b)), true
	case fnExactNe:
		return boolTerm(!etf.Equal(a, b)), true
	case fnElement:
		i, ok := a.(etf.Int)
		t, isTuple := b.(etf.Tuple)
		if !ok || !isTuple || i < 1 || int64(i) > int64(len(t)) {
			return nil, false
		}
		return t[i-1], true
	case fnIsAtom:
		_, ok := a.(etf.Atom)
		return boolTerm(ok), true
	case fnIsFloat:
		_, ok := a.(etf.Float)
		return boolTerm(ok), true
	case fnIsInteger:
		return boolTerm(isInteger(a)), true
	case fnIsNumber:
		return boolTerm(typeOf(a) == etf.TypeNumber), true
	case fnIsList:
		t := typeOf(a)
		return boolTerm(t == etf.TypeList || t == etf.TypeNil), true
	case fnIsTuple:
		_, ok := a.(etf.Tuple)
		return boolTerm(ok), true
	case fnIsMap:
		_, ok := a.(etf.Map)
		return boolTerm(ok), true
	case fnIsBinary:
		_, ok := a.(etf.Binary)
		return boolTerm(ok), true
	case fnIsPid:
		return boolTerm(isOpaque(a, etf.TypePid)), true
	case fnIsPort:
		return boolTerm(isOpaque(a, etf.TypePort)), true
	case fnIsReference:
		return boolTerm(isOpaque(a, etf.TypeReference)), true
	case fnIsFunction:
		return boolTerm(isOpaque(a, etf.TypeFun)), true
	case fnIsRecord:
		return isRecord(a, b, c)
	case fnNot:
		v, ok := boolOf(a)
		if !ok {
			return nil, false
		}
		return boolTerm(!v), true
	case fnXor:
		x, ok1 := boolOf(a)
		y, ok2 := boolOf(b)
		if !ok1 || !ok2 {
			return nil, false
		}
		return boolTerm(x != y), true
	case fnHd:
		switch l := a.(type) {
		case etf.List:
			if len(l) > 0 {
				return l[0], true
			}
		case *etf.ImproperList:
			if l != nil && len(l.Elems) > 0 {
				return l.Elems[0], true
			}
		}
		return nil, false
	case fnTl:
		return tl(a)
	case fnLength:
		l, ok := a.(etf.List)
		if !ok {
			return nil, false
		}
		return etf.Int(len(l)), true
	case fnMapSize:
		m, ok := a.(etf.Map)
		if !ok {
			return nil, false
		}
		return etf.Int(len(m)), true
	case fnMapGet, fnIsMapKey:
		m, ok := b.(etf.Map)
		if !ok {
			return nil, false
		}
		v, found := m.Get(a)
		if f == fnIsMapKey {
			return boolTerm(found), true
		}
		return v, found
	case fnSize:
		switch v := a.(type) {
		case etf.Tuple:
			return etf.Int(len(v)), true
		case etf.Binary:
			return etf.Int(len(v)), true
		case etf.Bitstring:
			return etf.Int(max(len(v.Bytes)-1, 0)), true
		}
		return nil, false
	case fnByteSize:
		switch v := a.(type) {
		case etf.Binary:
			return etf.Int(len(v)), true
		case etf.Bitstring:
			return etf.Int(len(v.Bytes)), true
		}
		return nil, false
	case fnBitSize:
		switch v := a.(type) {
		case etf.Binary:
			return etf.NewInt(8 * int64(len(v))), true
		case etf.Bitstring:
			return etf.NewInt(8*int64(max(len(v.Bytes)-1, 0)) + int64(v.Bits)), true
		}
		return nil, false
	case fnBinaryPart3:
		return binaryPart(a, b, c)
	case fnBinaryPart2:
		t, ok := b.(etf.Tuple)
		if !ok || len(t) != 2 {
			return nil, false
		}
		return binaryPart(a, t[0], t[1])
	}
	return arith(f, a, b)
}

// typeOf is t.Type(), with 0 for a nil term (hand-built objects may hold
// one), so that no function panics on it.
func typeOf(t etf.Term) etf.Type {
	if t == nil {
		return 0
	}
	return t.Type()
}

func isInteger(t etf.Term) bool {
	switch v := t.(type) {
	case etf.Int:
		return true
	case *etf.BigInt:
		return v != nil
	}
	return false
}

func isOpaque(t etf.Term, want etf.Type) bool {
	o, ok := t.(*etf.Opaque)
	return ok && o != nil && o.Type() == want
}

// Erlang's small integers on 64-bit hosts: 60 bits, sign included.
const (
	minSmall = -1 << 59
	maxSmall = 1<<59 - 1
)

// isRecord is is_record/3: the name must be an atom and the size a small
// integer (a bignum size raises, as in OTP), or it raises.
func isRecord(t, name, size etf.Term) (etf.Term, bool) {
	n, ok := name.(etf.Atom)
	if !ok {
		return nil, false
	}
	sz, small := size.(etf.Int)
	if !small || sz < minSmall || sz > maxSmall {
		return nil, false
	}
	tup, ok := t.(etf.Tuple)
	if !ok || len(tup) == 0 || int64(len(tup)) != int64(sz) {
		return termFalse, true
	}
	first, ok := tup[0].(etf.Atom)
	return boolTerm(ok && first == n), true
}

func tl(t etf.Term) (etf.Term, bool) {
	switch l := t.(type) {
	case etf.List:
		if len(l) > 0 {
			return l[1:], true
		}
	case *etf.ImproperList:
		if l == nil || len(l.Elems) == 0 {
			return nil, false
		}
		if len(l.Elems) == 1 {
			return l.Tail, true
		}
		return &etf.ImproperList{Elems: l.Elems[1:], Tail: l.Tail}, true
	}
	return nil, false
}

// binaryPart is binary_part/3 over the whole bytes of a binary or bit
// string; a negative length counts back from start.
func binaryPart(bin, start, length etf.Term) (etf.Term, bool) {
	b, ok := binaryPartOf(bin, start, length)
	if !ok {
		return nil, false
	}
	return etf.Binary(b), true
}

func binaryPartOf(bin, start, length etf.Term) ([]byte, bool) {
	var b []byte
	switch v := bin.(type) {
	case etf.Binary:
		b = v
	case etf.Bitstring:
		if len(v.Bytes) == 0 {
			return nil, false
		}
		b = v.Bytes[:len(v.Bytes)-1]
	default:
		return nil, false
	}
	s, ok1 := start.(etf.Int)
	l, ok2 := length.(etf.Int)
	if !ok1 || !ok2 {
		return nil, false
	}
	return sliceBinaryPart(b, int64(s), int64(l))
}

// sliceBinaryPart is binary_part's range rule: a negative length counts
// back from start; a part outside b raises (ok false).
func sliceBinaryPart(b []byte, from, n int64) ([]byte, bool) {
	if n < 0 {
		from, n = from+n, -n
	}
	if from < 0 || n < 0 || from > int64(len(b)) || n > int64(len(b))-from {
		return nil, false
	}
	return b[from : from+n : from+n], true
}
