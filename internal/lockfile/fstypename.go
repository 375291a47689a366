package lockfile

import "strings"

// Filesystems by statfs f_fstypename, as macOS and FreeBSD name them. Their
// f_type numbers are assigned when a filesystem registers, so only the name
// identifies it. A name is accepted only on a mount the kernel flags
// MNT_LOCAL and not MNT_UNION; every other name, listed here or not, is
// refused (fail closed), as on Linux.
//
// This file has no build constraint: the classification is a pure function,
// tested on every platform.

// namedLocalFS are the names accepted on a local mount. nullfs (FreeBSD's
// loopback mount) inherits MNT_LOCAL from the filesystem below it, so it
// passes over a local one and is refused over a remote one.
var namedLocalFS = []string{
	"apfs", "hfs", "ufs", "zfs", "tmpfs", "msdos", "msdosfs", "exfat",
	"ext2fs", "cd9660", "udf", "nullfs",
}

// namedRemoteFS are names refused whatever the flags: network, FUSE and
// union filesystems.
var namedRemoteFS = []string{
	"nfs", "smbfs", "afpfs", "webdav", "macfuse", "osxfuse", "fusefs",
	"unionfs", "ftp", "cifs", "p9fs",
}

// Bits of a named-filesystem code, the number that stands in for f_type on
// macOS and FreeBSD (in FilesystemError.Magic and the Hooks.FSType hook):
// the low bits are 1 + the name's index in namedLocalFS then namedRemoteFS
// (0 for a name in neither), and two flag bits record MNT_LOCAL and
// MNT_UNION.
const (
	fsCodeLocal uint32 = 1 << 31
	fsCodeUnion uint32 = 1 << 30
	fsCodeIndex        = fsCodeUnion - 1
)

// fsCodeOf encodes a statfs result: the NUL-padded f_fstypename and
// whether the mount is flagged MNT_LOCAL and MNT_UNION.
func fsCodeOf(fstypename []byte, local, union bool) uint32 {
	name := fstypeString(fstypename)
	// FreeBSD names FUSE mounts "fusefs.<subtype>" (fusefs.sshfs).
	if strings.HasPrefix(name, "fusefs.") {
		name = "fusefs"
	}
	var code uint32
	for i, n := range namedLocalFS {
		if n == name {
			code = uint32(i) + 1
		}
	}
	for i, n := range namedRemoteFS {
		if n == name {
			code = uint32(len(namedLocalFS)+i) + 1
		}
	}
	if local {
		code |= fsCodeLocal
	}
	if union {
		code |= fsCodeUnion
	}
	return code
}

// fstypeString is the name in a NUL-padded f_fstypename field.
func fstypeString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// classifyNamedFS names the filesystem of a code from fsCodeOf and says
// whether it is accepted: a name of namedLocalFS on a mount flagged local
// and not a union.
func classifyNamedFS(code uint32) (name string, local bool) {
	i := int(code & fsCodeIndex)
	switch {
	case i == 0 || i > len(namedLocalFS)+len(namedRemoteFS):
		return "unknown", false
	case i > len(namedLocalFS):
		return namedRemoteFS[i-1-len(namedLocalFS)], false
	}
	name = namedLocalFS[i-1]
	switch {
	case code&fsCodeUnion != 0:
		return name + " (union mount)", false
	case code&fsCodeLocal == 0:
		return name + " (not local)", false
	}
	return name, true
}
