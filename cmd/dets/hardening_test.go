package main

import (
	"encoding/json"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// TestLibraryLogsStayOffStderr: a failed session cleanup makes exclusive
// log through slog; the command's stderr is still its one line. The file
// size limit (a shell's ulimit -f; Go ignores SIGXFSZ) makes both the
// load and the close fail. DETS_LOG=error brings the record back.
func TestLibraryLogsStayOffStderr(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	input := filepath.Join(dir, "in.terms")
	var in strings.Builder
	for i := range 3000 {
		in.WriteString("{" + itoa(i) + ", <<\"" + strings.Repeat("x", 100) + "\">>}.\n")
	}
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	limited := func(logEnv string) result {
		path := filepath.Join(dir, "t"+logEnv+".dets")
		cmd := exec.Command("sh", "-c", `ulimit -f 200 && exec "$0" "$@"`, detsBin, "load", path, input)
		cmd.Env = append(os.Environ(), "DETS_LOG="+logEnv)
		return runCommand(t, cmd)
	}
	r := limited("")
	r.want(t, exitError, "load under ulimit -f")
	if !strings.Contains(r.stderr, "file too large") || !strings.Contains(r.stderr, "then closing table") {
		t.Fatalf("stderr %q does not say that the load and the close failed (the test needs the close to fail too, so that exclusive logs)", r.stderr)
	}
	r = limited("error")
	if !strings.Contains(r.stderr, "session cleanup failed") || strings.Count(r.stderr, "\n") != 2 {
		t.Fatalf("DETS_LOG=error: stderr %q, want the library's record and the error line", r.stderr)
	}
}

func TestCliLogger(t *testing.T) {
	for level, enabled := range map[string]bool{"": false, "bogus": false, "debug": true, "INFO": true, "warn": true, "error": true} {
		if got := cliLogger(level, os.Stderr).Handler().Enabled(t.Context(), 8); got != enabled {
			t.Errorf("DETS_LOG=%q: errors enabled %v, want %v", level, got, enabled)
		}
	}
}

// TestCheckHelpOffersNoRepair: check refuses every repair mode, so its
// help does not offer them; --wait is still there.
func TestCheckHelpOffersNoRepair(t *testing.T) {
	r := must(t, "check", "--help")
	for _, bad := range []string{"--repair MODE", "auto (repair it", "force (always"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("check --help offers %q:\n%s", bad, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "--wait DURATION") {
		t.Errorf("check --help lacks --wait:\n%s", r.stdout)
	}
	// Other commands still document both.
	if r := must(t, "info", "--help"); !strings.Contains(r.stdout, "--repair MODE") {
		t.Errorf("info --help lacks --repair:\n%s", r.stdout)
	}
}

// TestWaitWithoutUnit: --wait 5 says that the unit is missing, not only
// "parse error".
func TestWaitWithoutUnit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	makeTable(t, path, dets.Options{}, tup("a", 1))
	r := runDets(t, "check", "--wait", "5", path)
	r.want(t, exitError, "check --wait 5")
	if !strings.Contains(r.stderr, "no unit") || !strings.Contains(r.stderr, "5s") || strings.Contains(r.stderr, "parse error") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = runDets(t, "info", "--wait", "soon", path)
	r.want(t, exitError, "info --wait soon")
	if !strings.Contains(r.stderr, "500ms") || strings.Contains(r.stderr, "parse error") {
		t.Errorf("stderr %q", r.stderr)
	}
	must(t, "check", "--wait", "1.5s", path)
}

// TestOneElement: a one-element tuple is "1 element".
func TestOneElement(t *testing.T) {
	dir := t.TempDir()
	r := runDetsIn(t, []byte("{a}.\n"), "load", "--keypos", "2", filepath.Join(dir, "new.dets"))
	r.want(t, exitError, "load --keypos 2")
	if !strings.Contains(r.stderr, "{a} has 1 element, fewer than keypos 2") {
		t.Errorf("stderr %q", r.stderr)
	}
	existing := filepath.Join(dir, "t.dets")
	makeTable(t, existing, dets.Options{KeyPos: 2}, tup("a", 1))
	r = runDetsIn(t, []byte("{b}.\n"), "load", existing)
	r.want(t, exitError, "load into keypos 2")
	if !strings.Contains(r.stderr, "{b} has 1 element, fewer than the table's keypos 2") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = runDetsIn(t, []byte("{b, 1}.\n"), "load", "--keypos", "3", filepath.Join(dir, "new2.dets"))
	if !strings.Contains(r.stderr, "has 2 elements") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestNeedsRepairSaysItOnce: a dirty file's message says "not closed
// properly" once, names the path once before the hint, and check does not
// suggest --repair, which it refuses.
func TestNeedsRepairSaysItOnce(t *testing.T) {
	dir := t.TempDir()
	dirty := filepath.Join(dir, "dirty.dets")
	makeDirty(t, dirty, []etf.Term{tup("a", 1)}, []etf.Term{tup("b", 2)})
	for _, c := range []string{"check", "info", "dump", "digest"} {
		r := runDets(t, c, dirty)
		r.want(t, exitNeedsRepair, c, dirty)
		want := "dets " + c + ": " + dirty + ": not closed properly (run 'dets repair " + dirty + "'"
		if !strings.HasPrefix(r.stderr, want) {
			t.Errorf("dets %s: stderr %q, want it to start %q", c, r.stderr, want)
		}
		if n := strings.Count(r.stderr, "closed properly"); n != 1 {
			t.Errorf("dets %s: stderr says 'closed properly' %d times: %q", c, n, r.stderr)
		}
		if strings.Contains(r.stderr, "needs repair") {
			t.Errorf("dets %s: stderr %q repeats itself", c, r.stderr)
		}
		if (c == "check") == strings.Contains(r.stderr, "--repair auto") {
			t.Errorf("dets %s: stderr %q (check must not suggest --repair, the others may)", c, r.stderr)
		}
	}
}

// TestVersion: version and --version print the same line, with the module
// and the Go version; --json has the fields.
func TestVersion(t *testing.T) {
	r := must(t, "version")
	if r2 := must(t, "--version"); r2.stdout != r.stdout {
		t.Errorf("--version %q differs from version %q", r2.stdout, r.stdout)
	}
	if !strings.HasPrefix(r.stdout, "dets github.com/godets/godets ") || !strings.HasSuffix(r.stdout, " "+runtime.Version()+"\n") {
		t.Errorf("version: %q", r.stdout)
	}
	var v buildVersion
	js := must(t, "version", "--json")
	if err := json.Unmarshal([]byte(js.stdout), &v); err != nil || v.Module != "github.com/godets/godets" || v.Go != runtime.Version() {
		t.Errorf("version --json: %q, %v", js.stdout, err)
	}
	runDets(t, "version", "extra").want(t, exitError, "version extra")
}

func TestVersionFromBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/godets/godets", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "dets github.com/godets/godets v1.2.3 (revision 0123abcd, 2026-01-02T03:04:05Z, modified) " + runtime.Version()
	if got := versionFrom(info).String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := versionFrom(nil).String(); got != "dets (unknown version) (revision unknown) "+runtime.Version() {
		t.Errorf("without build info: %q", got)
	}
}

// TestVersionVCS: a binary built with VCS stamping reports the commit it
// was built from, and 'go run' works too. The source is this work tree
// (tracked and untracked files) committed afresh in a scratch repository,
// so the test does not depend on what is committed here.
func TestVersionVCS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice more")
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	top := git(".", "rev-parse", "--show-toplevel")
	src := filepath.Join(t.TempDir(), "src")
	for _, f := range strings.Split(git(top, "ls-files", "-co", "--exclude-standard"), "\n") {
		b, err := os.ReadFile(filepath.Join(top, f))
		if err != nil {
			continue // deleted in the work tree
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(src, "init", "-q")
	git(src, "add", "-A")
	git(src, "commit", "-q", "-m", "snapshot")
	head := git(src, "rev-parse", "HEAD")

	bin := filepath.Join(t.TempDir(), "dets")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/dets")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var v buildVersion
	if err != nil || json.Unmarshal(out, &v) != nil {
		t.Fatalf("version --json: %q, %v", out, err)
	}
	if v.Revision != head || v.Modified || v.Time == "" {
		t.Errorf("version of a build at %s: %+v", head, v)
	}
	if line, err := exec.Command(bin, "version").Output(); err != nil || !strings.Contains(string(line), "(revision "+head+", ") {
		t.Errorf("version: %q, %v", line, err)
	}
	run := exec.Command("go", "run", "./cmd/dets", "version")
	run.Dir = src
	if out, err := run.Output(); err != nil || !strings.HasPrefix(string(out), "dets github.com/godets/godets ") {
		t.Errorf("go run ./cmd/dets version: %q, %v", out, err)
	}
}

// jsonErrorLine parses a JSON error report.
func jsonErrorLine(t *testing.T, r result) jsonErrorBody {
	t.Helper()
	checkErrorLine(t, r.stderr)
	var e jsonError
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil {
		t.Fatalf("stderr is not a JSON error: %q: %v", r.stderr, err)
	}
	if e.Error.ExitCode != r.code || e.Error.Message == "" {
		t.Errorf("JSON error %+v for exit %d", e.Error, r.code)
	}
	return e.Error
}

// TestJSONErrors: with --json (info) or --format json (dump) a failure is
// a JSON object on stderr; without, the plain line.
func TestJSONErrors(t *testing.T) {
	dir := t.TempDir()
	dirty := filepath.Join(dir, "dirty.dets")
	makeDirty(t, dirty, []etf.Term{tup("a", 1)}, []etf.Term{tup("b", 2)})
	busy := filepath.Join(dir, "busy.dets")
	makeTable(t, busy, dets.Options{}, tup("a", 1))
	holdLock(t, busy)
	missing := filepath.Join(dir, "missing.dets")
	for _, c := range []struct {
		args []string
		code string
		exit int
	}{
		{[]string{"info", "--json", dirty}, "needs_repair", exitNeedsRepair},
		{[]string{"info", dirty, "--json"}, "needs_repair", exitNeedsRepair},
		{[]string{"dump", "--format", "json", dirty}, "needs_repair", exitNeedsRepair},
		{[]string{"info", "--json", busy}, "busy", exitBusy},
		{[]string{"dump", "--format=json", "--wait", "50ms", busy}, "timed_out", exitBusy},
		{[]string{"info", "--json", missing}, "error", exitError},
		{[]string{"info", "--json", "--wait", "5", missing}, "usage", exitError},
		{[]string{"info", "--wait", "5", "--json", missing}, "usage", exitError},
		{[]string{"dump", "--bogus", "--format", "json", missing}, "usage", exitError},
		{[]string{"version", "--json", "extra"}, "usage", exitError},
	} {
		r := runDets(t, c.args...)
		if r.code != c.exit {
			t.Fatalf("dets %v: exit %d, want %d (%q)", c.args, r.code, c.exit, r.stderr)
		}
		e := jsonErrorLine(t, r)
		if e.Code != c.code || e.Command != c.args[0] {
			t.Errorf("dets %v: %+v, want code %s", c.args, e, c.code)
		}
		if strings.HasPrefix(e.Message, "dets ") {
			t.Errorf("dets %v: message %q keeps the command prefix", c.args, e.Message)
		}
	}
	for _, args := range [][]string{{"info", dirty}, {"info", "--wait", "5", dirty}, {"dump", "--format", "erlang", dirty}, {"load", "--format", "json", dirty}} {
		r := runDets(t, args...)
		if r.code == 0 || strings.HasPrefix(r.stderr, "{") {
			t.Errorf("dets %v: exit %d, stderr %q: want a plain error line", args, r.code, r.stderr)
		}
	}
}

// trickyObjects are terms whose JSON form needs every rule of the mapping.
func trickyObjects() []etf.Term {
	huge, _ := new(big.Int).SetString("-98765432109876543210987654321", 10)
	pid := &etf.Opaque{Raw: []byte{103, 100, 0, 13, 'n', 'o', 'n', 'o', 'd', 'e', '@', 'n', 'o', 'h', 'o', 's', 't', 0, 0, 0, 1, 0, 0, 0, 0, 0}}
	return append(sampleObjects(),
		tup("nonutf8", []byte{0xff, 0xfe, 'a', 0x80}, []byte{0xc3}),
		tup("floats2", etf.Float(math.Copysign(0, -1)), etf.Float(5e-324), etf.Float(math.MaxFloat64), etf.Float(-1.0)),
		tup("bigs2", etf.NewBigInt(huge), etf.NewUint(math.MaxUint64), etf.Int(math.MinInt64)),
		tup("atoms", etf.Atom("true"), etf.Atom("false"), etf.Atom("null"), etf.Atom("a\"b\\c"), etf.Atom("ünïcødé")),
		tup("nested", etf.Tuple{etf.List{etf.Map{{Key: etf.Tuple{etf.Int(1)}, Value: etf.List{etf.Binary{0xff}}}}}, etf.NewImproperList(etf.Binary("t"), etf.Tuple{})}),
		tup("escapes", etf.Str("tab\tnl\nquote\"bs\\"), etf.Binary("\u2028\x00\x7f")),
		tup("bits2", etf.Bitstring{Bytes: []byte{0xff, 0x80}, Bits: 1}),
		tup("pid", pid),
		tup(etf.Map{{Key: etf.Atom("map"), Value: etf.Atom("key")}}, 1),
	)
}

// TestDumpJSONLoadRoundTrip: dump --format json | load gives a table with
// the same digest, for all three kinds.
func TestDumpJSONLoadRoundTrip(t *testing.T) {
	objs := trickyObjects()
	for _, kind := range []dets.Kind{dets.Set, dets.Bag, dets.DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src.dets")
			all := objs
			if kind != dets.Set {
				all = append(append(all, tup("atom", "second")), objs[0])
			}
			makeTable(t, src, dets.Options{Kind: kind}, all...)
			js := must(t, "dump", "--format", "json", src)
			for _, syntax := range [][]string{nil, {"--syntax", "json"}} {
				dst := filepath.Join(dir, "dst"+strings.Join(syntax, "")+".dets")
				args := append(append([]string{"load", "--kind", kind.String()}, syntax...), dst)
				runDetsIn(t, []byte(js.stdout), args...).want(t, 0, args...)
				sameMultiset(t, readAll(t, dst), readAll(t, src))
				if a, b := must(t, "digest", src).stdout, must(t, "digest", dst).stdout; a != b {
					t.Errorf("%v: digest %s after the JSON round trip, want %s", syntax, b, a)
				}
				if again := must(t, "dump", "--format", "json", dst).stdout; len(again) != len(js.stdout) {
					t.Errorf("%v: the second JSON dump has %d bytes, the first %d", syntax, len(again), len(js.stdout))
				}
			}
		})
	}
}

