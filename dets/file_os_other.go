//go:build !unix

package dets

import (
	"io/fs"
	"os"
)

func openOSFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
