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
// Crash points also fall inside the sequences' commands (crashin_test.go):
// CrashIn runs a mutating command and crashes at a point of its file
// operations, CrashInRepair crashes the repair that follows a kill. A
// failing sequence is shrunk by gopter (removing commands) before it is
// printed; TestShrinksLyingSync shows it does on a disk whose fsync lies.
// Each kind logs a summary line counted by the run, e.g.
//
//	property otp9 set: 300 sequences passed (300 runs), 975 crashes between
//	commands, 852 inside commands, 276 inside repairs
//
// The seed is logged; rerun with -prop.seed=N or GODETS_PROP_SEED=N.
// -prop.min sets the number of sequences per kind (default 300; a quarter
// with -short; GODETS_SOAK=1 makes it 10,000).
package propertytest
