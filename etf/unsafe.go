package etf

// Every use of package unsafe in etf is in this file. There are two
// tricks, each kept because a benchmark shows it pays (figures in
// bench/README.md: BenchmarkBoxBinary, BenchmarkDecodeOne and
// BenchmarkBatchDecode for the first, the dets BenchmarkScan for the
// second), each checked once at start-up with a fallback to the safe way,
// and each guarded by a test in unsafe_test.go (TestInterfaceLayout,
// TestNoZeroBytes) that fails when a Go release changes what it relies on.
//
// 1. Boxing without an allocation per value (termOfBinary, termOfTuple).
//
// Converting a Binary or a Tuple (slice types, 24-byte headers) to a Term
// copies the header into a new heap object: one allocation per value. For
// the dets engine's common object, {Binary, Binary}, that is three of the
// few allocations left per decoded object. RawBatch, decodeFlat and
// Raw.DecodeOne instead write the headers into memory they allocate anyway
// (shared chunks, or one struct per object: see batch.go and flat.go) and
// build each Term from two words: the interface's type word, taken once
// from an ordinarily boxed value, and a pointer to the header.
// Go offers no safe way to do this: a conversion always copies, and
// reflect copies too unless the value is already boxed.
//
// The result is the value the conversion would have produced, except that
// the header sits inside a larger heap object, which the garbage collector
// keeps alive as a whole through the interior pointer. A header is written
// once, before its Term is built, and never again, as the runtime assumes
// of the data behind an interface.
//
// This relies on the runtime's layout of a non-empty interface (type word,
// then data pointer), unchanged since Go 1.0; boxOK checks it against
// ordinary conversions, and when it does not hold the flat decoders step
// aside and RawBatch boxes the usual way.
//
// 2. Chunks of bytes that are not zeroed first (noZeroBytes).
//
// RawBatch copies binaries' bytes into shared chunks, and every byte
// of a chunk is written before a slice capped at it is handed out, so
// zeroing the chunk first is wasted work on every traversal. The
// standard library allocates without zeroing only for
// strings.Builder; noZeroBytes takes over a Builder's buffer. This relies
// on a Builder's String sharing the buffer Grow made (its reason to
// exist); builderOK checks it, and when it does not hold chunks are made
// with make.

import (
	"strings"
	"unsafe"
)

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

// termOfBinary returns the Term Binary(*p) whose value is *p itself, not a
// copy. Only when boxOK; *p must never be written again.
func termOfBinary(p *Binary) Term { return boxAt(binaryTab, unsafe.Pointer(p)) }

// termOfTuple is termOfBinary for a Tuple.
func termOfTuple(p *Tuple) Term { return boxAt(tupleTab, unsafe.Pointer(p)) }

func boxAt(tab, p unsafe.Pointer) (t Term) {
	*(*ifaceWords)(unsafe.Pointer(&t)) = ifaceWords{tab, p}
	return t
}

// checkBox reports whether boxAt builds the same terms as conversions do.
func checkBox() bool {
	b := []Binary{Binary("ab")}
	u := []Tuple{{Int(1)}}
	x, ok1 := termOfBinary(&b[0]).(Binary)
	y, ok2 := termOfTuple(&u[0]).(Tuple)
	return ok1 && ok2 && len(x) == 2 && &x[0] == &b[0][0] && len(y) == 1 && &y[0] == &u[0][0]
}

// noZeroBytes returns an empty slice with room for n bytes of unspecified
// content. The Builder and its one-byte string are dropped unused, so no
// string ever sees the bytes change.
func noZeroBytes(n int) []byte {
	if !builderOK {
		return make([]byte, 0, n)
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(sb.String()), n)[:0]
}

// builderOK reports whether a Builder's String shares the buffer that
// Grow made, as noZeroBytes assumes (true of every Go release so far).
var builderOK = func() bool {
	var sb strings.Builder
	sb.Grow(64)
	sb.WriteByte(0)
	s := sb.String()
	if sb.Cap() < 64 {
		return false
	}
	unsafe.Slice(unsafe.StringData(s), 64)[0] = 1 // s is dropped below
	return sb.String()[0] == 1                    // the Builder's buffer saw it
}()

// sizeOf is unsafe.Sizeof for a type, which chunk sizes are counted in.
func sizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}
