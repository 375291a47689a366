//go:build unix

package dets

import "golang.org/x/sys/unix"

// mapRepairSource maps the old file for the repair's scan. mapFile maps it
// populated at once, which suits a file of data; a file that is mostly a
// hole (a native table of a high base, TestNativeBeyond4GiB) is mapped
// without populating, since that would fault in every zero page of the
// hole while the scan only reads what the tree names.
func mapRepairSource(f File, size int64) ([]byte, func() error, error) {
	if of, ok := f.(osFile); ok && size > 0 && size == int64(int(size)) {
		var st unix.Stat_t
		if unix.Fstat(int(of.Fd()), &st) == nil && st.Blocks*512 < size/2 {
			b, err := unix.Mmap(int(of.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
			if err == nil {
				return b, func() error { return unix.Munmap(b) }, nil
			}
		}
	}
	return mapFile(f, size)
}
