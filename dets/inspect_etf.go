package dets

import (
	"errors"
	"fmt"
	"strconv"
)

// A walk over one encoded term (external term format) that names every
// byte: the tags, lengths and counts that give the term its shape, and the
// content bytes that carry the data (atom texts, string and binary bytes,
// integer digits, floats, the identifiers inside pids, ports, references
// and funs). Inspect annotates bytes with it and Redact replaces the
// content bytes.

// contentKind says what a run of bytes is, and so how Redact replaces it.
type contentKind uint8

const (
	shapeBytes    contentKind = iota // tags, lengths, counts: kept
	textBytes                        // atom text, string and binary bytes: letters
	bitBytes                         // bit string bytes: any bytes
	intBytes                         // SMALL_INTEGER, INTEGER: any bytes
	bigBytes                         // a big's magnitude, least significant first: the last byte not 0
	signByte                         // a big's sign: 0
	newFloatBytes                    // an IEEE double: a finite one
	oldFloatBytes                    // FLOAT_EXT's 31 bytes of text: a finite number's text
	idBytes                          // ids, serials, creations, fun uniq/index: zeros
)

// etfItem is one run of bytes of an encoding.
type etfItem struct {
	off, n int
	kind   contentKind
	label  string
	depth  int
}

// errUnredactable marks an encoding whose content the walk cannot tell
// from its shape (a compressed term, or a tag only the distribution uses).
var errUnredactable = errors.New("encoding cannot be walked")

// etfWalker walks b; fn receives every item in byte order.
type etfWalker struct {
	b  []byte
	fn func(etfItem)
}

func (w *etfWalker) emit(off, n int, kind contentKind, depth int, label string) {
	if w.fn != nil {
		w.fn(etfItem{off: off, n: n, kind: kind, label: label, depth: depth})
	}
}

func (w *etfWalker) need(off, n int) error {
	if n < 0 || off+n > len(w.b) || off+n < off {
		return fmt.Errorf("truncated term at %d", off)
	}
	return nil
}

func (w *etfWalker) u16(off int) int { return int(w.b[off])<<8 | int(w.b[off+1]) }
func (w *etfWalker) u32(off int) int { return int(be.Uint32(w.b[off:])) }

// object walks a whole stored object: the version byte, then one term
// that must end exactly at len(b).
func (w *etfWalker) object() error {
	if len(w.b) < 2 || w.b[0] != 131 {
		return fmt.Errorf("no version byte 131")
	}
	if w.b[1] == 80 {
		return fmt.Errorf("%w: compressed term", errUnredactable)
	}
	w.emit(0, 1, shapeBytes, 0, "version 131")
	end, err := w.term(1, 0)
	if err != nil {
		return err
	}
	if end != len(w.b) {
		return fmt.Errorf("%d bytes after the term", len(w.b)-end)
	}
	return nil
}

