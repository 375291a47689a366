package dets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A repair or compaction replaces the table with PATH.TMP by a rename,
// which needs write permission on the directory only, and a new file
// belongs to whoever creates it, with the umask's mode. Left alone, a
// root repair of a service's 0640 table would hand back a world-readable
// file the service may no longer write, and a user who may write the
// directory but not the table could replace it. So the rebuild starts only
// where the table itself is writable, and its file takes the table's
// permission bits and, where files have owners, its owner and group.

// checkWritable fails when path cannot be opened for writing. A path
// with no file yet (Convert's new destination) has nothing to protect.
func checkWritable(fsys FS, path string) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// ownedFile is what keepOwnerAndMode needs of a file: an *os.File has it;
// the in-memory file systems of tests do not, and keep nothing.
type ownedFile interface {
	Chmod(fs.FileMode) error
	Chown(uid, gid int) error
	Stat() (fs.FileInfo, error)
}

// keepOwnerAndMode gives tmp the permission bits, owner and group of the
// table at path that it will replace.
func keepOwnerAndMode(fsys FS, path string, tmp File) error {
	fi, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a new table: the creator's owner and mode
	}
	if err != nil {
		return err
	}
	f, ok := tmp.(ownedFile)
	if !ok {
		return nil
	}
	if err := f.Chmod(fi.Mode().Perm()); err != nil {
		return err
	}
	uid, gid, ok := ownerOf(fi)
	if !ok {
		return nil
	}
	tfi, err := f.Stat()
	if err != nil {
		return err
	}
	if tuid, tgid, _ := ownerOf(tfi); tuid == uid && tgid == gid {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("dets: the rebuilt table cannot keep the owner of %s (uid %d, gid %d): %w", path, uid, gid, err)
	}
	return nil
}
