package dets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// pathsTable makes a closed table of n objects {I, I} at dir/name.
func pathsTable(t *testing.T, dir, name string, format Format, n int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tab := mustOpen(t, path, Options{Format: format})
	for i := range n {
		must(t, tab.Insert(tup(etf.Int(i), etf.Int(i))))
	}
	must(t, tab.Close())
	return path
}

// wantObjects opens path read-only and checks it holds n objects and
// passes Check.
func wantObjects(t *testing.T, path string, n int) {
	t.Helper()
	tab := mustOpen(t, path, Options{ReadOnly: true})
	defer tab.Close()
	mustCheck(t, tab)
	if info, err := tab.Info(); err != nil || info.Size != n {
		t.Fatalf("%s: %d objects (%v), want %d", path, info.Size, err, n)
	}
}

const precious = "precious data\n"

// plantVictim writes a file that a repair must not touch and links name
// to it.
func plantVictim(t *testing.T, dir, name string) string {
	t.Helper()
	victim := filepath.Join(dir, "victim.txt")
	must(t, os.WriteFile(victim, []byte(precious), 0o600))
	must(t, os.Symlink(victim, name))
	return victim
}

func victimIntact(t *testing.T, victim, what string) {
	t.Helper()
	got, err := os.ReadFile(victim)
	fi, serr := os.Stat(victim)
	if err != nil || serr != nil || !bytes.Equal(got, []byte(precious)) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s changed the file a planted link named: %d bytes, %v %v", what, len(got), err, serr)
	}
}

// TestRepairTmpLinkNotFollowed: a link planted at PATH.TMP is removed, not
// followed. A repair used to open it with O_TRUNC: through a symlink it
// overwrote (and chmod'ed) another file and left the table a link; through
// a hard link of the table it truncated the table itself.
func TestRepairTmpLinkNotFollowed(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		dir := t.TempDir()
		path := pathsTable(t, dir, "t.dets", format, 300)
		victim := plantVictim(t, dir, tmpPath(path))
		tab := mustOpen(t, path, Options{Repair: ForceRepair})
		must(t, tab.Close())
		victimIntact(t, victim, "ForceRepair")
		if li, err := os.Lstat(path); err != nil || !li.Mode().IsRegular() {
			t.Fatalf("the table is not a regular file after the repair: %v %v", li, err)
		}
		wantObjects(t, path, 300)

		must(t, os.Link(path, tmpPath(path)))
		if _, err := Repair(path, Options{}, nil); err != nil {
			t.Fatalf("Repair with PATH.TMP a hard link of the table: %v", err)
		}
		wantObjects(t, path, 300)
	})
}

// TestSortSpillLinkNotFollowed: the external sort's spill file, of a
// repair and of a conversion, is created afresh too.
func TestSortSpillLinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	path := pathsTable(t, dir, "t.dets", OTP9, 3000)
	small := withTuning(Options{}, func(tn *tuning) { tn.repairMemEntries = 1000 })
	victim := plantVictim(t, dir, sortPath(path))
	st, err := Repair(path, small, nil)
	must(t, err)
	if !st.ExternalSort {
		t.Fatal("the repair did not spill: the test needs a smaller memory limit")
	}
	victimIntact(t, victim, "Repair")
	wantObjects(t, path, 3000)

	must(t, os.Remove(victim))
	dst := filepath.Join(dir, "n.dets")
	victim = plantVictim(t, dir, sortPath(dst))
	if _, err := Convert(path, dst, Native, ConvertOptions{tune: small.tune}); err != nil {
		t.Fatal(err)
	}
	victimIntact(t, victim, "Convert")
	wantObjects(t, dst, 3000)
}

// TestConvertRefusesItsOwnFilesAsSource: a source that is the
// destination's temporary or spill file (by name or link), or that the
// destination links to, is refused before anything changes. Convert used
// to remove DST.TMP first, that is the source, and a full disk then lost
// the table; a symlinked destination gave a misleading ErrAlreadyOpen.
func TestConvertRefusesItsOwnFilesAsSource(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "t.dets")
	for _, src := range []string{tmpPath(dst), sortPath(dst)} {
		pathsTable(t, dir, filepath.Base(src), OTP9, 10)
		before := fileHash(t, src)
		for _, force := range []bool{false, true} {
			_, err := Convert(src, dst, Native, ConvertOptions{Force: force})
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Convert(%s, %s, force %v): %v, want ErrInvalidOptions", src, dst, force, err)
			}
			if fileHash(t, src) != before {
				t.Fatalf("a refused Convert changed its source %s", src)
			}
		}
		must(t, os.Remove(src))
	}
	src := pathsTable(t, dir, "a.dets", OTP9, 10)
	link := filepath.Join(dir, "link.dets")
	must(t, os.Symlink(src, link))
	if _, err := Convert(src, link, Native, ConvertOptions{Force: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Convert to a symlink of its source: %v, want ErrInvalidOptions", err)
	}
	wantObjects(t, src, 10)
}

// TestRepairThroughSymlink: a table opened by a symbolic link is repaired
// in the file the link names; the link stays a link. The repair used to
// rename PATH.TMP over the link, and later writes went to the new file,
// not to the data file.
func TestRepairThroughSymlink(t *testing.T) {
	forEachFormat(t, func(t *testing.T, format Format) {
		for _, fsys := range []FS{nil, OSFS{}} { // nil means OSFS
			dir := t.TempDir()
			real := pathsTable(t, dir, "real.dets", format, 5)
			link := filepath.Join(dir, "link.dets")
			must(t, os.Symlink("real.dets", link))
			tab := mustOpen(t, link, Options{Repair: ForceRepair, FS: fsys})
			must(t, tab.Insert(tup(etf.Int(100), etf.Int(100))))
			must(t, tab.Close())
			if li, err := os.Lstat(link); err != nil || li.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("FS %T: %s is no longer a symbolic link (%v)", fsys, link, err)
			}
			if _, err := os.Lstat(tmpPath(link)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("FS %T: a temporary file beside the link: %v", fsys, err)
			}
			wantObjects(t, real, 6)
		}
	})
}
