package etf

// Tests of the two unsafe tricks in unsafe.go, and benchmarks of the
// boxing. Each test fails when a Go release changes what its trick relies
// on (the start-up checks would otherwise quietly turn the trick off).

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"
)

// TestInterfaceLayout: a Term is two words, a type word and a pointer to
// the value, and termOfBinary and termOfTuple build exactly the words the
// ordinary conversion builds, except that the pointer is to the header
// given rather than to a copy.
func TestInterfaceLayout(t *testing.T) {
	if !boxOK {
		t.Fatal("the interface layout changed: the flat decoders and RawBatch box the slow way")
	}
	if got, want := unsafe.Sizeof(Term(nil)), 2*unsafe.Sizeof(uintptr(0)); got != want {
		t.Fatalf("a Term is %d bytes, want %d (type word and data pointer)", got, want)
	}
	bins := []Binary{Binary("abc")}
	tups := []Tuple{{Int(1), Int(2)}}
	conv := []Term{bins[0], tups[0]}
	for i, box := range []Term{termOfBinary(&bins[0]), termOfTuple(&tups[0])} {
		got, want := (*ifaceWords)(unsafe.Pointer(&box)), (*ifaceWords)(unsafe.Pointer(&conv[i]))
		if got.tab != want.tab {
			t.Errorf("term %d: type word %p, the conversion's is %p", i, got.tab, want.tab)
		}
		if !Equal(box, conv[i]) {
			t.Errorf("term %d: %v, the conversion gives %v", i, box, conv[i])
		}
	}
	if p := (*ifaceWords)(unsafe.Pointer(&conv[0])).data; p == unsafe.Pointer(&bins[0]) {
		t.Error("the conversion did not copy the header: the trick is not needed")
	}
	box := termOfBinary(&bins[0])
	if p := (*ifaceWords)(unsafe.Pointer(&box)).data; p != unsafe.Pointer(&bins[0]) {
		t.Errorf("termOfBinary points at %p, not at the header %p", p, &bins[0])
	}
	// The interior pointer keeps the whole chunk alive.
	chunk := make([]Binary, 64)
	chunk[63] = Binary("tail")
	kept := termOfBinary(&chunk[63])
	chunk = nil
	runtime.GC()
	if string(kept.(Binary)) != "tail" {
		t.Fatalf("after a GC the boxed header reads %q", kept.(Binary))
	}
}

// TestNoZeroBytes: the unzeroed buffers behind the bytes chunks are empty,
// have the room asked for, and are distinct arrays that keep what is
// written into them.
func TestNoZeroBytes(t *testing.T) {
	if !builderOK {
		t.Fatal("strings.Builder's String no longer shares its buffer: bytes chunks are zeroed again")
	}
	var prev []byte
	for _, n := range []int{1, 100, batchBytes, batchChunkMax} {
		b := noZeroBytes(n)
		if len(b) != 0 || cap(b) != n {
			t.Fatalf("noZeroBytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		b = append(b, bytes.Repeat([]byte{byte(n)}, n)...)
		if prev != nil && &prev[0] == &b[0] {
			t.Fatalf("noZeroBytes(%d) reused the previous array", n)
		}
		runtime.GC()
		if !bytes.Equal(b, bytes.Repeat([]byte{byte(n)}, n)) {
			t.Fatalf("noZeroBytes(%d): the bytes written changed", n)
		}
		prev = b
	}
}

// boxSink keeps boxed terms escaping, as a decoder's results do.
var boxSink Term

// BenchmarkBoxBinary compares termOfBinary with the conversion it stands
// for, on headers already in a chunk.
func BenchmarkBoxBinary(b *testing.B) {
	hdrs := make([]Binary, 1024)
	for i := range hdrs {
		hdrs[i] = Binary("value")
	}
	b.Run("termOfBinary", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			boxSink = termOfBinary(&hdrs[i%len(hdrs)])
			i++
		}
	})
	b.Run("conversion", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			boxSink = hdrs[i%len(hdrs)]
			i++
		}
	})
}

// BenchmarkDecodeOne decodes the dets engine's common object as a lookup
// does: one allocation for the slice, the tuple, its headers and the
// boxed terms, and none more thanks to termOfTuple and termOfBinary.
func BenchmarkDecodeOne(b *testing.B) {
	enc, err := Encode(benchKey)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := raw.DecodeOne(enc); err != nil {
			b.Fatal(err)
		}
	}
}
