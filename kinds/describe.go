package kinds

import (
	"strconv"
	"unicode/utf8"

	"github.com/godets/godets/etf"
)

// describe names a term's shape for an error message: its type and size, or
// the value itself when it is a short scalar. It never formats a whole
// compound term, so a huge object cannot flood a log line.
func describe(x any) string {
	switch t := x.(type) {
	case nil:
		return "no term"
	case etf.Atom:
		return "atom " + quoteShort(string(t))
	case etf.Int:
		return "integer " + strconv.FormatInt(int64(t), 10)
	case *etf.BigInt:
		if t == nil {
			return "no term"
		}
		return "integer of " + strconv.Itoa(t.Big().BitLen()) + " bits"
	case etf.Float:
		return "float " + strconv.FormatFloat(float64(t), 'g', -1, 64)
	case etf.Binary:
		return "binary of " + plural(len(t), "byte")
	case etf.Bitstring:
		return "bitstring of " + plural(len(t.Bytes)*8-8+int(t.Bits), "bit")
	case etf.Tuple:
		return "tuple of arity " + strconv.Itoa(len(t))
	case etf.List:
		if len(t) == 0 {
			return "empty list"
		}
		return "list of " + plural(len(t), "element")
	case *etf.ImproperList:
		return "improper list"
	case etf.Map:
		return "map of " + plural(len(t), "pair")
	case *etf.Opaque:
		if t == nil {
			return "no term"
		}
		return t.Type().String()
	case etf.Term:
		return t.Type().String()
	}
	return "a non-term"
}

func plural(n int, unit string) string {
	s := strconv.Itoa(n) + " " + unit
	if n != 1 {
		s += "s"
	}
	return s
}

// quoteShort quotes s, cutting it at maxShown bytes on a rune boundary.
func quoteShort(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
