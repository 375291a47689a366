package dets

import (
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// TestDirtyKeepsStaleFreeLists: the dirty mark leaves the free lists and
// trailer of the last save in place (OTP truncates them). A kill image
// taken then, with the stale records partly overwritten by new buckets or
// not, must repair to exactly the acknowledged objects in godets and in
// OTP, and a clean close must still end the file at its trailer.
func TestDirtyKeepsStaleFreeLists(t *testing.T) {
	r := otptest.Erl(t)
	rng := rand.New(rand.NewSource(testSeed(t)))
	var imgs [][]byte
	var want [][]string
	var kinds []Kind
	for _, kind := range allKinds {
		for _, after := range []int{1, 40} { // inserts after the save
			path := filepath.Join(t.TempDir(), "t.dets")
			tab := mustOpen(t, path, Options{Kind: kind})
			m := newModel(kind)
			for i := range 600 {
				o := paddedObj(rng.Intn(300), i%3, rng.Intn(200))
				insertBoth(t, tab, m, o)
				if i%4 == 0 {
					k := etf.Int(rng.Intn(300))
					deleteBoth(t, tab, m, k)
				}
			}
			if err := tab.Sync(); err != nil {
				t.Fatal(err)
			}
			synced := readFileT(t, path)
			flp := int64(tab.h.freelistsPtr)
			if flp <= 0 || flp+12+trailerSize > int64(len(synced)) { // at least the terminator
				t.Fatalf("%s: synced file of %d bytes, free lists at %d", kind, len(synced), flp)
			}
			for i := range after {
				o := paddedObj(1000+i, 0, rng.Intn(200))
				insertBoth(t, tab, m, o)
			}
			img := readFileT(t, path)
			if len(img) < len(synced) {
				t.Fatalf("%s: the dirty file shrank from %d to %d bytes", kind, len(synced), len(img))
			}
			if img[offClosed+3] != 0 {
				t.Fatalf("%s: the dirty file still says closed", kind)
			}
			if err := tab.Close(); err != nil {
				t.Fatal(err)
			}
			reopenClean(t, path)
			imgs, want, kinds = append(imgs, img), append(want, m.Objects()), append(kinds, kind)
		}
	}
	checkKillImagesWithOTP(t, r, kinds, imgs, want)
}
