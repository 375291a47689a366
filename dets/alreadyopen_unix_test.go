//go:build unix

package dets

import (
	"testing"

	"github.com/godets/godets/etf"
)

// TestOpenDescriptorAlreadyOpen: a table on a bare descriptor is keyed on
// the identity its caller gives, and refused (closing the descriptor) as
// any other second handle that could write.
func TestOpenDescriptorAlreadyOpen(t *testing.T) {
	path := closedTable(t, 5)
	w, err := Open(path, Options{})
	must(t, err)
	fd, st := openFD(t, path)
	tab, err := OpenDescriptor(fd, path, st.Size, uint64(st.Dev), uint64(st.Ino), Options{ReadOnly: true})
	wantAlreadyOpen(t, "OpenDescriptor beside a writer", tab, err)
	if fdIsOpen(fd) {
		t.Fatal("a refused OpenDescriptor left its descriptor open")
	}
	must(t, w.Close())

	fd, st = openFD(t, path)
	d, err := OpenDescriptor(fd, path, st.Size, uint64(st.Dev), uint64(st.Ino), Options{})
	must(t, err)
	for _, ro := range []bool{false, true} {
		tab, err := Open(path, Options{ReadOnly: ro})
		wantAlreadyOpen(t, "Open beside a writer on a descriptor", tab, err)
	}
	must(t, d.Close())
	r := openT(t, path, Options{})
	wantLookup(t, r, etf.Int(4), reObj(4))
}
