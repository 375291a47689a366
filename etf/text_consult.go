package etf

// The consult reader: ParseAll and Reader read a stream of dotted terms as
// file:consult/1 does, honouring a latin-1 coding comment.

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strings"
)

// ParseAll reads a sequence of terms, each followed by a dot, as
// file:consult/1 reads a file: UTF-8 unless a "coding: latin-1" comment in
// the first two lines says Latin-1. Errors are *SyntaxError with the line.
func ParseAll(s string) ([]Term, error) {
	r := NewReader(strings.NewReader(s))
	var out []Term
	for {
		t, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
}

// Reader reads terms in file:consult/1 syntax from a stream, one at a time,
// without holding the whole input in memory. Like file:consult/1 it reads
// UTF-8 unless a comment in the first two lines declares Latin-1.
type Reader struct {
	src  consultSource
	p    parser
	line int
	err  error
}

// NewReader returns a Reader over r. It buffers its input.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{src: consultSource{br: bufio.NewReaderSize(r, 64<<10)}}
	rd.p.lx.init(&rd.src)
	return rd
}

// Next returns the next term, io.EOF after the last one, a *SyntaxError
// (with the line) for bad text, or the underlying read error. Errors are
// sticky: after one, Next keeps returning it.
func (r *Reader) Next() (Term, error) {
	if r.err != nil {
		return nil, r.err
	}
	t, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return t, nil
}

// Line returns the line on which the term last returned by Next started.
func (r *Reader) Line() int { return r.line }

func (r *Reader) next() (Term, error) {
	p := &r.p
	p.reset()
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, io.EOF
	}
	r.line = p.tok.line
	t, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tDot {
		if p.tok.kind == tEOF {
			return nil, p.errTok(&p.tok, "missing '.' after the last term")
		}
		return nil, p.errTok(&p.tok, "expected '.' after the term, found %s", p.tok.describe())
	}
	return t, nil
}

// headerSize is how far epp looks for an encoding comment: the first two
// lines, within the first 512 bytes.
const headerSize = 512

// consultSource decodes a stream as file:consult/1 would. Only bytes from
// 0x80 up depend on the encoding, so while the text is ASCII it is passed
// on at once (an interactive stream gets each term as soon as it is
// complete); the first non-ASCII byte decides, from the header.
type consultSource struct {
	br     *bufio.Reader
	latin1 bool
	known  bool   // encoding decided
	head   []byte // bytes read while undecided, at most headerSize
	lines  int    // newlines in head
}

func (s *consultSource) ReadRune() (rune, int, error) {
	if s.known {
		if s.latin1 {
			b, err := s.br.ReadByte()
			return rune(b), 1, err
		}
		return s.br.ReadRune()
	}
	b, err := s.br.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	if b < 0x80 {
		s.head = append(s.head, b)
		if b == '\n' {
			s.lines++
		}
		if s.lines >= 2 || len(s.head) >= headerSize {
			s.decide(s.head)
		}
		return rune(b), 1, nil
	}
	// The header may continue past this byte: peek at the rest of it.
	_ = s.br.UnreadByte() // cannot fail right after ReadByte
	header := s.head
	for n := 1; ; n++ {
		ahead, err := s.br.Peek(n)
		if err != nil || len(s.head)+len(ahead) >= headerSize || s.lines+bytes.Count(ahead, []byte("\n")) >= 2 {
			header = append(slices.Clip(s.head), ahead...)
			break
		}
	}
	s.decide(header)
	return s.ReadRune()
}

func (s *consultSource) decide(header []byte) {
	s.known, s.latin1, s.head = true, declaresLatin1(header), nil
}

// declaresLatin1 reports whether a comment in the first two lines of head
// declares Latin-1 ("coding: latin-1"), the way epp:set_encoding/1 reads it:
// in a comment, "coding", optional spaces, ':' or '=', optional spaces, then
// a name whose '-'-separated parts start latin, 1 (or utf, 8 for UTF-8).
// The first such declaration decides.
func declaresLatin1(head []byte) bool {
	lines := 0
	inComment := false
	for i := 0; i < len(head) && lines < 2; i++ {
		c := head[i]
		switch {
		case c == '\n':
			lines++
			inComment = false
		case !inComment:
			inComment = c == '%'
		case c == 'c' && bytes.HasPrefix(head[i+1:], []byte("oding")):
			j := i + 6
			for j < len(head) && head[j] == ' ' {
				j++
			}
			if j >= len(head) || head[j] != ':' && head[j] != '=' {
				i = j - 1
				continue
			}
			j++
			for j < len(head) && head[j] == ' ' {
				j++
			}
			var parts []string
			var cur []byte
			for ; j < len(head); j++ {
				b := head[j]
				if b >= 'a' && b <= 'z' || b >= '0' && b <= '9' {
					cur = append(cur, b)
				} else if b >= 'A' && b <= 'Z' {
					cur = append(cur, b+'a'-'A')
				} else if b == '-' {
					parts = append(parts, string(cur))
					cur = cur[:0]
				} else {
					break
				}
			}
			parts = append(parts, string(cur))
			return len(parts) >= 2 && parts[0] == "latin" && parts[1] == "1"
		}
	}
	return false
}
