package etf

import "testing"

// benchObject is a typical DETS object: a tuple with an atom tag, a key,
// a string, a number, a small map and a binary payload.
var benchObject Term = Tuple{
	Atom("user"), Int(1234567), Str("Ada Lovelace"), Float(36.5),
	Map{{Atom("admin"), True}, {Atom("tags"), List{Atom("math"), Atom("poetry")}}},
	Binary(make([]byte, 200)),
}

// benchKey is the shape the brief fixes for hashing: {<<16 bytes>>, <<100 bytes>>}.
var benchKey Term = Tuple{Binary(make([]byte, 16)), Binary(make([]byte, 100))}

func BenchmarkEncode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(benchObject); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendEncode(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		var err error
		if buf, err = AppendEncode(buf[:0], benchObject); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodedSize(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodedSize(benchObject); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	enc, err := Encode(benchObject)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPhash2(b *testing.B) {
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		sink += Phash2(benchKey)
	}
	_ = sink
}

func BenchmarkPhash2Object(b *testing.B) {
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		sink += Phash2(benchObject)
	}
	_ = sink
}

func BenchmarkCompareExact(b *testing.B) {
	x := Tuple{Atom("k"), Int(1), Binary("abcdefgh")}
	y := Tuple{Atom("k"), Float(1), Binary("abcdefgh")}
	b.ReportAllocs()
	var sink int
	for b.Loop() {
		sink += CompareExact(x, y)
	}
	_ = sink
}

// BenchmarkValidate: the bench workload's object ({Binary, Binary}, which
// has a fast path) and the mixed benchObject.
func BenchmarkValidate(b *testing.B) {
	for _, c := range []struct {
		name string
		t    Term
	}{{"pair", benchKey}, {"mixed", benchObject}} {
		enc, err := Encode(c.t)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
