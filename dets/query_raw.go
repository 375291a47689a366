package dets

import (
	"iter"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

// scanFor yields every object that s may match, in All's order and with
// its guarantees. With a spec the raw filter can read (its heads and
// guards test the bytes: matchspec's RejectsRaw), the scan walks the
// objects' encodings and decodes only those the filter cannot rule out;
// a select that keeps few objects then builds few terms. Otherwise it is
// All.
func (t *Table) scanFor(s *matchspec.Spec) iter.Seq2[etf.Term, error] {
	if !s.FiltersRaw() {
		return t.All()
	}
	return func(yield func(etf.Term, error) bool) {
		for enc, err := range t.RawAll() {
			if err != nil {
				yield(nil, err)
				return
			}
			if s.RejectsRaw(enc) {
				continue
			}
			obj, err := etf.Decode(enc)
			if err != nil { // RawAll validated enc: a decoder limit
				yield(nil, corrupt(t.path, "object", -1, "%v", err))
				return
			}
			if !yield(obj, nil) {
				return
			}
		}
	}
}
