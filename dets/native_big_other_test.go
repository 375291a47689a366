//go:build !unix

package dets

import "testing"

// allocatedBytes: no block count here, so no test of sparseness.
func allocatedBytes(t *testing.T, path string) int64 {
	t.Skip("no block count on this platform")
	return 0
}
