package doccheck

import (
	"bufio"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The citation forms the code and docs use: "docs/locking.md §7",
// "format-otp9.md §6.3", "(§4.1 steps 3-5)", and a document named alone.
// A bare §n cites the document named before it on the same line, or else
// the document the file is written against (defaultDoc).
var (
	docName    = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])((?:docs/)?[a-z0-9-]+\.md)\b`)
	sectionRef = regexp.MustCompile(`§\s?(\d+(?:\.\d+)*)`)
	headingNum = regexp.MustCompile(`^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s`)
	mdLink     = regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)
)

// repoRoot is two levels up from this package.
const repoRoot = "../.."

// skipDirs are not documentation or code of the project: recorded
// benchmark output and VCS data.
var skipDirs = []string{".git", "bench/results"}

// defaultDoc is the document a bare § in file p (slash-separated, from the
// root) refers to when its line names none: a document cites its own
// sections; the native format's code cites format-native.md; the rest of
// dets cites format-otp9.md (dets/doc.go says so); the lock protocol's
// code cites locking.md.
func defaultDoc(p string) string {
	base := path.Base(p)
	switch {
	case strings.HasPrefix(p, "docs/") && strings.HasSuffix(p, ".md"):
		return p
	case strings.Contains(base, "native"):
		return "docs/format-native.md"
	case strings.HasPrefix(p, "dets/"):
		return "docs/format-otp9.md"
	case strings.HasPrefix(p, "exclusive/"), strings.HasPrefix(p, "internal/lockfile/"):
		return "docs/locking.md"
	}
	return ""
}

// sections returns the numbered headings of a Markdown file ("4", "4.1").
func sections(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if m := headingNum.FindStringSubmatch(line); m != nil && !inFence {
			out[m[1]] = true
		}
	}
	return out
}

// resolveDoc maps a cited name to a repository path: one under docs/ as
// is, a bare name to the file of that name in docs/ when there is one,
// else relative to the citing file.
func resolveDoc(from, name string) string {
	if strings.HasPrefix(name, "docs/") {
		return name
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "docs", name)); err == nil {
		return "docs/" + name
	}
	return path.Join(path.Dir(from), name)
}

type citation struct {
	file string // where it stands
	line int
	doc  string // the document cited, from the root
	sec  string // "" for the document alone
}

// citationsIn lists the citations in one file.
func citationsIn(t *testing.T, rel string) []citation {
	f, err := os.Open(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []citation
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		docs := docName.FindAllStringSubmatchIndex(line, -1)
		for _, d := range docs {
			name := line[d[2]:d[3]]
			if !strings.HasPrefix(name, "docs/") && !knownBare(name) {
				continue // a .md name that is not one of ours (README.md of a peer project, and the like)
			}
			out = append(out, citation{rel, n, resolveDoc(rel, name), ""})
		}
		if strings.HasSuffix(rel, ".md") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				if target := m[1]; !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:") {
					out = append(out, citation{rel, n, path.Join(path.Dir(rel), target), ""})
				}
			}
		}
		out = append(out, sectionsCited(rel, n, line, docs)...)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return out
}

// sectionsCited returns the § citations of one line; docs are the
// document names on it (docName matches). A § belongs to a document named
// just before it ("docs/locking.md §7", "format-otp9.md, §6.3"), to the
// document of the § before it in a list ("§4.2, §5.3"), or to one named
// just after it ("§11.1 of docs/format-native.md"), to the last one named
// before it when "its" points back; else to defaultDoc.
func sectionsCited(rel string, n int, line string, docs [][]int) []citation {
	var out []citation
	prevEnd, prevDoc := -1, ""
	for _, s := range sectionRef.FindAllStringSubmatchIndex(line, -1) {
		doc := ""
		for _, d := range docs {
			if d[1] <= s[0] && adjoining.MatchString(line[d[1]:s[0]]) {
				doc = resolveDoc(rel, line[d[2]:d[3]])
			}
		}
		if doc == "" && prevDoc != "" && listed.MatchString(line[prevEnd:s[0]]) {
			doc = prevDoc
		}
		if doc == "" && possessive.MatchString(line[:s[0]]) { // "§12 of a document, ... in its §16"
			for _, d := range docs {
				if d[1] <= s[0] {
					doc = resolveDoc(rel, line[d[2]:d[3]])
				}
			}
		}
		if m := namedAfter.FindStringSubmatch(line[s[1]:]); doc == "" && m != nil {
			doc = resolveDoc(rel, m[1])
		}
		if doc == "" {
			doc = defaultDoc(rel)
		}
		if doc == "" {
			continue // code outside the packages a document is written for, naming none
		}
		out = append(out, citation{rel, n, doc, line[s[2]:s[3]]})
		prevEnd, prevDoc = s[1], doc
	}
	return out
}

var (
	adjoining  = regexp.MustCompile(`^[\s,(]*$`)
	possessive = regexp.MustCompile(`\bits\s*$`)
	listed     = regexp.MustCompile(`^[\s,;()]*(?:and|or|to)?[\s,;()]*$`)
	namedAfter = regexp.MustCompile(`^(?:'s [a-z ]+?)?\s+(?:of|in)\s+(?:the\s+)?((?:docs/)?[a-z0-9-]+\.md)\b`)
)

// oldSpecName is the otp9 specification's name before it was shipped as
// docs/format-otp9.md; a citation of it is dangling.
const oldSpecName = "otp-dets-format" + ".md"

// knownBare are the document names cited without docs/ in front.
func knownBare(name string) bool {
	return slices.Contains([]string{"format-otp9.md", "format-native.md", "reliability.md", "locking.md",
		"repair.md", "cli.md", "design.md", oldSpecName}, name)
}

// TestCitationsResolve: every document cited exists, and every section
// cited is a numbered heading of its document.
func TestCitationsResolve(t *testing.T) {
	secs := map[string]map[string]bool{}
	count := 0
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, repoRoot+string(filepath.Separator)))
		if d.IsDir() {
			if slices.Contains(skipDirs, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := path.Ext(rel); ext != ".go" && ext != ".md" && ext != ".sh" && !strings.HasPrefix(rel, ".ci/") {
			return nil
		}
		for _, c := range citationsIn(t, rel) {
			count++
			full := filepath.Join(repoRoot, filepath.FromSlash(c.doc))
			if _, err := os.Stat(full); err != nil {
				t.Errorf("%s:%d: cites %s, which is not in the repository", c.file, c.line, c.doc)
				continue
			}
			if c.sec == "" {
				continue
			}
			if secs[c.doc] == nil {
				secs[c.doc] = sections(t, full)
			}
			if !secs[c.doc][c.sec] {
				t.Errorf("%s:%d: cites %s §%s, which has no such section", c.file, c.line, c.doc, c.sec)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count < 100 {
		t.Fatalf("found only %d citations: the scan is broken", count)
	}
	t.Logf("%d citations checked", count)
}

// TestSectionsCited pins which document each form of § citation goes to.
func TestSectionsCited(t *testing.T) {
	cases := []struct {
		file, line string
		want       []string // doc §sec, in order
	}{
		{"dets/format.go", "checkHeader applies the tests (§4.4).", []string{"docs/format-otp9.md §4.4"}},
		{"dets/native_log.go", "the log (§10.2, §10.3)", []string{"docs/format-native.md §10.2", "docs/format-native.md §10.3"}},
		{"dets/open.go", "see docs/locking.md §7 and §8", []string{"docs/locking.md §7", "docs/locking.md §8"}},
		{"kinds/x.go", "(§11.1 of docs/format-native.md)", []string{"docs/format-native.md §11.1"}},
		{"docs/format-native.md", "otp9's table (docs/format-otp9.md §10) holds, with §11.1 meaning", []string{"docs/format-otp9.md §10", "docs/format-native.md §11.1"}},
		{"docs/repair.md", "docs/format-native.md §12, built in its §16", []string{"docs/format-native.md §12", "docs/format-native.md §16"}},
		{"kinds/x.go", "a § alone (§3) outside the documented packages", nil},
	}
	for _, c := range cases {
		var got []string
		for _, ci := range sectionsCited(c.file, 1, c.line, docName.FindAllStringSubmatchIndex(c.line, -1)) {
			got = append(got, ci.doc+" §"+ci.sec)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q cites %q, want %q", c.file, c.line, got, c.want)
		}
	}
}
