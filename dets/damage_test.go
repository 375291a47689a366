package dets

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/godets/godets/etf"
)

// The damage rows of docs/reliability.md §3, on small fixtures of each
// kind. Invariants checked for every case (checkDamagedImage):
//   - no panic (a panic fails the case with its stack) and no hang (the
//     package test timeout);
//   - every error is one of the package's typed errors;
//   - a refused open leaves the file byte-identical;
//   - after a repair, Check is clean, reopening with NoRepair succeeds, and
//     every surviving object is either a fixture object or visibly damaged
//     itself (see selfConsistent): otp9 objects have no checksums, so damage
//     inside an object that still decodes survives as altered data, but the
//     repair never invents, mixes or moves objects.

// selfCheckingObj is {K, V, Payload, CRC} where CRC = crc32 of the encoding of
// {K, V, Payload}: the test, not the repair, uses it to tell an object
// altered by the damage from one the repair invented.
func selfCheckingObj(t testing.TB, k, v, pad int) etf.Term {
	base := etf.Tuple{etf.Int(k), etf.Int(v), etf.Binary(bytes.Repeat([]byte{byte(k*7 + v)}, pad))}
	return append(base, etf.Int(int64(crc32.ChecksumIEEE([]byte(encString(t, base))))))
}

// selfConsistent reports whether an object read back is internally consistent.
func selfConsistent(t testing.TB, o etf.Term) bool {
	tu, ok := o.(etf.Tuple)
	if !ok || len(tu) != 4 {
		return false
	}
	c, ok := tu[3].(etf.Int)
	return ok && uint32(c) == crc32.ChecksumIEEE([]byte(encString(t, tu[:3])))
}

type damageFixture struct {
	kind Kind
	img  []byte          // a clean, closed file
	objs map[string]bool // encodings of its objects
	n    int             // number of objects (with duplicate_bag copies)
}

