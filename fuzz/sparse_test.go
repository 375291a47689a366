package fuzz

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// The sparse form of a FuzzOpen input: a committed seed of a native file
// (36 KiB at least, most of it zero pages, four bytes a zero in the corpus
// format) is kept as its runs of bytes and of zeros, a few KiB. An input
// that starts with sparseMagic is
//
//	sparseMagic, then repeated: uvarint n, n bytes, uvarint z (z zero bytes)
//
// and stands for the file those runs spell; every other input is the file
// itself. The fuzzer mutates either form; a malformed sparse input, one
// that spells more than maxSparseImage bytes, or a raw input of more than
// maxImage bytes, is skipped (a native file grows in steps of 1 MiB). No DETS file starts
// with sparseMagic, so the raw form loses nothing that opens.
const (
	sparseMagic    = "GDSPARSE"
	maxImage       = 1 << 20
	maxSparseImage = 4 << 20
	// sparseMinZeros is the shortest run of zeros the encoder cuts out.
	sparseMinZeros = 16
)

// expandInput returns the file a FuzzOpen input stands for, and false for
// an input to skip.
func expandInput(data []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(sparseMagic))
	if !ok {
		return data, len(data) <= maxImage
	}
	out := []byte{}
	for len(rest) > 0 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) || n > uint64(maxSparseImage-len(out)) {
			return nil, false
		}
		out = append(out, rest[k:k+int(n)]...)
		if rest = rest[k+int(n):]; len(rest) == 0 {
			break
		}
		z, k := binary.Uvarint(rest)
		if k <= 0 || z > uint64(maxSparseImage-len(out)) {
			return nil, false
		}
		out = slices.Grow(out, int(z))[:len(out)+int(z)]
		clear(out[len(out)-int(z):])
		rest = rest[k:]
	}
	return out, true
}

// sparseInput is the sparse form of img: its runs of at least
// sparseMinZeros zeros cut out.
func sparseInput(img []byte) []byte {
	out := []byte(sparseMagic)
	lit := 0 // start of the bytes not yet written
	for i := 0; i < len(img); {
		if img[i] != 0 {
			i++
			continue
		}
		j := i
		for j < len(img) && img[j] == 0 {
			j++
		}
		if j-i < sparseMinZeros && j < len(img) {
			i = j
			continue
		}
		out = binary.AppendUvarint(out, uint64(i-lit))
		out = append(out, img[lit:i]...)
		out = binary.AppendUvarint(out, uint64(j-i))
		lit, i = j, j
	}
	if lit < len(img) {
		out = binary.AppendUvarint(out, uint64(len(img)-lit))
		out = append(out, img[lit:]...)
	}
	return out
}
