package dets

import "github.com/godets/godets/etf"

// The etf functions the engine uses, in one place.
var (
	decodeTerm = etf.Decode
	decodeOne  = etf.DecodeOne
	encodeTerm = etf.Encode
	hashTerm   = etf.Phash2
)