// makeDamageFixture builds a closed file of about 300 inserts (one large
// object, some deleted keys) that fits in a few KiB.
func makeDamageFixture(t testing.TB, kind Kind, nKeys int) damageFixture {
	dir := t.TempDir()
	path := filepath.Join(dir, "fix.dets")
	tab, err := Open(path, Options{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(kind)
	for i := range nKeys * 2 {
		o := selfCheckingObj(t, i%nKeys, i%3, (i%5)*6)
		if i == 7 {
			o = selfCheckingObj(t, i%nKeys, 9, 1500)
		}
		insertBoth(t, tab, m, o)
	}
	for k := 0; k < nKeys; k += 5 {
		deleteBoth(t, tab, m, etf.Int(k))
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := damageFixture{kind: kind, img: img, objs: map[string]bool{}, n: len(m.Objects())}
	for _, e := range m.Objects() {
		f.objs[e] = true
	}
	return f
}

var typedOpenErrors = []error{ErrNeedsRepair, ErrNotDETS, ErrCorrupt, ErrUnsupportedVersion,
	ErrBadTypeCode, ErrBadHashMethod, ErrUnsupportedHash, ErrKindMismatch, ErrKeyPosMismatch, ErrFileTooLarge}

func isTypedOpenError(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return true
	}
	for _, s := range typedOpenErrors {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// checkDamagedImage runs one damaged image through NoRepair and AutoRepair opens
// and checks the invariants. It returns the number of objects recovered, or
// -1 when the file was refused.
func checkDamagedImage(t *testing.T, dir string, fx damageFixture, img []byte, what string) (n int) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v\n%s", what, r, debug.Stack())
		}
	}()
	mfs := newMemFS()
	path := "d.dets"
	mfs.put(path, img)
	tab, err := Open(path, Options{FS: mfs})
	if err == nil {
		if cerr := tab.Check(); cerr != nil && !isTypedOpenError(cerr) {
			t.Fatalf("%s: NoRepair open then Check: untyped error %v", what, cerr)
		}
		tab.Close()
	} else {
		if !isTypedOpenError(err) {
			t.Fatalf("%s: NoRepair: untyped error %v", what, err)
		}
		if !bytes.Equal(mfs.get(path), img) {
			t.Fatalf("%s: refused NoRepair open changed the file", what)
		}
	}
	mfs.put(path, img)
	tab, err = Open(path, Options{Repair: AutoRepair, FS: mfs})
	if err != nil {
		if !isTypedOpenError(err) {
			t.Fatalf("%s: AutoRepair: untyped error %v", what, err)
		}
		if !bytes.Equal(mfs.get(path), img) {
			t.Fatalf("%s: refused AutoRepair open changed the file", what)
		}
		noTempsInMemFS(t, mfs, what)
		return -1
	}
	var objs []etf.Term
	for o, err := range tab.All() {
		if err != nil {
			// A clean-looking file whose damage only shows on reading is
			// allowed to report it, typed.
			if !isTypedOpenError(err) {
				t.Fatalf("%s: All: untyped error %v", what, err)
			}
			tab.Close()
			return -1
		}
		objs = append(objs, o)
	}
	if cerr := tab.Check(); cerr != nil {
		// Only a file that opened without repair may be structurally bad
		// (damage that the open checks cannot see); it must say so typed.
		if !isTypedOpenError(cerr) {
			t.Fatalf("%s: Check: untyped error %v", what, cerr)
		}
		tab.Close()
		return -1
	}
	if err := tab.Close(); err != nil {
		t.Fatalf("%s: Close: %v", what, err)
	}
	for _, o := range objs {
		if !fx.objs[encString(t, o)] && selfConsistent(t, o) {
			t.Fatalf("%s: the table holds %v, which is neither a fixture object nor visibly damaged", what, o)
		}
	}
	if !bytes.Equal(mfs.get(path), img) {
		// Repaired: it must reopen cleanly without repair.
		reopenCleanInMemFS(t, mfs, path, what)
	}
	noTempsInMemFS(t, mfs, what)
	return len(objs)
}

// checkForcedRepair forces a repair of img and checks the post-repair
// invariants strictly: Check clean, NoRepair reopen, objects explained.
func checkForcedRepair(t *testing.T, dir string, fx damageFixture, img []byte, what string) int {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v\n%s", what, r, debug.Stack())
		}
	}()
	mfs := newMemFS()
	path := "r.dets"
	mfs.put(path, img)
	_, err := Repair(path, Options{Kind: fx.kind, KeyPos: 1, FS: mfs}, nil)
	if err != nil {
		if !isTypedOpenError(err) {
			t.Fatalf("%s: Repair: untyped error %v", what, err)
		}
		if !bytes.Equal(mfs.get(path), img) {
			t.Fatalf("%s: failed repair changed the file", what)
		}
		noTempsInMemFS(t, mfs, what)
		return -1
	}
	got := reopenCleanInMemFS(t, mfs, path, what)
	for _, e := range got {
		o, derr := etf.Decode([]byte(e))
		if derr != nil {
			t.Fatal(derr)
		}
		if !fx.objs[e] && selfConsistent(t, o) {
			t.Fatalf("%s: repaired table holds %v, neither a fixture object nor visibly damaged", what, o)
		}
	}
	noTempsInMemFS(t, mfs, what)
	return len(got)
}

func noTempsInMemFS(t *testing.T, mfs memFS, what string) {
	t.Helper()
	if n := mfs.names(); len(n) != 1 {
		t.Fatalf("%s: files after the case: %v", what, n)
	}
}

// reopenCleanInMemFS opens path with NoRepair, checks it and returns the
// sorted encodings of its objects.
func reopenCleanInMemFS(t *testing.T, mfs memFS, path, what string) []string {
	t.Helper()
	tab, err := Open(path, Options{FS: mfs})
	if err != nil {
		t.Fatalf("%s: reopen with NoRepair: %v", what, err)
	}
	defer tab.Close()
	if err := tab.Check(); err != nil {
		t.Fatalf("%s: Check after repair: %v", what, err)
	}
	return sortedContents(t, tab)
}

func damageFixtures(t *testing.T) []damageFixture {
	var fs []damageFixture
	for _, k := range allKinds {
		fs = append(fs, makeDamageFixture(t, k, 40))
	}
	return fs
}