// TestLoadNewSetRefusesRepeatedKeys: a dump of a bag loaded into a new
// file without --kind would make a set and keep one object a key, exiting
// 0 with objects lost. It is refused before the file is created, in both
// dump formats, and loads whole with --kind; an existing set still takes
// the input by its own rule.
func TestLoadNewSetRefusesRepeatedKeys(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bag.dets")
	makeTable(t, src, dets.Options{Kind: dets.Bag}, tup("a", 1), tup("a", 2), tup("b", 3), tup("a", 4))
	for _, format := range []string{"erlang", "json"} {
		dump := must(t, "dump", "--format", format, src).stdout
		dst := filepath.Join(dir, format+".dets")
		r := runDetsIn(t, []byte(dump), "load", dst)
		r.want(t, exitError, "load", dst)
		if !strings.Contains(r.stderr, "--kind bag") || !strings.Contains(r.stderr, "nothing was loaded") {
			t.Errorf("%s: %q does not say what to do", format, r.stderr)
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Fatalf("%s: the refused load created %s (%v)", format, dst, err)
		}
		runDetsIn(t, []byte(dump), "load", "--kind", "bag", dst).want(t, 0, "load --kind bag")
		if a, b := must(t, "digest", src).stdout, must(t, "digest", dst).stdout; a != b {
			t.Errorf("%s: digest %s after load --kind bag, want %s", format, b, a)
		}
		set := filepath.Join(dir, format+"-set.dets")
		makeTable(t, set, dets.Options{}, tup("z", 0))
		runDetsIn(t, []byte(dump), "load", set).want(t, 0, "load into an existing set")
	}
}

