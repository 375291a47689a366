package lockfile

import "testing"

// TestNamedFilesystems: the macOS and FreeBSD verdict from f_fstypename and
// the MNT_LOCAL and MNT_UNION flags. It runs on every platform.
func TestNamedFilesystems(t *testing.T) {
	for _, c := range []struct {
		fstype       string
		local, union bool
		name         string
		accepted     bool
	}{
		{"apfs", true, false, "apfs", true},
		{"hfs", true, false, "hfs", true},
		{"ufs", true, false, "ufs", true},
		{"zfs", true, false, "zfs", true},
		{"tmpfs", true, false, "tmpfs", true},
		{"msdos", true, false, "msdos", true},
		{"msdosfs", true, false, "msdosfs", true},
		{"exfat", true, false, "exfat", true},
		{"nullfs", true, false, "nullfs", true},
		// A local name on a mount the kernel does not call local.
		{"exfat", false, false, "exfat (not local)", false},
		{"msdos", false, false, "msdos (not local)", false},
		{"nullfs", false, false, "nullfs (not local)", false},
		{"apfs", true, true, "apfs (union mount)", false},
		// Network, FUSE and union filesystems, whatever the flags say.
		{"nfs", true, false, "nfs", false},
		{"nfs", false, false, "nfs", false},
		{"smbfs", false, false, "smbfs", false},
		{"afpfs", false, false, "afpfs", false},
		{"webdav", false, false, "webdav", false},
		{"macfuse", true, false, "macfuse", false},
		{"osxfuse", true, false, "osxfuse", false},
		{"fusefs", true, false, "fusefs", false},
		{"fusefs.sshfs", true, false, "fusefs", false},
		{"unionfs", true, false, "unionfs", false},
		// Unknown names fail closed.
		{"devfs", true, false, "unknown", false},
		{"", true, false, "unknown", false},
		{"apfsx", true, false, "unknown", false},
		{"ap", true, false, "unknown", false},
	} {
		field := make([]byte, 16)
		copy(field, c.fstype)
		code := fsCodeOf(field, c.local, c.union)
		name, ok := classifyNamedFS(code)
		if name != c.name || ok != c.accepted {
			t.Errorf("%q local=%v union=%v: got %q %v, want %q %v", c.fstype, c.local, c.union, name, ok, c.name, c.accepted)
		}
	}
	// A field with no NUL (a name of the field's full length) is read whole.
	if name, ok := classifyNamedFS(fsCodeOf([]byte("tmpfs"), true, false)); name != "tmpfs" || !ok {
		t.Errorf("unterminated field: %q %v", name, ok)
	}
	// Codes the encoder never makes are unknown, not a panic.
	for _, code := range []uint32{fsCodeIndex, fsCodeLocal | fsCodeIndex, uint32(len(namedLocalFS)+len(namedRemoteFS)) + 1} {
		if name, ok := classifyNamedFS(code); name != "unknown" || ok {
			t.Errorf("code %#x: %q %v", code, name, ok)
		}
	}
}