// TestDamageTruncation (C5): cut the file at every offset.
func TestDamageTruncation(t *testing.T) {
	for _, fx := range damageFixtures(t) {
		t.Run(fx.kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			step := 1
			if testing.Short() {
				step = 13
			}
			t.Logf("fixture: %d bytes, %d objects", len(fx.img), fx.n)
			for cut := 0; cut < len(fx.img); cut += step {
				img := fx.img[:cut]
				n := checkDamagedImage(t, dir, fx, img, fmt.Sprintf("cut at %d", cut))
				m := checkForcedRepair(t, dir, fx, img, fmt.Sprintf("forced repair, cut at %d", cut))
				// Every object lies before the free lists, so a cut at the
				// free-list pointer or later loses nothing.
				if cut >= int(be.Uint32(fx.img)) && m != fx.n {
					t.Fatalf("cut at %d (after the data) recovered %d of %d objects", cut, m, fx.n)
				}
				_ = n
			}
		})
	}
}

// TestDamageSectors (C6, C8): replace each aligned 512 B and 4 KiB sector
// with zeros, 0xFF, random bytes and the bytes of an older version of the
// file (torn writes).
func TestDamageSectors(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 3))
	for _, fx := range damageFixtures(t) {
		t.Run(fx.kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			oldFx := makeDamageFixture(t, fx.kind, 30)
			old := oldFx.img
			// A torn write may bring back objects of the older version.
			both := fx
			both.objs = maps.Clone(fx.objs)
			maps.Copy(both.objs, oldFx.objs)
			for _, sec := range []int{512, 4096} {
				for off := 0; off < len(fx.img); off += sec {
					for fill := range 4 {
						img := slices.Clone(fx.img)
						end := min(off+sec, len(img))
						for i := off; i < end; i++ {
							switch fill {
							case 0:
								img[i] = 0
							case 1:
								img[i] = 0xFF
							case 2:
								img[i] = byte(r.Uint32())
							case 3:
								if i < len(old) {
									img[i] = old[i]
								}
							}
						}
						what := fmt.Sprintf("sector %d+%d fill %d", off, sec, fill)
						f := fx
						if fill == 3 {
							f = both
						}
						checkDamagedImage(t, dir, f, img, what)
						checkForcedRepair(t, dir, f, img, what)
					}
				}
			}
		})
	}
}

// TestDamageBitFlips (C7): every bit of the header, segment-array and
// free-list areas, and random bits elsewhere.
func TestDamageBitFlips(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 4))
	for _, fx := range damageFixtures(t) {
		t.Run(fx.kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			var offs []int
			step := 1
			if testing.Short() {
				step = 7
			}
			for i := 0; i < baseAddr; i += step {
				offs = append(offs, i)
			}
			for i := int(be.Uint32(fx.img)); i < len(fx.img); i += step {
				offs = append(offs, i)
			}
			nRand := 2000
			if testing.Short() {
				nRand = 200
			}
			for range nRand / 8 {
				offs = append(offs, baseAddr+r.IntN(len(fx.img)-baseAddr))
			}
			for _, off := range offs {
				for bit := range 8 {
					img := slices.Clone(fx.img)
					img[off] ^= 1 << bit
					what := fmt.Sprintf("bit %d of byte %d", bit, off)
					checkDamagedImage(t, dir, fx, img, what)
					if off >= baseAddr {
						checkForcedRepair(t, dir, fx, img, what)
					}
				}
			}
		})
	}
}

