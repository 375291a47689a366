package fuzz

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/godets/godets/dets"
)

// inspectAllocBudget bounds what one FuzzInspect case may allocate for an
// image of n bytes: the views read a node, a bucket or a row at a time, and
// Redact makes one copy, so the work follows the file, never a size field
// the file claims.
func inspectAllocBudget(n int) uint64 { return 64<<20 + 64*uint64(n) }

// FuzzInspect: structured damage of a fixture (its closed file, or a
// native fixture's file as its killed writer left it), then every view of
// dets inspect over it, with the arguments a user may pass: slots and
// offsets inside, at the edges of and far outside the file. A view may
// say the bytes make no sense; it must not panic, loop or allocate by a
// size the file claims, and a redaction keeps the image's length.
func FuzzInspect(f *testing.F) {
	fxs, err := makeFixtures()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(3), []byte{})
	f.Add(uint8(6), []byte{0, 60, 0, 2})
	f.Add(uint8(1), []byte{2, 0, 4, 40, 1, 200, 0, 0})
	f.Add(uint8(4), []byte{3, 1, 16, 255, 3, 0, 200, 1})
	f.Add(uint8(5), []byte{2, 0, 32, 255, 3, 160, 0, 7})
	f.Fuzz(func(t *testing.T, which uint8, prog []byte) {
		if len(prog) > 4*64 {
			return
		}
		src := repairSources(fxs)[int(which)%(len(fxs)+3)]
		img := damage(src.img, prog)
		before := bytes.Clone(img)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc0 := ms.TotalAlloc
		if dets.IsNativeHeader(img) {
			inspectNative(t, img)
		} else {
			inspectOTP9(t, img)
		}
		runtime.ReadMemStats(&ms)
		if got, budget := ms.TotalAlloc-alloc0, inspectAllocBudget(len(img)); got > budget {
			t.Fatalf("inspecting a %d-byte image allocated %d bytes (budget %d)", len(img), got, budget)
		}
		if !bytes.Equal(img, before) {
			t.Fatal("inspecting changed the image")
		}
	})
}

// probeOffsets are the offsets a view is asked about: a spread over the
// image, both of its edges, and values no file reaches.
func probeOffsets(n int64) []int64 {
	offs := []int64{-1, 0, 1, n - 1, n, n + 1, 1 << 40, -1 << 40}
	for i := int64(1); i < 16; i++ {
		offs = append(offs, n*i/16)
	}
	return offs
}

// probeSlots are the slots --slot is asked about.
var probeSlots = []int64{-1, 0, 1, 2, 255, 256, 511, 512, 513, 1 << 20, 1 << 32, 1<<63 - 1}

// inspectView is what both formats' images answer.
type inspectView interface {
	Slot(n int64) (dets.SlotEntry, error)
	RegionOf(off int64) dets.Region
	AnnotateBucket(ptr, size int64) []dets.Annotation
	HexRows(off, n int64) []dets.Annotation
}

// probeView asks v about the probe slots and offsets of an image of size
// bytes, as dets inspect --slot and --offset do, and about far larger
// spans than it does.
func probeView(v inspectView, size int64) {
	for _, s := range probeSlots {
		if e, err := v.Slot(s); err == nil {
			v.AnnotateBucket(e.Ptr, e.Size)
		}
	}
	for _, off := range probeOffsets(size) {
		r := v.RegionOf(off)
		_ = r.String()
		if r.Name == "bucket" {
			dets.FormatRows(v.AnnotateBucket(r.Start, r.End-r.Start))
		}
		dets.FormatRows(v.HexRows(off, 64))
		v.AnnotateBucket(off, 1<<62)
	}
	v.HexRows(0, 1<<62)
	v.HexRows(-1<<62, 1<<62)
}

func inspectOTP9(t *testing.T, img []byte) {
	im, err := dets.NewImage(img)
	if err != nil {
		return
	}
	im.HeaderFields()
	im.Parts()
	im.Segments()
	im.FreeLists()
	probeView(im, int64(len(img)))
	red, _, err := im.Redact()
	if err == nil && len(red.Bytes()) != len(img) {
		t.Fatalf("the redacted otp9 image has %d bytes, the image %d", len(red.Bytes()), len(img))
	}
}

func inspectNative(t *testing.T, img []byte) {
	im, err := dets.NewNativeImage(path, bytes.NewReader(img), int64(len(img)))
	if err != nil {
		return
	}
	im.Fields()
	im.Tree()
	im.Free()
	im.Log()
	probeView(im, int64(len(img)))
	red, _, err := im.Redact()
	if err == nil && len(red) != len(img) {
		t.Fatalf("the redacted native image has %d bytes, the image %d", len(red), len(img))
	}
}
