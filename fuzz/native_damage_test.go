package fuzz

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/testutil"
)

// TestOpenDamagedNative runs FuzzOpen's property (openCase) on native
// files damaged at random, so that plain go test covers what fuzzing a
// 660 KiB input reaches only by luck: bit flips, set bytes, a cut and a
// stale sector in the grown table and the native fixtures, closed and as
// their killed writers left them. The killed writers' files take the
// recovery path, which must not mistake damage it did not read for its
// own (latentDamage). Seeded: -seed or GODETS_SEED.
func TestOpenDamagedNative(t *testing.T) {
	seed := testutil.Seed(t)
	fxs, err := makeFixtures()
	if err != nil {
		t.Fatal(err)
	}
	grown, err := grownNative()
	if err != nil {
		t.Fatal(err)
	}
	srcs := [][]byte{grown}
	for _, fx := range fxs {
		if fx.format == dets.Native {
			srcs = append(srcs, fx.img, fx.dirty)
		}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	for i := range 300 {
		img := slices.Clone(srcs[r.IntN(len(srcs))])
		for range 1 + r.IntN(3) {
			off := r.IntN(len(img))
			switch r.IntN(8) {
			case 0, 1, 2:
				img[off] ^= 1 << r.IntN(8)
			case 3, 4:
				img[off] = byte(r.IntN(256))
			case 5:
				img = img[:off]
			default: // a stale sector: 512 bytes from elsewhere
				src := r.IntN(len(img))
				n := min(len(img)-off, len(img)-src, 512)
				copy(img[off:off+n], slices.Clone(img[src:src+n]))
			}
			if len(img) == 0 {
				break
			}
		}
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			openCase(t, img, dets.NoRepair)
			openCase(t, img, dets.AutoRepair)
		})
		if t.Failed() {
			t.Fatalf("case %d failed (seed %d)", i, seed)
		}
	}
}
