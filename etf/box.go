package etf

import "unsafe"

// Boxing without an allocation per value.
//
// Converting a Binary or a Tuple (slice types, 24-byte headers) to a Term
// copies the header into a new heap object: one allocation per value. For
// the dets engine's common object, {Binary, Binary}, that is three of the
// few allocations left per decoded object. BatchDecoder instead writes the
// headers into shared chunks (slices of Binary, Tuple or flat2, see
// batch.go) and builds each Term from two words: the interface's type
// word, taken once from an ordinarily boxed value, and a pointer to the
// header in the chunk.
// Go offers no safe way to do this: a conversion always copies, and
// reflect copies too unless the value is already boxed.
//
// The result is the value the conversion would have produced, except that
// the header sits inside a larger heap object, which the garbage collector
// keeps alive as a whole through the interior pointer. A chunk entry is
// written once, before its Term is built, and never again, as the runtime
// assumes of the data behind an interface.
//
// This relies on the runtime's layout of a non-empty interface (type word,
// then data pointer), unchanged since Go 1.0; boxOK checks it at start-up
// against ordinary conversions, and when it does not hold BatchDecoder
// boxes the usual way.

// ifaceWords is the layout of a non-empty interface value.
type ifaceWords struct {
	tab  unsafe.Pointer // the itab of (Term, dynamic type)
	data unsafe.Pointer // the value, for non-pointer-shaped types
}

func typeWord(t Term) unsafe.Pointer { return (*ifaceWords)(unsafe.Pointer(&t)).tab }

var (
	binaryTab = typeWord(Binary{})
	tupleTab  = typeWord(Tuple{})
	boxOK     = checkBox()
)

// boxAt returns the Term of dynamic type tab (binaryTab or tupleTab) whose
// value is *p. *p must never be written again.
func boxAt(tab, p unsafe.Pointer) (t Term) {
	*(*ifaceWords)(unsafe.Pointer(&t)) = ifaceWords{tab, p}
	return t
}

// checkBox reports whether boxAt builds the same terms as conversions do.
func checkBox() bool {
	b := []Binary{Binary("ab")}
	u := []Tuple{{Int(1)}}
	x, ok1 := boxAt(binaryTab, unsafe.Pointer(&b[0])).(Binary)
	y, ok2 := boxAt(tupleTab, unsafe.Pointer(&u[0])).(Tuple)
	return ok1 && ok2 && len(x) == 2 && &x[0] == &b[0][0] && len(y) == 1 && &y[0] == &u[0][0]
}
