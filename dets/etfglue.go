package dets

import "github.com/godets/godets/etf"

// The etf functions the engine uses, in one place.
var (
	decodeTerm = etf.Decode
	encodeTerm = etf.Encode
	hashTerm   = etf.Phash2
)

// encodings is etf's byte-level side, through which the engine slices,
// hashes, orders and decodes stored objects without building terms (see
// etf.Raw for the rules). Raw has no state, so its calls are direct calls.
var encodings etf.Raw
