//go:build !linux

package lockfile

import (
	"io/fs"
	"os"
)

// Other systems are not supported yet: every entry point returns
// ErrUnsupportedTarget before touching the file system.
const supported = false

const (
	lockExclusiveNB = 0
	lockUnlock      = 0
)

type statInfo struct {
	id    fileID
	mode  fs.FileMode
	nlink uint64
}

func lstatID(string) (statInfo, error)     { return statInfo{}, ErrUnsupportedTarget }
func fstatID(*os.File) (statInfo, error)   { return statInfo{}, ErrUnsupportedTarget }
func isLoop(error) bool                    { return false }
func openSidecar(string) (*os.File, error) { return nil, ErrUnsupportedTarget }
func (l *Lock) flock(int) error            { return ErrUnsupportedTarget }
func checkFS(string, *Hooks) error         { return ErrUnsupportedTarget }
func checkFDFS(*os.File, *Hooks) error     { return ErrUnsupportedTarget }
func isMountRoot(string) (bool, error)     { return false, ErrUnsupportedTarget }