// TestLoadJSONErrors: bad JSON lines are refused with their line number
// and nothing is loaded; --syntax erlang reads JSON as Erlang (and fails).
func TestLoadJSONErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	good := `{"tuple":[{"atom":"a"},1]}` + "\n"
	for _, c := range []struct {
		line, msg string
	}{
		{`{"tuple":[{"atom":"b"},1.5]}`, "floats are written"},
		{`{"tuple":[{"atom":"b"},"text"]}`, "bare string"},
		{`{"tuple":[{"atom":"b"},null]}`, "null"},
		{`{"tuple":[{"atom":"b"},{"what":1}]}`, "keys {what}"},
		{`{"tuple":[{"atom":"b"},{"base64":"!!"}]}`, "bad base64"},
		{`{"tuple":[{"atom":"b"},{"bitstring":"/w==","bits":9}]}`, `needs "bits"`},
		{`{"tuple":[{"atom":"b"},{"bitstring":"/w==","bits":3}]}`, "low bits"},
		{`{"tuple":[{"atom":"b"},{"map":[[1,2],[1,3]]}]}`, "twice"},
		{`{"tuple":[{"atom":"b"},{"etf":"AAAA"}]}`, `{"etf": ...}`},
		{`{"tuple":[{"atom":"b"}]} {}`, "more than one JSON value"},
		{`{"tuple":[{"atom":"b"},`, "not JSON"},
		{`[1,2]`, "is not a tuple"},
	} {
		r := runDetsIn(t, []byte(good+c.line+"\n"), "load", path)
		r.want(t, exitError, "load", c.line)
		if !strings.Contains(r.stderr, c.msg) || !strings.Contains(r.stderr, "stdin") || !strings.Contains(r.stderr, "2") || !strings.Contains(r.stderr, "nothing was loaded") {
			t.Errorf("%s: stderr %q, want %q, the line and nothing loaded", c.line, r.stderr, c.msg)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s: the table was created", c.line)
		}
	}
	r := runDetsIn(t, []byte(good), "load", "--syntax", "erlang", path)
	r.want(t, exitError, "load --syntax erlang")
	runDetsIn(t, []byte(good), "load", "--syntax", "yaml", path).want(t, exitError, "load --syntax yaml")
	// A first line that opens a JSON object but is not valid JSON is
	// reported as bad JSON (it was read as Erlang: "expected '}', found
	// ':'").
	for _, c := range []struct{ line, msg string }{
		{`{"tuple":[{"atom":"b"}]} {}`, "more than one JSON value"},
		{`{"tuple":[{"atom":"b"},`, "not JSON"},
	} {
		r := runDetsIn(t, []byte(c.line+"\n"), "load", path)
		r.want(t, exitError, "load", c.line)
		if !strings.Contains(r.stderr, c.msg) || strings.Contains(r.stderr, "found ':'") {
			t.Errorf("first line %s: stderr %q, want %q", c.line, r.stderr, c.msg)
		}
	}
	// Erlang text that starts like JSON is still Erlang.
	r = runDetsIn(t, []byte("{\"tuple\", 1}.\n{\"one\"}.\n"), "load", path)
	r.want(t, 0, "load of Erlang text")
	if got := readAll(t, path); len(got) != 2 || !etf.Equal(got[0], etf.Tuple{etf.Str("tuple"), etf.Int(1)}) {
		t.Fatalf("loaded %v", got)
	}
}
