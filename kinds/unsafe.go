package kinds

import "unsafe"

// Every use of package unsafe in kinds is in this file: views between
// strings and bytes that skip a copy, the cast of a string to a type
// parameter known to be string, and the identity of a function value.
// Only closureID relies on a layout beyond what the unsafe package's own
// String, StringData, Slice and SliceData promise (a func value is one
// pointer); unsafe_test.go checks each against the copying way, and that
// layout.
//
// Why they pay: a typed traversal or lookup of Set[string, string] yields
// strings whose bytes are already a private copy (the arena's, or a
// binary the decoder just made), so converting with string(b) would copy
// each value twice (bench/README.md, "Read path work").

// stringView returns b's bytes as a string without copying. The caller
// promises that nobody writes b afterwards (an arena chunk, or a binary
// decoded for this call alone).
func stringView(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// bytesView returns s's bytes as a slice without copying, for an encoder
// that only reads them; nobody may write the result.
func bytesView(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// castString returns s as a T. T must be string itself (base.strings
// says so: both codecs were Codec[string]); isString checks it in tests.
func castString[T any](s string) T {
	return *(*T)(unsafe.Pointer(&s))
}

// closureID identifies a function value itself rather than its code
// (reflect's Pointer): two closures made by one function literal differ,
// copies of one value do not; 0 for nil. F must be a func type. A func
// value is a pointer to its closure, which Go never moves while it is
// referenced.
func closureID[F any](f F) uintptr {
	return *(*uintptr)(unsafe.Pointer(&f))
}
