package lockfile

import (
	"errors"
	"strings"
	"testing"
)

// The Windows lock is named from the final path of the data file; these
// tests run on every platform because the derivation is string work only.

func semNameOf(t *testing.T, final string) string {
	t.Helper()
	_, folded, err := canonicalLockPath(final)
	if err != nil {
		t.Fatalf("canonicalLockPath(%q): %v", final, err)
	}
	name, _ := lockName(folded)
	return name
}

func TestSemaphoreNameSameFile(t *testing.T) {
	groups := [][]string{
		{`C:\Data\t.dets`, `c:\data\T.DETS`, `\\?\C:\Data\t.dets`, `\\?\c:\DATA\t.Dets`},
		{`D:\`, `d:\`, `\\?\D:\`, `D:\\`},
		{`C:\Data`, `C:\Data\`, `\\?\C:\data\\`, `c:\DATA\\\`},
		// Letters outside ASCII fold too (NTFS's upcase table does).
		{`C:\Ünïcode\ä.dets`, `C:\üNÏCODE\Ä.DETS`},
	}
	for _, g := range groups {
		want := semNameOf(t, g[0])
		for _, p := range g[1:] {
			if got := semNameOf(t, p); got != want {
				t.Errorf("%q: name %s, %q: %s; want equal", g[0], want, p, got)
			}
		}
	}
}

func TestSemaphoreNameDifferentFiles(t *testing.T) {
	paths := []string{
		`C:\Data\t.dets`,
		`C:\Data\t.dets2`,
		`C:\Data\u.dets`,
		`D:\Data\t.dets`,
		`C:\Data`,
		`C:\Data\sub\t.dets`,
		`C:\Datat.dets`,
		`C:\`,
		// KELVIN SIGN stays distinct from K, as in NTFS's upcase table;
		// lowercasing would merge them.
		"C:\\\u212a.dets",
		`C:\K.dets`,
	}
	seen := map[string]string{}
	for _, p := range paths {
		n := semNameOf(t, p)
		if q, ok := seen[n]; ok {
			t.Errorf("%q and %q share the name %s", q, p, n)
		}
		seen[n] = p
	}
}

func TestSemaphoreNameShape(t *testing.T) {
	name := semNameOf(t, `C:\a.dets`)
	if !strings.HasPrefix(name, `Global\godets-lock-`) || len(name) != semaphoreNameLen {
		t.Fatalf("name %q: want Global\\godets-lock- and 32 hex digits", name)
	}
	for _, c := range name[len(semaphorePrefix):] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			t.Fatalf("name %q: %q is not a hex digit", name, c)
		}
	}
	// A long path still gives a short name (kernel object names are
	// limited to MAX_PATH characters).
	long := `C:\` + strings.Repeat(`very long directory\`, 40) + `t.dets`
	if n := semNameOf(t, long); len(n) != semaphoreNameLen {
		t.Fatalf("long path: name of length %d", len(n))
	}
	// The ID is the name's bits: equal names, equal IDs.
	_, f1, _ := canonicalLockPath(`C:\a.dets`)
	_, f2, _ := canonicalLockPath(`\\?\c:\A.DETS`)
	_, f3, _ := canonicalLockPath(`C:\b.dets`)
	_, id1 := lockName(f1)
	_, id2 := lockName(f2)
	_, id3 := lockName(f3)
	if id1 != id2 || id1 == id3 {
		t.Fatalf("IDs %v %v %v: want the first two equal, the third different", id1, id2, id3)
	}
}

func TestSemaphoreNameKeepsPathToOpen(t *testing.T) {
	for final, want := range map[string]string{
		`\\?\C:\Data\t.dets`: `C:\Data\t.dets`,
		`C:\Data\`:           `C:\Data`,
		`\\?\D:\`:            `D:\`,
	} {
		got, _, err := canonicalLockPath(final)
		if err != nil || got != want {
			t.Errorf("canonicalLockPath(%q) = %q, %v; want %q", final, got, err, want)
		}
	}
}

func TestSemaphoreNameRefusesNetworkAndOddPaths(t *testing.T) {
	for _, c := range []struct {
		path string
		want error
	}{
		{`\\server\share\t.dets`, errNetworkPath},
		{`//server/share/t.dets`, errNetworkPath},
		{`\\?\UNC\server\share\t.dets`, errNetworkPath},
		{`\\?\unc\server\share\t.dets`, errNetworkPath},
		{`\\?\Volume{0b1c2d3e-0000-0000-0000-100000000000}\t.dets`, errNoDriveLetter},
		{`\\.\C:\t.dets`, errNoDriveLetter},
		{`\\.\pipe\t`, errNoDriveLetter},
		{`\\?\GLOBALROOT\Device\HarddiskVolume1\t.dets`, errNoDriveLetter},
		{`t.dets`, errNoDriveLetter},
		{`C:t.dets`, errNoDriveLetter},
		{`C:`, errNoDriveLetter},
		{`1:\t.dets`, errNoDriveLetter},
		{``, errNoDriveLetter},
	} {
		if _, _, err := canonicalLockPath(c.path); !errors.Is(err, c.want) {
			t.Errorf("canonicalLockPath(%q): %v, want %v", c.path, err, c.want)
		}
	}
}

func TestSplitNewPath(t *testing.T) {
	for _, c := range []struct {
		path, dir, base string
		ok              bool
	}{
		{`C:\Data\t.dets`, `C:\Data\`, `t.dets`, true},
		{`C:/Data/t.dets`, `C:/Data/`, `t.dets`, true},
		{`Data\sub/t.dets`, `Data\sub/`, `t.dets`, true},
		{`t.dets`, `.`, `t.dets`, true},
		{`C:t.dets`, `C:.`, `t.dets`, true},
		{`C:\t.dets`, `C:\`, `t.dets`, true},
		{`C:\Data\`, ``, ``, false},
		{`C:\Data\.`, ``, ``, false},
		{`C:\Data\..`, ``, ``, false},
		{`C:`, ``, ``, false},
		{`C:\Data\t.dets:stream`, ``, ``, false},
		{`C:\Data\t.dets.`, ``, ``, false},
		{`C:\Data\t.dets `, ``, ``, false},
		{``, ``, ``, false},
	} {
		dir, base, ok := splitNewPath(c.path)
		if ok != c.ok || ok && (dir != c.dir || base != c.base) {
			t.Errorf("splitNewPath(%q) = %q, %q, %v; want %q, %q, %v", c.path, dir, base, ok, c.dir, c.base, c.ok)
		}
	}
}
