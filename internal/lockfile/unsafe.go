//go:build !windows

package lockfile

import "unsafe"

// The one trick with package unsafe in lockfile (the platform files use it
// only to pass pointers to system calls): a Target's Sidecar string shares
// the bytes of its NUL-terminated form, so that resolving a target makes
// one allocation for both paths, not two, on every session's lock.

// stringBeforeNUL returns z without its final NUL byte, as a string over
// z's own bytes. z must end in NUL and never be written again (newTarget
// builds it once), so the string is immutable as Go requires.
func stringBeforeNUL(z []byte) string {
	if len(z) < 2 {
		return ""
	}
	return unsafe.String(&z[0], len(z)-1)
}
