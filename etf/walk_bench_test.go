package etf

import "testing"

// Benchmarks of the byte-level walkers that dets runs on every lookup and
// insert, on the bench workload's object {<<16 bytes>>, <<100 bytes>>}.

func BenchmarkPhash2Body(b *testing.B) {
	enc, err := Encode(benchKey)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		h, ok := raw.Phash2Body(enc[1:])
		if !ok {
			b.Fatal("Phash2Body refused the object")
		}
		sink += h
	}
	_ = sink
}

func BenchmarkCompareBodies(b *testing.B) {
	x, err := Encode(benchKey)
	if err != nil {
		b.Fatal(err)
	}
	// Equal objects in two buffers: CompareBodies answers only for those
	// (for unequal ones it cannot vouch for the bytes it did not walk).
	y, err := Encode(benchKey)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var sink int
	for b.Loop() {
		c, ok := raw.CompareBodies(x[1:], y[1:])
		if !ok {
			b.Fatal("CompareBodies refused the objects")
		}
		sink += c
	}
	_ = sink
}

func BenchmarkTupleElement(b *testing.B) {
	enc, err := Encode(Tuple{Atom("user"), Int(1234567), Binary(make([]byte, 100))})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var sink int
	for b.Loop() {
		s, e, ok := raw.TupleElement(enc, 3)
		if !ok {
			b.Fatal("TupleElement refused the object")
		}
		sink += e - s
	}
	_ = sink
}
