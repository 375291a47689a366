// Package propertytest runs stateful property tests (gopter commands,
// docs/reliability.md §5) of dets tables against the reference model in
// internal/model: random sequences of Insert, InsertNew, Delete,
// DeleteObject, Lookup, Sync, Close+Reopen and Crash on an in-memory
// internal/crashfs file system, for each kind.
//
// Crash takes a crash image at an operation boundary in one of two modes and
// reopens it with AutoRepair. Both have exact answers in otp9: synced-only
// (power loss; everything after the last fsync dropped) must give exactly
// the last Sync/Close state, and all-written (process kill) exactly the
// acked state. Every reopen also runs Check.
//
// The seed is logged; rerun with -prop.seed=N or GODETS_PROP_SEED=N.
// -prop.min sets the number of sequences per kind (default 300).
package propertytest
