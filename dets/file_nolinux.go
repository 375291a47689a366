//go:build !linux

package dets

// Off Linux the repair goes without Linux's hints.

// mapPopulate: no populate flag off Linux.
const mapPopulate = 0

// startWriteback is a no-op off Linux; the fsync before the rename writes
// everything.
func startWriteback(File, int64, int64) {}

// noSpaceLeft: off Linux the cause of a fault is not looked for.
func noSpaceLeft(string) bool { return false }
