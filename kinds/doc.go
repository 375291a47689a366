// Package kinds gives typed handles over dets tables, so that Go code reads
// and writes Go values instead of raw Erlang terms. It mirrors Gleam's
// slate/set, slate/bag and slate/duplicate_bag modules.
//
// Every handle works on {Key, Value} tuples with key position 1, the layout
// that Erlang and Gleam programs write, so a Go Set[string, string] holding
// "package" => "metadata" is the Erlang object {<<"package">>,<<"metadata">>}.
//
//	handle              table kind      Lookup returns
//	Set[K, V]           set             V, or an error matching ErrNotFound
//	Bag[K, V]           bag             []V (distinct values; empty if absent)
//	DuplicateBag[K, V]  duplicate_bag   []V (one entry per stored copy)
//
// Each handle offers Insert, InsertNew, Lookup, Member, Delete, DeleteObject,
// Rows, All, Select, SelectSeq and Size; Set also has UpdateCounter, which
// refuses a result its value codec cannot read back (ErrOutOfRange) before
// writing it.
//
// # Iteration
//
// Rows is an iter.Seq2[Row[K, V], error] whose error belongs to the row: an
// object that does not decode yields a *RowError and the loop goes on, a
// storage error ends it. All(&err) is the all-or-nothing form that stops at
// the first error. The loop body may change the table, with the
// guarantees of dets.Table.All.
//
// # Errors
//
// The sentinels ErrNotFound, ErrDecode, ErrEncode, ErrTableMismatch and
// ErrOutOfRange, and the typed errors behind them, implement
// exclusive.CodedError: exclusive.Code reports not_found, decode_failed,
// encode_failed, table_mismatch and out_of_range for them, and their
// SafeMessage names no path and quotes no stored data.
//
// # Codecs
//
// A Codec[T] is a pair of functions between a Go type and an Erlang term.
// The built-ins are String (a binary, as Gleam stores strings), Bytes,
// Charlist, Int, Integer[T], Float, Bool (the atoms true and false), Atom and
// Term (raw terms). Tuple, Record, Tuple2, List and Convert build codecs for
// structs and other compound values. A stored term of the wrong shape gives
// an error matching ErrDecode (a *DecodeError naming what was expected and
// what was found), never a panic and never a zero value.
//
// # Sessions
//
// WithExclusiveSet, WithExclusiveBag and WithExclusiveDuplicateBag wrap
// exclusive.With: they lock the file against other processes, open it, run
// a callback with a typed handle, then close and unlock, as the seed's
// set.with_exclusive_table does. A read-modify-write that must not lose
// updates belongs inside one session.
//
// # Cost
//
// The built-in codecs String, Bytes, Int, Integer[T], Float, Bool and
// Atom, and Tuple, Record and Tuple2 over them, have a direct path: Lookup, All, Rows, Select and
// Insert decode a stored object's bytes straight into K and V and encode
// them straight into bytes (dets.Table.LookupRaw, RawAll, InsertRaw),
// with no etf.Term in between. A typed Set[string, string] Lookup then
// allocates only the string it returns, Insert nothing, and a traversal
// copies the keys' and values' bytes into shared chunks (a value kept
// after the loop keeps its chunk alive). Other codecs (user codecs,
// List, Convert, Charlist, Term) take the term path: one codec call on a term
// per key and value. Both paths give the same values and the same errors;
// a stored term the direct path does not expect (another type, an
// unusual encoding) is decoded and handed to the term path.
package kinds
