package dets

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"os"
	"testing"
)

// TestFreshFileGolden pins a new empty set table, closed at once, against
// the dump of the file OTP 25 writes for dets:open_file(e,[{file,F}]) and
// close (docs/format-otp9.md §3).
func TestFreshFileGolden(t *testing.T) {
	path := tmpFile(t, "e.dets")
	tab, err := Open(path, Options{})
	must(t, err)
	must(t, tab.Close())
	b, err := os.ReadFile(path)
	must(t, err)
	if len(b) != 5464 {
		t.Fatalf("size %d, want 5464", len(b))
	}
	want := map[int]string{
		0x00:   "00001538 00abcdef 00000001 00000001",
		0x10:   "00000009 00000100 00000100 00000001",
		0x20:   "00000000 00000000 00000100 02000000",
		0x30:   "00000001 00000000",
		0xa8:   "b5b56471 a7411cc4 38b3c98e 91f20fbf",
		0xb8:   "00001538 00000000",
		0x138:  "00000538 00000000",
		0x538:  "00000d38 00000000",
		0x1538: "00000010 03abcdef 00000020 00001538",
		0x1548: "0000000c 03abcdef 00003039 00000020",
	}
	for off, hx := range want {
		w, _ := hex.DecodeString(string(bytes.ReplaceAll([]byte(hx), []byte(" "), nil)))
		if got := b[off : off+len(w)]; !bytes.Equal(got, w) {
			t.Errorf("bytes at %#x = %x, want %x", off, got, w)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewSource(seed))
	for range 200 {
		u := func() uint64 { return uint64(r.Uint32()) }
		h := header{
			freelistsPtr: r.Uint32(), closed: uint32(r.Intn(2)), typ: uint32(1 + r.Intn(3)),
			shape:  shape{m: u(), next: u(), noObjects: u(), noKeys: u(), minSlots: u(), maxSlots: u(), n: u()},
			keyPos: r.Uint32(), hashMethod: uint32(r.Intn(2)),
			hasMD5: r.Intn(4) != 0, flBase: r.Uint32(),
		}
		for i := range h.counters {
			h.counters[i] = r.Uint32()
		}
		b := make([]byte, headerSize)
		h.encode(b)
		got := decodeHeader(b)
		got.cookie, got.version = 0, 0
		if got != h {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, h)
		}
		if !md5OK(b) {
			t.Fatal("md5 of an encoded header does not check")
		}
		if h.hasMD5 {
			b[offNoObjects] ^= 1
			if md5OK(b) {
				t.Fatal("md5 accepted a changed header")
			}
		}
	}
}

func TestCheckHeaderOrder(t *testing.T) {
	h := header{typ: typeSet, shape: shape{m: 256, next: 256, minSlots: 256, maxSlots: 1 << 25}, keyPos: 1, hashMethod: hashPhash2, hasMD5: true, closed: closedProperly}
	enc := func(mut func(b []byte)) []byte {
		b := make([]byte, headerSize)
		hh := h
		hh.encode(b)
		mut(b)
		return b
	}
	put := func(off int, v uint32) func([]byte) { return func(b []byte) { be.PutUint32(b[off:], v) } }
	cases := []struct {
		name    string
		mut     func([]byte)
		trailer uint32
		err     error
		state   headerState
	}{
		{"ok", func([]byte) {}, 1000, nil, hdrOK},
		{"cookie", put(offCookie, 1), 1000, ErrNotDETS, 0},
		{"type before md5", put(offType, 7), 1000, ErrBadTypeCode, 0},
		{"md5", put(offNoKeys, 5), 1000, ErrNotDETS, 0},
		{"trailer", func([]byte) {}, 999, nil, hdrNotClosed},
		{"trailer before hash", func(b []byte) { put(offHashMethod, 5)(b); h2 := decodeHeader(b); h2.encode(b) }, 999, nil, hdrNotClosed},
		{"hash", func(b []byte) { h2 := decodeHeader(b); h2.hashMethod = 5; h2.encode(b) }, 1000, ErrBadHashMethod, 0},
		{"not closed", put(offClosed, 0), 1000, nil, hdrNotClosed},
		{"closed 2", put(offClosed, 2), 1000, ErrNotDETS, 0},
	}
	for _, c := range cases {
		_, st, err := checkHeader(enc(c.mut), 1000, c.trailer)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || (err == nil && st != c.state) {
			t.Errorf("%s: state %v err %v, want %v %v", c.name, st, err, c.state, c.err)
		}
	}
}

func TestLayoutFor(t *testing.T) {
	for next := uint64(256); next <= 1<<20; next += 256 {
		m, n := hashParamsFor(next)
		if m&(m-1) != 0 || n >= m || m+n != next {
			t.Fatalf("hashParamsFor(%d) = %d, %d", next, m, n)
		}
	}
	// docs/format-otp9.md §6.1 vectors: phash2(<<"key">>)=6681389 -> 45, a -> 97, 42 -> 152.
	for _, c := range [][2]uint64{{6681389, 45}, {97, 97}, {30328728, 152}} {
		if s := slotOf(c[0], 256, 0); s != c[1] {
			t.Errorf("slot of %d = %d, want %d", c[0], s, c[1])
		}
	}
}
