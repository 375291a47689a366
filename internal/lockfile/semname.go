package lockfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Names of the Windows lock (lockfile_windows.go). The lock there is a
// named kernel semaphore rather than a file, so the name must be the same
// for every spelling of one file and different for different files. This
// part is string work only, so that its tests run on every platform.

// semaphorePrefix puts the lock in the Global\ namespace. Names without a
// prefix (or with Local\) live in the namespace of one logon session, so a
// service in session 0 and a command a user runs in session 1 would each
// create their own semaphore for the same file and exclude nothing.
// Global\ is one namespace for the machine. Creating a semaphore there
// needs no privilege (SeCreateGlobalPrivilege guards file mappings and
// symbolic links, not semaphores). There is no fallback to Local\: a
// process that fell back would hold a lock no Global\ holder sees, which
// is exactly the split the prefix exists to prevent. A process that
// cannot use Global\ (an AppContainer) gets the system's error.
const semaphorePrefix = `Global\godets-lock-`

// semaphoreNameLen is the length of every name lockName gives: the prefix
// and 32 hex digits, far inside the MAX_PATH (260) limit on kernel object
// names.
const semaphoreNameLen = len(semaphorePrefix) + 32

var (
	// errNetworkPath: the path names a file on a network share (UNC).
	errNetworkPath = errors.New("lockfile: network path")
	// errNoDriveLetter: the path is not of the form X:\..., the only
	// form whose volume the drive checks can judge.
	errNoDriveLetter = errors.New("lockfile: path is not on a drive letter")
)

// canonicalLockPath turns a final path, as GetFinalPathNameByHandle gives it
// for a data file (`\\?\C:\Dir\t.dets`), or for the directory of a file
// still to be created joined with its base name, into the string the lock is
// named from. It returns the path without the `\\?\` prefix (what to open)
// and its case-folded form (what to name the lock from).
//
// Network paths (`\\server\share\...`, `\\?\UNC\server\share\...`, which is
// also what the final path of a file on a mapped network drive looks like)
// are refused with errNetworkPath; anything else that is not X:\... (a
// volume GUID path, the device namespace `\\.\`) with errNoDriveLetter.
//
// The fold is strings.ToUpper, a simple (one rune to one rune) uppercase
// mapping, because NTFS compares names the same way: through its upcase
// table, one UTF-16 unit at a time. Lowercasing would differ for letters
// whose mappings are not inverse (KELVIN SIGN lowercases to k, but k
// uppercases to K). Where Go's tables and a volume's upcase table disagree
// the result can only be too coarse or too fine for names that differ in
// such letters; for an existing file it does not matter, because its final
// path carries the name as stored, one spelling for every way of opening it.
func canonicalLockPath(final string) (path, folded string, err error) {
	p := final
	if strings.HasPrefix(p, `\\?\`) {
		p = p[len(`\\?\`):]
		if len(p) >= 4 && strings.EqualFold(p[:4], `UNC\`) {
			return "", "", errNetworkPath
		}
	} else if strings.HasPrefix(p, `\\.\`) || strings.HasPrefix(p, `//./`) {
		// The device namespace: no file path to judge.
		return "", "", errNoDriveLetter
	} else if strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, `//`) {
		return "", "", errNetworkPath
	}
	if len(p) < 3 || !isDriveLetter(p[0]) || p[1] != ':' || p[2] != '\\' {
		return "", "", errNoDriveLetter
	}
	// A trailing separator names the same directory; keep the root's.
	for len(p) > 3 && p[len(p)-1] == '\\' {
		p = p[:len(p)-1]
	}
	return p, strings.ToUpper(p), nil
}

func isDriveLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// lockName names the semaphore for a folded canonical path: the prefix and
// the first 128 bits of the SHA-256 of its UTF-8 bytes, in hex. It also
// returns those bits, which identify the lock (Lock.ID). 128 bits make an
// accidental collision (two files sharing a lock, which would only make
// one wait for the other) negligible.
//
// The path is hashed as UTF-8 because it came from UTF-16 through
// windows.UTF16ToString, which turns each unpaired surrogate into U+FFFD:
// two names differing only in such units get one lock, which errs on the
// side of excluding too much.
func lockName(folded string) (name string, id ID) {
	sum := sha256.Sum256([]byte(folded))
	var b [semaphoreNameLen]byte
	n := copy(b[:], semaphorePrefix)
	hex.Encode(b[n:], sum[:16])
	id.Dev = beUint64(sum[0:8])
	id.Ino = beUint64(sum[8:16])
	return string(b[:]), id
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

// splitNewPath splits the path of a file to be created into the directory
// to resolve and the base name to keep, at the last `\` or `/` (Windows
// accepts both), or after a drive's colon (`C:t.dets`, relative to that
// drive's current directory). ok is false for a base name that names no
// file (empty, ".", ".."), has a colon (an alternate data stream), or ends
// in a dot or a space: Win32 drops those when it creates the file, so
// "t.dets." would be created as "t.dets" under another lock name, unless
// the path has the `\\?\` prefix, under which it is a different file.
// Refusing the name is simpler than guessing which.
func splitNewPath(path string) (dir, base string, ok bool) {
	i := strings.LastIndexAny(path, `\/`)
	switch {
	case i >= 0:
		dir, base = path[:i+1], path[i+1:]
	case len(path) >= 2 && path[1] == ':' && isDriveLetter(path[0]):
		// "C:" alone would be the volume; "C:." is the drive's
		// current directory, which is what "C:t.dets" is relative to.
		dir, base = path[:2]+".", path[2:]
	default:
		dir, base = ".", path
	}
	if base == "" || base == "." || base == ".." || strings.ContainsRune(base, ':') {
		return "", "", false
	}
	if last := base[len(base)-1]; last == '.' || last == ' ' {
		return "", "", false
	}
	return dir, base, true
}