// TestDamageAppendedGarbage (C9): bytes appended to a clean file and to a
// dirty one.
func TestDamageAppendedGarbage(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 5))
	for _, fx := range damageFixtures(t) {
		t.Run(fx.kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			dirty := slices.Clone(fx.img[:be.Uint32(fx.img)])
			be.PutUint32(dirty[offClosed:], notProperlyClosed)
			// A copy of a real bucket: the first ACTIVE one after the segments.
			var bucketCopy []byte
			for p := baseAddr; p+8 < len(fx.img); p += 16 {
				if be.Uint32(fx.img[p+4:]) == statusActive {
					sz := int(be.Uint32(fx.img[p:]))
					if sz > 8 && p+sz <= len(fx.img) {
						bucketCopy = fx.img[p : p+sz]
						break
					}
				}
			}
			for _, base := range [][]byte{fx.img, dirty} {
				for _, n := range []int{1, 7, 511, 512, 4096, 65537} {
					for fill := range 5 {
						g := make([]byte, n)
						for i := range g {
							switch fill {
							case 1:
								g[i] = 0xFF
							case 2:
								g[i] = byte(r.Uint32())
							case 3:
								g[i] = bucketCopy[i%len(bucketCopy)]
							case 4:
								g[i] = fx.img[i%headerEnd]
							}
						}
						img := append(slices.Clone(base), g...)
						what := fmt.Sprintf("append %d bytes fill %d", n, fill)
						checkDamagedImage(t, dir, fx, img, what)
						if got := checkForcedRepair(t, dir, fx, img, what); got < fx.n {
							t.Fatalf("%s: repair recovered %d of %d objects", what, got, fx.n)
						}
					}
				}
			}
		})
	}
}

// TestDamageForeignFiles (C10): files that are not DETS files, or hostile
// ones, are refused with typed errors and never modified.
func TestDamageForeignFiles(t *testing.T) {
	fx := makeDamageFixture(t, Set, 20)
	dir := t.TempDir()
	hdr := func(mut func(b []byte)) []byte {
		b := slices.Clone(fx.img)
		mut(b)
		return b
	}
	cases := map[string][]byte{
		"empty":       {},
		"short":       fx.img[:100],
		"100 A":       bytes.Repeat([]byte("A"), 100),
		"wrong magic": hdr(func(b []byte) { b[5] ^= 1 }),
		"version 8":   hdr(func(b []byte) { be.PutUint32(b[offVersion:], 8) }),
		"version 10":  hdr(func(b []byte) { be.PutUint32(b[offVersion:], 10) }),
		"huge counts": hdr(func(b []byte) { be.PutUint32(b[offNoObjects:], 1<<31); fixHeaderMD5(b) }),
		"huge next":   hdr(func(b []byte) { be.PutUint32(b[offNext:], 1<<31); fixHeaderMD5(b) }),
		"fl ptr past EOF": hdr(func(b []byte) {
			be.PutUint32(b[offFreelistsPtr:], uint32(len(b)+100))
		}),
		"bucket size past EOF": hdr(func(b []byte) {
			for p := baseAddr; p+8 < len(b); p += 16 {
				if be.Uint32(b[p+4:]) == statusActive {
					be.PutUint32(b[p:], 1<<30)
				}
			}
		}),
		"all ACTIVE": func() []byte {
			b := slices.Clone(fx.img)
			for p := baseAddr; p+8 <= len(b); p += 8 {
				be.PutUint32(b[p:], 0xFFFFFFF0)
				be.PutUint32(b[p+4:], statusActive)
			}
			return b
		}(),
		"cyclic free list": hdr(func(b []byte) {
			flp := be.Uint32(b)
			be.PutUint32(b[flp:], 0)
		}),
		"random 64K": func() []byte {
			r := rand.New(rand.NewPCG(1, 2))
			b := make([]byte, 65536)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			copy(b, fx.img[:headerEnd])
			return b
		}(),
	}
	for name, img := range cases {
		checkDamagedImage(t, dir, fx, img, name)
		checkForcedRepair(t, dir, fx, img, name)
	}
	// Files that are not DETS at all must be refused by Repair too, even
	// with Kind and KeyPos given, and stay unchanged.
	for _, name := range []string{"empty", "short", "100 A"} {
		path := filepath.Join(dir, "foreign")
		writeFileT(t, path, cases[name])
		if _, err := Repair(path, Options{Kind: Set, KeyPos: 1}, nil); !errors.Is(err, ErrNotDETS) {
			t.Errorf("%s: Repair = %v, want ErrNotDETS", name, err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, cases[name]) {
			t.Errorf("%s: Repair changed a foreign file", name)
		}
	}
}

// fixHeaderMD5 recomputes the header MD5 after a deliberate edit.
func fixHeaderMD5(b []byte) {
	h := decodeHeader(b)
	h.encode(b)
}

// nthOpFaultFS fails the n-th mutating operation (1-based) and every later one,
// as a crash at that point would stop the repair.
type nthOpFaultFS struct {
	memFS
	n   int
	mu  sync.Mutex // the repair's writer and early fsyncs step concurrently
	ops int
}

var errInjectedFault = errors.New("injected fault")

func (f *nthOpFaultFS) step() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops++
	if f.n > 0 && f.ops >= f.n {
		return errInjectedFault
	}
	return nil
}

