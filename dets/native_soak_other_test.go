//go:build !unix

package dets

// freeBytes: unknown here.
func freeBytes(dir string) int64 { return -1 }
