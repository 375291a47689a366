//go:build linux

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A directory of a canonical data path turned into a symlink between
// resolution and the lock: the openat2 re-check must not accept the path,
// and the general re-check must report the changed identity.
func TestDirSwappedToSymlinkUnderLock(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(sub, "t.dets")
	if err := os.WriteFile(data, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	swapped := false
	h := &Hooks{BeforeFlock: func(string) {
		if swapped {
			return
		}
		real := filepath.Join(root, "real")
		if err := os.Rename(sub, real); err != nil {
			t.Error(err)
			return
		}
		if err := os.Symlink("real", sub); err != nil {
			t.Error(err)
			return
		}
		swapped = true
	}}
	l, err := Acquire(data, Options{Hooks: h})
	if err == nil {
		l.Unlock()
		t.Fatal("acquired although the data path now resolves elsewhere")
	}
	var ae *AliasError
	if !swapped || !errors.As(err, &ae) || ae.Kind != IdentityChanged {
		t.Fatalf("swapped=%v err=%v, want IdentityChanged", swapped, err)
	}
}

// Once a mount's filesystem type is cached (after a lock on it), the checks
// still judge it through the FSType hook and still refuse.
func TestCachedFSTypeStillJudged(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "t.dets")
	if err := os.WriteFile(data, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, mustAcquire(t, data, Options{}))
	mustUnlock(t, mustAcquire(t, data, Options{}))
	h := &Hooks{FSType: func(uint32) uint32 { return 0x6969 }}
	if _, err := Resolve(data, h); !errors.Is(err, ErrUnsupportedFilesystem) {
		t.Fatalf("Resolve with NFS stub: %v", err)
	}
	if _, err := Resolve(filepath.Join(dir, "new.dets"), h); !errors.Is(err, ErrUnsupportedFilesystem) {
		t.Fatalf("Resolve of a new file with NFS stub: %v", err)
	}
}

// The fast resolution (canonical path) and the general one (through a
// symlinked directory) choose the same data path and sidecar.
func TestFastAndGeneralResolveAgree(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "t.dets")
	if err := os.WriteFile(data, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(".", link); err != nil {
		t.Fatal(err)
	}
	fast, err := Resolve(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := Resolve(filepath.Join(link, "t.dets"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fast.Data != slow.Data || fast.Sidecar != slow.Sidecar || fast.dataID != slow.dataID || !fast.dataExists {
		t.Fatalf("fast %+v, general %+v", fast, slow)
	}
}
