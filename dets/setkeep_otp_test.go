package dets

import (
	"math"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/otptest"
)

// TestSetKeepsAnEqualObject: inserting into a set an object that is the
// same term (=:=) as the stored one, in another encoding, keeps the stored
// one, as OTP's dets does; OTP 25 takes -0.0 and 0.0 for equal, so the
// choice shows. Bags take the new one and duplicate bags both, in OTP as
// here. erl runs each case and its result is compared with ours, on both
// formats. Found by an audit of the match specifications against OTP.
func TestSetKeepsAnEqualObject(t *testing.T) {
	r := otptest.Erl(t)
	negZ, posZ := etf.Float(math.Copysign(0, -1)), etf.Float(0)
	cases := []struct {
		kind  Kind
		calls [][]etf.Term // each Insert's objects
	}{
		{Set, [][]etf.Term{{etf.Tuple{negZ, etf.Atom("z")}}, {etf.Tuple{posZ, etf.Atom("z")}}}},
		{Set, [][]etf.Term{{etf.Tuple{etf.Atom("a"), negZ}}, {etf.Tuple{etf.Atom("a"), posZ}}}},
		{Set, [][]etf.Term{{etf.Tuple{negZ, etf.Atom("z")}, etf.Tuple{posZ, etf.Atom("z")}}}},
		{Set, [][]etf.Term{{etf.Tuple{etf.Atom("a"), posZ}}, {etf.Tuple{etf.Atom("a"), negZ}}}},
		{Set, [][]etf.Term{{etf.Tuple{etf.Atom("a"), negZ}}, {etf.Tuple{etf.Atom("a"), etf.Int(1)}}}},
		{Bag, [][]etf.Term{{etf.Tuple{etf.Atom("a"), negZ}}, {etf.Tuple{etf.Atom("a"), etf.Int(1)}}, {etf.Tuple{etf.Atom("a"), posZ}}}},
		{DuplicateBag, [][]etf.Term{{etf.Tuple{etf.Atom("a"), negZ}}, {etf.Tuple{etf.Atom("a"), posZ}}}},
	}
	for _, format := range []Format{OTP9, Native} {
		for i, c := range cases {
			calls := make(etf.List, len(c.calls))
			for j, objs := range c.calls {
				calls[j] = etf.List(objs)
			}
			enc, err := etf.Encode(etf.Tuple{etf.Atom(c.kind.String()), calls})
			must(t, err)
			out := r.Eval(t, `
[Spec, F] = In,
{Kind, Calls} = binary_to_term(Spec),
{ok, T} = dets:open_file(make_ref(), [{file, binary_to_list(F)}, {type, Kind}]),
[ok = dets:insert(T, Objs) || Objs <- Calls],
R = dets:match_object(T, '_'),
ok = dets:close(T),
[term_to_binary(R)]`, enc, []byte(tmpFile(t, "otp.dets")))
			want, err := etf.Decode(out[0])
			must(t, err)
			tab := openT(t, tmpFile(t, "t.dets"), Options{Kind: c.kind, Format: format})
			for _, objs := range c.calls {
				must(t, tab.Insert(objs...))
			}
			var got etf.List
			for o, err := range tab.All() {
				must(t, err)
				got = append(got, o)
			}
			// The encodings tell -0.0 from 0.0 where Equal would not.
			we, _ := etf.Encode(sortedList(want.(etf.List)))
			ge, _ := etf.Encode(sortedList(got))
			if string(we) != string(ge) {
				t.Errorf("%v case %d (%v): OTP holds %v, godets %v", format, i, c.kind, etf.Format(want), etf.Format(got))
			}
		}
	}
}

// sortedList is l in etf.CompareExact order, for comparing contents.
func sortedList(l etf.List) etf.List {
	s := append(etf.List(nil), l...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && etf.CompareExact(s[j-1], s[j]) > 0; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
	return s
}
