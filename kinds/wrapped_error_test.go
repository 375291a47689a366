package kinds

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
)

// errTooOld is a caller's own sentinel, wrapped around a *DecodeError.
var errTooOld = errors.New("schema version too old")

// A codec error that a caller's codec wrapped keeps the wrapper through
// handles and combinators: errors.Is still finds the caller's sentinel,
// errors.As the *DecodeError with its whole path, and the message both.
// within used to return a copy of the *DecodeError alone.
func TestWrappedCodecErrorKeepsItsChain(t *testing.T) {
	version := Codec[int64]{
		Name:   "version",
		Encode: Int.Encode,
		Decode: func(x etf.Term) (int64, error) {
			v, err := Int.Decode(x)
			if err == nil && v < 2 {
				return 0, fmt.Errorf("%w: %w", errTooOld, &DecodeError{Expected: "version >= 2", Got: describe(x)})
			}
			return v, err
		},
	}
	type doc struct {
		Name    string
		Version int64
	}
	docCodec := Record("doc",
		Field(String, func(d *doc) *string { return &d.Name }),
		Field(version, func(d *doc) *int64 { return &d.Version }))
	tab := openTable(t, dets.Set, 1)
	s, err := NewSet(tab, String, List(docCodec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Insert("k", []doc{{"a", 3}, {"b", 1}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Lookup("k")
	var de *DecodeError
	switch {
	case !errors.Is(err, errTooOld):
		t.Errorf("Lookup: %v does not match the caller's sentinel", err)
	case !errors.Is(err, ErrDecode) || !errors.As(err, &de):
		t.Errorf("Lookup: %v is not a *DecodeError", err)
	case de.Path != "value[1].3" || de.Expected != "version >= 2":
		t.Errorf("Lookup: the *DecodeError has path %q, expected %q", de.Path, de.Expected)
	case !strings.Contains(err.Error(), "value[1].3") || !strings.Contains(err.Error(), errTooOld.Error()):
		t.Errorf("Lookup: message %q lacks the path or the caller's text", err)
	case exclusive.Code(err) != "decode_failed":
		t.Errorf("Lookup: code %q", exclusive.Code(err))
	}
	for _, err := range s.Rows() {
		if !errors.Is(err, errTooOld) || !errors.As(err, &de) {
			t.Errorf("Rows: %v lost the caller's sentinel or the *DecodeError", err)
		}
	}
}
