package etf

// Tests of the consult reader: ParseAll, Reader and the coding comment.

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/godets/godets/internal/testutil"
)

func TestParseAll(t *testing.T) {
	text := "%% a consult file\n{a, 1}.\n\"two\". % comment\n[3|\n4].\n\n<<5>>. fun m:f/6.\n"
	got, err := ParseAll(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Term{Tuple{Atom("a"), Int(1)}, Str("two"), &ImproperList{Elems: []Term{Int(3)}, Tail: Int(4)}, Binary{5}, exportFun("m", "f", 6)}
	if len(got) != len(want) {
		t.Fatalf("ParseAll gave %d terms, want %d", len(got), len(want))
	}
	for i := range want {
		if !Equal(got[i], want[i]) {
			t.Errorf("term %d = %s, want %s", i, Format(got[i]), Format(want[i]))
		}
	}
	if got, err := ParseAll(" % nothing\n"); err != nil || len(got) != 0 {
		t.Errorf("ParseAll of a comment = %v, %v; want no terms", got, err)
	}

	for _, c := range []struct {
		text      string
		line, col int
		reason    string
	}{
		{"a.\nb.\n{c,\n d e}.\n", 4, 4, "atom e"},
		{"a.\nb", 2, 2, "missing '.'"},
		{"a.\nb c.", 2, 3, "expected '.'"},
		{"a.b.", 1, 2, "'.'"},
		{"a.\n\n'\xe9'.\n", 3, 2, "UTF-8"},
		{"a.\n$", 2, 2, "end of input"},
	} {
		_, err := ParseAll(c.text)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != c.line || se.Col != c.col || !strings.Contains(se.Reason, c.reason) {
			t.Errorf("ParseAll(%q) = %v, want %d:%d %q", c.text, err, c.line, c.col, c.reason)
		}
	}
}

// encodingCases check how ParseAll picks the encoding; TestTextOTPConsult
// checks each against file:consult/1.
var encodingCases = []struct {
	name string
	text string
	want []Term // nil: an error
}{
	{"utf-8 by default", "'\xc3\xa9'.", []Term{Atom("é")}},
	{"latin-1 bytes are not utf-8", "'\xe9'.", nil},
	{"latin-1 comment", "%% coding: latin-1\n'\xe9'.", []Term{Atom("é")}},
	{"declaration after a term", "x. % -*- coding: latin-1 -*-\n'\xe9'.", []Term{Atom("x"), Atom("é")}},
	{"upper-case name", "%% coding: LATIN-1\n'\xe9'.", []Term{Atom("é")}},
	{"Coding is not coding", "%% Coding: latin-1\n'\xe9'.", nil},
	{"line 2, encoding =, suffix", "%% hello\n%% encoding = latin-1-unix\n'\xe9'.", []Term{Atom("é")}},
	{"line 3 is too late", "%\n%\n%% coding: latin-1\n'\xe9'.", nil},
	{"utf-8 declared", "%% coding: utf-8\n'\xc3\xa9'.", []Term{Atom("é")}},
	{"first declaration wins", "%% coding: utf-8 coding: latin-1\n'\xe9'.", nil},
	{"unknown name stops the search", "%% coding: ascii, coding: latin-1\n'\xe9'.", nil},
	{"not in a comment", "'coding: latin-1'.\n'\xe9'.", nil},
	{"non-ascii before the declaration", "'\xe9'. % coding: latin-1\n", []Term{Atom("é")}},
	{"latin-1 bytes 128-160 are white space", "%% coding: latin-1\n\x85'\xff'\xa0.", []Term{Atom("ÿ")}},
	{"utf-8 U+0085 and U+00A0 are white space", "\xc2\x85a\xc2\xa0.", []Term{Atom("a")}},
}

func TestParseAllEncoding(t *testing.T) {
	for _, c := range encodingCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseAll(c.text)
			if c.want == nil {
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("ParseAll = %v, %v; want a syntax error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("ParseAll gave %d terms, want %d", len(got), len(c.want))
			}
			for i := range got {
				if !Equal(got[i], c.want[i]) {
					t.Fatalf("term %d = %s, want %s", i, Format(got[i]), Format(c.want[i]))
				}
			}
		})
	}
	// In Latin-1 a non-ASCII byte is one character, so columns count bytes.
	_, err := ParseAll("%% coding: latin-1\n'\xe9' X.")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Col != 5 {
		t.Fatalf("Latin-1 error position: %v, want 2:5", err)
	}
}

// smallChunkReader returns at most n bytes per Read, to exercise buffering.
type smallChunkReader struct {
	s string
	n int
}

func (c *smallChunkReader) Read(p []byte) (int, error) {
	if len(c.s) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestReader(t *testing.T) {
	r := rand.New(rand.NewSource(testutil.Seed(t)))
	var sb strings.Builder
	var terms []Term
	lines := []int{}
	line := 1
	for i := 0; i < 300; i++ {
		tm := randomTerm(r, 3)
		s, err := FormatStrict(tm)
		if err != nil {
			t.Fatalf("FormatStrict(random term): %v", err)
		}
		terms = append(terms, tm)
		lines = append(lines, line)
		sb.WriteString(s)
		sb.WriteString(".\n")
		line += 1 + strings.Count(s, "\n")
	}
	rd := NewReader(&smallChunkReader{s: sb.String(), n: 7})
	for i, want := range terms {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("term %d: %v", i, err)
		}
		if !equalWithZeroSigns(got, want) {
			t.Fatalf("term %d = %s, want %s", i, Format(got), Format(want))
		}
		if rd.Line() != lines[i] {
			t.Fatalf("term %d: Line() = %d, want %d", i, rd.Line(), lines[i])
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("after the last term: %v, want io.EOF", err)
		}
	}

	// Errors are sticky and carry the line.
	rd = NewReader(strings.NewReader("ok.\n{bad\n.\nfine.\n"))
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	_, err1 := rd.Next()
	_, err2 := rd.Next()
	var se *SyntaxError
	if !errors.As(err1, &se) || se.Line != 3 || err2 != err1 {
		t.Fatalf("errors %v then %v; want the same syntax error at line 3 twice", err1, err2)
	}

	// Read errors come through unchanged.
	boom := errors.New("disk on fire")
	if _, err := NewReader(failingReader{boom}).Next(); !errors.Is(err, boom) {
		t.Fatalf("read error: %v, want %v", err, boom)
	}
	rd = NewReader(io.MultiReader(strings.NewReader("a.\n{b,"), failingReader{boom}))
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("read error mid-term: %v, want %v", err, boom)
	}
}

func TestReaderDoesNotReadAhead(t *testing.T) {
	// A term is returned as soon as its dot and the character after it
	// arrive, so an interactive stream works.
	pr, pw := io.Pipe()
	rd := NewReader(pr)
	done := make(chan error, 1)
	go func() {
		t, err := rd.Next()
		if err == nil && !Equal(t, Atom("first")) {
			err = fmt.Errorf("got %v", t)
		}
		done <- err
	}()
	if _, err := pw.Write([]byte("first.\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next blocked waiting for more input after a complete term")
	}
	pw.Close()
}

func ExampleReader() {
	r := NewReader(strings.NewReader("{a, 1}.\n%% a comment\n{b, 2}.\n"))
	for {
		t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Line(), t)
	}
	// Output:
	// 1 {a,1}
	// 3 {b,2}
}
