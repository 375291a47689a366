//go:build !unix

package dets

import "io/fs"

type fileID struct{}

// idOf has no file identity to offer here: IsOpen is always false.
func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }

func makeID(dev, ino uint64) (fileID, bool) { return fileID{}, false }
