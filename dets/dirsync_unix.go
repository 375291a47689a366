//go:build unix

package dets

import "os"

// syncDir fsyncs a directory so that renames and creates in it survive a
// power loss (POSIX leaves them in the page cache otherwise).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