type nthOpFaultFile struct {
	File
	fs *nthOpFaultFS
}

func (f *nthOpFaultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		if err := f.step(); err != nil {
			return nil, err
		}
	}
	file, err := f.memFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return nthOpFaultFile{file, f}, nil
}

func (f *nthOpFaultFS) Rename(a, b string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.memFS.Rename(a, b)
}

func (f *nthOpFaultFS) SyncDir(d string) error {
	if err := f.step(); err != nil {
		return err
	}
	return nil
}

func (f nthOpFaultFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f nthOpFaultFile) Sync() error { return f.fs.step() }

func (f nthOpFaultFile) Truncate(n int64) error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Truncate(n)
}

// TestRepairCrashSafety (docs/reliability.md §1, promise 8): stop a repair at each
// of its mutating steps in turn; the file is then either the old one or the
// complete new one, and a second repair completes it and leaves no
// temporary file. The external sort is forced so that its file is covered.
func TestRepairCrashSafety(t *testing.T) {
	t.Parallel()
	external := withTuning(Options{}, func(tn *tuning) { tn.repairMemEntries = 50 })
	r := rand.New(rand.NewPCG(seedU64(t), 6))
	for _, kind := range allKinds {
		img, m, _ := killedImage(t, t.TempDir(), kind, r, 400)
		want := m.Objects()
		repaired := repairInMemory(t, img, external).get("t.dets")
		repairWithEachFault(t, kind, img, want, external, func(ffs *nthOpFaultFS) {
			if !bytes.Equal(ffs.get("t.dets"), repaired) {
				t.Fatalf("%s: the repair is not deterministic", kind)
			}
		}, func(ffs *nthOpFaultFS, n int) {
			if now := ffs.get("t.dets"); !bytes.Equal(now, img) && !bytes.Equal(now, repaired) {
				t.Fatalf("%s: fault at step %d left a file that is neither the old nor the new one", kind, n)
			}
		})
	}
}

// repairInMemory repairs img as t.dets in a new memFS with opts (its FS
// replaced) and returns the memFS.
func repairInMemory(t *testing.T, img []byte, opts Options) memFS {
	t.Helper()
	mfs := newMemFS()
	mfs.put("t.dets", img)
	opts.FS = mfs
	if _, err := Repair("t.dets", opts, nil); err != nil {
		t.Fatal(err)
	}
	return mfs
}

// repairWithEachFault repairs img with opts (its FS replaced) stopped at its n-th
// mutating step, for n = 1, 2, ... until a repair runs to its end, which
// finished checks. Each stopped repair must return the fault and leave a
// file that left accepts; a second repair must then give want and leave no
// temporary file.
func repairWithEachFault(t *testing.T, kind Kind, img []byte, want []string, opts Options, finished func(*nthOpFaultFS), left func(*nthOpFaultFS, int)) {
	t.Helper()
	for n := 1; ; n++ {
		ffs := &nthOpFaultFS{memFS: newMemFS(), n: n}
		ffs.put("t.dets", img)
		opts.FS = ffs
		_, err := Repair("t.dets", opts, nil)
		if err == nil {
			finished(ffs)
			t.Logf("%s: the repair has %d mutating steps", kind, n-1)
			return
		}
		if !errors.Is(err, errInjectedFault) {
			t.Fatalf("%s: fault at step %d: unexpected error %v", kind, n, err)
		}
		left(ffs, n)
		ffs.n = 0
		if _, err := Repair("t.dets", opts, nil); err != nil {
			t.Fatalf("%s: repair after a fault at step %d: %v", kind, n, err)
		}
		if got := reopenCleanInMemFS(t, ffs.memFS, "t.dets", kind.String()); !slices.Equal(got, want) {
			t.Fatalf("%s: fault at step %d, then repair: %d objects, want %d", kind, n, len(got), len(want))
		}
		noTempsInMemFS(t, ffs.memFS, kind.String())
		if n > 10000 {
			t.Fatal("repair never finished")
		}
	}
}

