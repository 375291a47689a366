// Package testhook holds settings through which tests of other packages
// move thresholds of the dets engine that are otherwise unexported tuning.
// Only tests set them, before any table is opened; production code leaves
// them at zero, which means the engine's defaults.
//
// A multi-process test sets them in its re-executed children (from the
// child's environment), so that a child on a small file takes the path a
// large file would take.
package testhook

// RepairMemEntries, when positive, bounds the in-memory index of every
// repair whose options carry no tuning of their own: past that many
// objects the repair sorts externally in PATH.TMP.sort.
var RepairMemEntries int