// term walks the term at off and returns its end.
func (w *etfWalker) term(off, depth int) (int, error) {
	if depth > 10000 {
		return 0, fmt.Errorf("terms nested too deep")
	}
	if err := w.need(off, 1); err != nil {
		return 0, err
	}
	tag := w.b[off]
	// header emits the tag and an n-byte count after it and returns the count.
	header := func(n int, what string) (int, error) {
		if err := w.need(off, 1+n); err != nil {
			return 0, err
		}
		v := 0
		switch n {
		case 1:
			v = int(w.b[off+1])
		case 2:
			v = w.u16(off + 1)
		case 4:
			v = w.u32(off + 1)
		}
		w.emit(off, 1+n, shapeBytes, depth, fmt.Sprintf(what, v))
		return v, nil
	}
	content := func(at, n int, kind contentKind, what string) (int, error) {
		if err := w.need(at, n); err != nil {
			return 0, err
		}
		if n > 0 {
			w.emit(at, n, kind, depth+1, what+preview(w.b[at:at+n], kind))
		}
		return at + n, nil
	}
	elems := func(at, n int) (int, error) {
		var err error
		for range n {
			if at, err = w.term(at, depth+1); err != nil {
				return 0, err
			}
		}
		return at, nil
	}
	switch tag {
	case 97:
		w.emit(off, 1, shapeBytes, depth, "small integer")
		return content(off+1, 1, intBytes, "integer")
	case 98:
		w.emit(off, 1, shapeBytes, depth, "integer")
		return content(off+1, 4, intBytes, "integer")
	case 110, 111:
		size := 1
		if tag == 111 {
			size = 4
		}
		n, err := header(size, "big integer, %d digit bytes")
		if err != nil {
			return 0, err
		}
		at, err := content(off+1+size, 1, signByte, "sign")
		if err != nil {
			return 0, err
		}
		return content(at, n, bigBytes, "digits")
	case 70:
		w.emit(off, 1, shapeBytes, depth, "float")
		return content(off+1, 8, newFloatBytes, "IEEE double")
	case 99:
		w.emit(off, 1, shapeBytes, depth, "float (text)")
		return content(off+1, 31, oldFloatBytes, "float text")
	case 100, 118, 115, 119:
		size := 2
		if tag == 115 || tag == 119 {
			size = 1
		}
		n, err := header(size, "atom, %d bytes of text")
		if err != nil {
			return 0, err
		}
		return content(off+1+size, n, textBytes, "atom text")
	case 107:
		n, err := header(2, "string, %d bytes")
		if err != nil {
			return 0, err
		}
		return content(off+3, n, textBytes, "string bytes")
	case 109:
		n, err := header(4, "binary, %d bytes")
		if err != nil {
			return 0, err
		}
		return content(off+5, n, textBytes, "binary bytes")
	case 77:
		n, err := header(4, "bit string, %d bytes")
		if err != nil {
			return 0, err
		}
		if err := w.need(off+5, 1); err != nil {
			return 0, err
		}
		w.emit(off+5, 1, shapeBytes, depth, fmt.Sprintf("bits in the last byte: %d", w.b[off+5]))
		return content(off+6, n, bitBytes, "bit string bytes")
	case 106:
		w.emit(off, 1, shapeBytes, depth, "[]")
		return off + 1, nil
	case 104, 105:
		size := 1
		if tag == 105 {
			size = 4
		}
		n, err := header(size, "tuple, %d elements")
		if err != nil {
			return 0, err
		}
		return elems(off+1+size, n)
	case 108:
		n, err := header(4, "list, %d elements and a tail")
		if err != nil {
			return 0, err
		}
		return elems(off+5, n+1)
	case 116:
		n, err := header(4, "map, %d pairs")
		if err != nil {
			return 0, err
		}
		return elems(off+5, 2*n)
	case 103, 88: // PID_EXT, NEW_PID_EXT: Node ID Serial Creation
		w.emit(off, 1, shapeBytes, depth, "pid")
		at, err := w.term(off+1, depth+1)
		if err != nil {
			return 0, err
		}
		return content(at, 8+creationSize(tag), idBytes, "pid id, serial, creation")
	case 102, 89, 120: // PORT_EXT, NEW_PORT_EXT, V4_PORT_EXT
		w.emit(off, 1, shapeBytes, depth, "port")
		at, err := w.term(off+1, depth+1)
		if err != nil {
			return 0, err
		}
		id := 4
		if tag == 120 {
			id = 8
		}
		return content(at, id+creationSize(tag), idBytes, "port id, creation")
	case 101: // REFERENCE_EXT: Node ID Creation
		w.emit(off, 1, shapeBytes, depth, "reference")
		at, err := w.term(off+1, depth+1)
		if err != nil {
			return 0, err
		}
		return content(at, 5, idBytes, "reference id, creation")
	case 114, 90: // NEW_REFERENCE_EXT, NEWER_REFERENCE_EXT: Len Node Creation ID*Len
		n, err := header(2, "reference, %d id words")
		if err != nil {
			return 0, err
		}
		at, err := w.term(off+3, depth+1)
		if err != nil {
			return 0, err
		}
		return content(at, creationSize(tag)+4*n, idBytes, "reference creation, ids")
	case 113: // EXPORT_EXT: Module Function Arity
		w.emit(off, 1, shapeBytes, depth, "export fun")
		return elems(off+1, 3)
	case 112: // NEW_FUN_EXT: Size Arity Uniq Index NumFree Module OldIndex OldUniq Pid Free...
		if err := w.need(off, 30); err != nil {
			return 0, err
		}
		w.emit(off, 6, shapeBytes, depth, fmt.Sprintf("fun, %d bytes, arity %d", w.u32(off+1), w.b[off+5]))
		at, err := content(off+6, 20, idBytes, "fun uniq, index")
		if err != nil {
			return 0, err
		}
		free := w.u32(at)
		w.emit(at, 4, shapeBytes, depth, fmt.Sprintf("%d free variables", free))
		return elems(at+4, 4+free)
	case 117: // FUN_EXT: NumFree Pid Module Index Uniq Free...
		n, err := header(4, "old fun, %d free variables")
		if err != nil {
			return 0, err
		}
		return elems(off+5, 4+n)
	}
	return 0, fmt.Errorf("%w: tag %d at %d", errUnredactable, tag, off)
}

// creationSize is the creation field's size of a pid, port or reference tag.
func creationSize(tag byte) int {
	switch tag {
	case 103, 102, 114, 101:
		return 1
	}
	return 4
}

// preview shows a little of a content run: text quoted, numbers as such.
func preview(b []byte, kind contentKind) string {
	switch kind {
	case textBytes:
		const max = 40
		s := string(b)
		if len(s) > max {
			return " " + strconv.Quote(s[:max]) + "..."
		}
		return " " + strconv.Quote(s)
	case intBytes:
		if len(b) == 1 {
			return " " + strconv.Itoa(int(b[0]))
		}
		return " " + strconv.Itoa(int(int32(be.Uint32(b))))
	}
	return ""
}
