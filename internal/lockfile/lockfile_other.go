//go:build !linux && !darwin && !freebsd && !windows

package lockfile

import "io/fs"

// Other systems are not supported yet: every entry point returns
// ErrUnsupportedTarget before touching the file system.
const supported = false

const (
	lockExclusive   = 0
	lockExclusiveNB = 0
	lockUnlock      = 0
	noFD            = -1
	dataOpenFlags   = 0
)

var errNotExist = fs.ErrNotExist

type statInfo struct {
	id    fileID
	mode  fs.FileMode
	nlink uint64

	rootKnown, mountRoot bool
	size                 int64
}

func lstatIDz([]byte, string) (statInfo, error)                  { return statInfo{}, ErrUnsupportedTarget }
func fstatID(int, string) (statInfo, error)                      { return statInfo{}, ErrUnsupportedTarget }
func mountRootOf(string, statInfo) (bool, error)                 { return false, ErrUnsupportedTarget }
func cachedFSType(statInfo) (uint32, bool)                       { return 0, false }
func judgeFS(uint32, string, *Hooks) error                       { return ErrUnsupportedTarget }
func statCanonical([]byte, string) (statInfo, bool)              { return statInfo{}, false }
func openCanonical([]byte, string, uint64) (int, statInfo, bool) { return noFD, statInfo{}, false }
func isLoop(error) bool                                          { return false }
func openSidecar([]byte, string, bool) (int, error)              { return noFD, ErrUnsupportedTarget }
func closeFD(int) error                                          { return ErrUnsupportedTarget }
func (l *Lock) flock(int) error                                  { return ErrUnsupportedTarget }
func checkFS(string, *Hooks) error                               { return ErrUnsupportedTarget }
func checkFDFS(int, statInfo, string, *Hooks) (uint32, error)    { return 0, ErrUnsupportedTarget }
