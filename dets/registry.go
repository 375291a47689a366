package dets

import (
	"path/filepath"
	"sync"
)

// openTables counts the open Tables of this process by canonical path, so
// that package exclusive can refuse a file already open outside a session.
var openTables struct {
	sync.Mutex
	n map[string]int
}

// canonicalPath resolves symlinks (when the file exists) and makes path
// absolute; on failure it falls back to the cleaned absolute path.
func canonicalPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return filepath.Clean(path)
}

func registerOpen(key string) {
	openTables.Lock()
	defer openTables.Unlock()
	if openTables.n == nil {
		openTables.n = make(map[string]int)
	}
	openTables.n[key]++
}

func unregisterOpen(key string) {
	openTables.Lock()
	defer openTables.Unlock()
	if openTables.n[key] <= 1 {
		delete(openTables.n, key)
		return
	}
	openTables.n[key]--
}

// IsOpen reports whether a Table for path (after resolving symlinks and
// making it absolute) is open in this process.
func IsOpen(path string) bool {
	key := canonicalPath(path)
	openTables.Lock()
	defer openTables.Unlock()
	return openTables.n[key] > 0
}