// TestRepairExternalSort runs the external-sort path and compares it with
// the in-memory one on the same file.
func TestRepairExternalSort(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(seedU64(t), 7))
	for _, kind := range allKinds {
		img, m, _ := killedImage(t, t.TempDir(), kind, r, 3000)
		for _, limit := range []int{7, 1000, 1 << 20} {
			mfs := newMemFS()
			mfs.put("t.dets", img)
			var last RepairProgress
			var calls int
			opts := withTuning(Options{FS: mfs}, func(tn *tuning) { tn.repairMemEntries = limit })
			st, err := Repair("t.dets", opts, func(p RepairProgress) {
				if p.BytesScanned < last.BytesScanned || (p.Phase == last.Phase && p.Objects < last.Objects) {
					t.Errorf("progress went backwards: %+v after %+v", p, last)
				}
				last = p
				calls++
			})
			if calls < 2 || last.Phase != "write" || last.BytesScanned != int64(len(img)) || last.Objects != st.Objects {
				t.Errorf("last progress report %+v after %d calls; stats %+v", last, calls, st)
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.ExternalSort != (int(st.ObjectsFound) >= limit) {
				t.Errorf("limit %d, %d objects: ExternalSort = %v", limit, st.ObjectsFound, st.ExternalSort)
			}
			if got := reopenCleanInMemFS(t, mfs, "t.dets", kind.String()); !slices.Equal(got, m.Objects()) {
				t.Fatalf("%s, limit %d: %d objects, want %d", kind, limit, len(got), len(m.Objects()))
			}
			noTempsInMemFS(t, mfs, kind.String())
		}
	}
}

// TestDamageSlotEntries: slot entries of a properly closed file changed
// in ways the open does not check: two slots on one bucket, a pointer or a
// size moved, two entries swapped. The tables are large enough for a
// traversal window to be placed or radix-sorted (over 256 buckets), not
// only insertion-sorted as in the small fixtures. Every case must end in
// objects of the fixture or a typed error, never a panic (checkDamagedImage).
func TestDamageSlotEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(seedU64(t), 9))
	cases := 120
	if testing.Short() {
		cases = 30
	}
	for _, kind := range allKinds {
		fx := makeDamageFixture(t, kind, 600)
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			img := fx.img
			// The slot entries, through the part table and the parts.
			var entries []int
			next := int(be.Uint32(img[offNext:]))
			for s := 0; s < next; s += slotsPerSeg {
				part := int(be.Uint32(img[partTableOff+4*(s/slotsPerPart):]))
				seg := int(be.Uint32(img[part+4*(s%slotsPerPart/slotsPerSeg):]))
				for i := range slotsPerSeg {
					if be.Uint32(img[seg+slotEntrySize*i:]) != 0 {
						entries = append(entries, seg+slotEntrySize*i)
					}
				}
			}
			if len(entries) < 256 {
				t.Fatalf("only %d buckets: the traversal would not sort them", len(entries))
			}
			for c := range cases {
				d := slices.Clone(img)
				a, b := entries[r.IntN(len(entries))], entries[r.IntN(len(entries))]
				var what string
				switch c % 4 {
				case 0:
					copy(d[a:a+slotEntrySize], img[b:b+slotEntrySize])
					what = fmt.Sprintf("entry at %d copied to %d", b, a)
				case 1:
					p := baseAddr + r.IntN(len(img)-baseAddr)
					be.PutUint32(d[a+4:], uint32(p))
					what = fmt.Sprintf("entry at %d points to %d", a, p)
				case 2:
					n := 1 + r.IntN(2048)
					be.PutUint32(d[a:], uint32(n))
					what = fmt.Sprintf("entry at %d has size %d", a, n)
				case 3:
					copy(d[a:a+slotEntrySize], img[b:b+slotEntrySize])
					copy(d[b:b+slotEntrySize], img[a:a+slotEntrySize])
					what = fmt.Sprintf("entries at %d and %d swapped", a, b)
				}
				checkDamagedImage(t, dir, fx, d, what)
			}
		})
	}
}
