package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
)

// TestLoadJSONSurrogates: encoding/json reads a \u escape of a UTF-16
// surrogate without its pair, and bytes that are not UTF-8, as U+FFFD.
// load refuses them wherever a string becomes stored bytes or an atom
// (binaries, atoms, strings, map keys, improper tails, the mapping's own
// keys), naming the line, with exit 1 and nothing loaded. A proper pair
// loads as the UTF-8 of its character.
func TestLoadJSONSurrogates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	good := `{"tuple":[{"atom":"a"},1]}` + "\n"
	for _, line := range []string{
		`{"tuple":[{"atom":"b"},{"binary":"\ud800"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\udc00"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"x\uDBFFy"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\ud83d\u0041"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\ud83d\ud83d\ude00"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\ude00\ud83d"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\ud83d"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\ud83d\n"}]}`,
		`{"tuple":[{"atom":"\ud800"},1]}`,
		`{"tuple":[{"atom":"b"},{"string":"ab\udfff"}]}`,
		`{"tuple":[{"atom":"b"},{"map":[[{"binary":"\ud800"},1]]}]}`,
		`{"tuple":[{"atom":"b"},{"improper":[1],"tail":{"atom":"\ud800"}}]}`,
		`{"tuple":[{"atom":"b"},{"bin\ud800ary":"x"}]}`,
		`{"tuple":[{"atom":"b"},{"binary":"\\\ud800"}]}`,
		"{\"tuple\":[{\"atom\":\"b\"},{\"binary\":\"\xff\"}]}",
		"{\"tuple\":[{\"atom\":\"b\"},{\"binary\":\"\xed\xa0\x80\"}]}", // a surrogate in UTF-8
	} {
		r := runDetsIn(t, []byte(good+line+"\n"), "load", path)
		r.want(t, exitError, "load", line)
		if !strings.Contains(r.stderr, "stdin: line 2: ") || !strings.Contains(r.stderr, "nothing was loaded") ||
			!(strings.Contains(r.stderr, "surrogate without its pair") || strings.Contains(r.stderr, "is not UTF-8")) {
			t.Errorf("%s: stderr %q, want the line, the reason and nothing loaded", line, r.stderr)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s: the table was created", line)
		}
	}

	// Proper pairs, in either case, and escapes that only look like
	// surrogates (an escaped backslash, then text) load as written.
	in := `{"tuple":[{"binary":"\ud83d\ude00"},{"atom":"\uD83D\uDE00"},{"string":"a\ud83d\ude00"},` +
		`{"map":[[{"binary":"\udbff\udfff"},{"binary":"\\ud800"}]]},{"binary":"\u00e9\"\ud800\udc00"}]}` + "\n"
	r := runDetsIn(t, []byte(in), "load", path)
	r.want(t, 0, "load of proper surrogate pairs")
	want := etf.Tuple{
		etf.Binary("\U0001F600"),
		etf.Atom("\U0001F600"),
		etf.Str("a\U0001F600"),
		etf.Map{{Key: etf.Binary("\U0010FFFF"), Value: etf.Binary(`\ud800`)}},
		etf.Binary("é\"\U00010000"),
	}
	got := readAll(t, path)
	if len(got) != 1 || !etf.Equal(got[0], want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	if b := got[0].(etf.Tuple)[0].(etf.Binary); string(b) != "\xf0\x9f\x98\x80" {
		t.Fatalf("U+1F600 stored as % x", []byte(b))
	}
}
