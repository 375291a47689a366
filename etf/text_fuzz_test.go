package etf

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that the reader never panics, that its errors are
// positioned *SyntaxErrors, and that whatever it reads, FormatStrict writes
// and Parse reads back as the same term.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.text)
	}
	for _, c := range parseErrorCases {
		f.Add(c.text)
	}
	for _, c := range formatCases {
		f.Add(c.want)
	}
	for _, c := range encodingCases {
		f.Add(c.text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSyntaxError := func(what string, err error) {
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("%s: %v is not a *SyntaxError", what, err)
			}
			if se.Line < 1 || se.Line > strings.Count(s, "\n")+1 || se.Col < 1 || se.Col > len(s)+1 {
				t.Fatalf("%s: position %d:%d outside the input", what, se.Line, se.Col)
			}
		}
		roundTrip := func(v Term) {
			text, err := FormatStrict(v)
			if err != nil {
				t.Fatalf("FormatStrict of a parsed term: %v", err)
			}
			back, err := Parse(text)
			if err != nil {
				t.Fatalf("Parse(%q) of formatted text: %v", text, err)
			}
			if !equalWithZeroSigns(back, v) {
				t.Fatalf("round trip changed the term: %q read back as %s", text, Format(back))
			}
			if again := Format(back); again != text {
				t.Fatalf("Format not stable: %q then %q", text, again)
			}
		}

		v, err := Parse(s)
		if err != nil {
			checkSyntaxError("Parse", err)
		} else {
			roundTrip(v)
		}

		terms, err := ParseAll(s)
		if err != nil {
			checkSyntaxError("ParseAll", err)
		}
		for _, v := range terms {
			roundTrip(v)
		}
	})
}
