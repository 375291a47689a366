package etf_test

import (
	"fmt"

	"github.com/godets/godets/etf"
)

// A storage engine that keeps {Key, Value} objects encoded finds, hashes
// and compares the key without decoding the object.
func ExampleRaw() {
	obj, _ := etf.Encode(etf.NewTuple(etf.Atom("user42"), etf.Binary("profile")))
	var raw etf.Raw
	start, end, ok := raw.TupleElement(obj, 1)
	if !ok {
		return
	}
	key := obj[start:end] // a body: the key's encoding without the version byte
	h, _ := raw.Phash2Body(key)
	fmt.Println(h == etf.Phash2(etf.Atom("user42")))
	other, _ := etf.Encode(etf.Atom("user7"))
	c, _ := raw.CompareBodies(key, other[1:])
	fmt.Println(c, etf.CompareExact(etf.Atom("user42"), etf.Atom("user7")))
	k, _ := raw.DecodeBody(key)
	fmt.Println(k)
	// Output:
	// true
	// -1 -1
	// user42
}
