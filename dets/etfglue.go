package dets

import "github.com/godets/godets/etf"

// The etf functions the engine uses, in one place.
var (
	decodeTerm = etf.Decode
	encodeTerm = etf.Encode
	hashTerm   = etf.Phash2
)
