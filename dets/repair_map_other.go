//go:build !unix

package dets

// mapRepairSource: without a map the old file is read whole, holes too.
func mapRepairSource(f File, size int64) ([]byte, func() error, error) { return mapFile(f, size) }
