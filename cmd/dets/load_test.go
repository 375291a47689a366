package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
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

// TestLoadWriteFailureCount: load inserts by batches of 1000, and a batch
// whose write fails may be partly in the file. A file size limit (a
// shell's ulimit -f, which Go meets as EFBIG, as it meets ENOSPC on a full
// disk) stops loads of 5000 objects in the first batch and in later ones.
// The error must say how many objects were written before the failed
// batch and that the batch may be partly in the table, and a repair of
// the file must agree: every object written is there, none after the
// failed batch is.
func TestLoadWriteFailureCount(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	input := writeLoadInput(t, dir, 5000)
	for _, blocks := range []string{"200", "400", "800"} {
		path := filepath.Join(dir, "t"+blocks+".dets")
		r := runCommand(t, exec.Command("sh", "-c", `ulimit -f "$1" && shift && exec "$0" "$@"`, detsBin, blocks, "load", path, input))
		checkFailedLoad(t, "ulimit -f "+blocks, r, path, 5000)
	}
}

// writeLoadInput writes n objects {I, <<100 bytes>>}, I from 0, for load.
func writeLoadInput(t *testing.T, dir string, n int) string {
	t.Helper()
	var in strings.Builder
	for i := range n {
		in.WriteString("{" + itoa(i) + ", <<\"" + strings.Repeat("x", 100) + "\">>}.\n")
	}
	input := filepath.Join(dir, "in.terms")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return input
}

var failedLoadRE = regexp.MustCompile(`: (\d+) of (\d+) objects were written; writing the next (\d+) failed, and some of them may be in the table: `)

// checkFailedLoad checks the error of a load of the n objects of
// writeLoadInput into path that failed while writing, against what a
// repair of path then finds. Its numbers must be true: the objects before
// the failed batch are all there, those after it are not.
func checkFailedLoad(t *testing.T, what string, r result, path string, n int) {
	t.Helper()
	r.want(t, exitError, "load with", what)
	m := failedLoadRE.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("%s: stderr %q does not say how many objects were written and that the failed batch may be partly in", what, r.stderr)
	}
	written, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	next, _ := strconv.Atoi(m[3])
	if total != n || written%1000 != 0 || written >= n || next != min(1000, n-written) {
		t.Fatalf("%s: %d of %d objects written, the next %d failed: want %d in all and whole batches of 1000", what, written, total, next, n)
	}

	tab, err := dets.Open(path, dets.Options{Repair: dets.AutoRepair})
	if err != nil {
		t.Fatalf("%s: repairing the file: %v", what, err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	have := map[int]bool{}
	for _, o := range readAll(t, path) {
		k, ok := o.(etf.Tuple)[0].(etf.Int)
		if !ok || k < 0 || int(k) >= written+next {
			t.Fatalf("%s: the repaired table holds %s, beyond the failed batch %d..%d", what, etf.Format(o), written, written+next-1)
		}
		have[int(k)] = true
	}
	for i := range written {
		if !have[i] {
			t.Fatalf("%s: object %d is not in the repaired table, though the error says %d objects were written", what, i, written)
		}
	}
	t.Logf("%s: %d objects written before the failed batch, %d of its %d in the repaired table", what, written, len(have)-written, next)
}
