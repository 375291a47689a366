package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// complete runs the bash completion function on a command line whose last
// word is being completed and returns the candidates.
func complete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	line := "source " + script + "; COMP_WORDS=("
	for _, w := range words {
		line += "'" + w + "' "
	}
	line += ")\nCOMP_CWORD=" + itoa(len(words)-1) + "\n_dets\nprintf '%s\\n' \"${COMPREPLY[@]}\""
	out, err := exec.Command("bash", "-c", line).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

func TestCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "dets.bash")
	if err := os.WriteFile(script, []byte(must(t, "completion", "bash").stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		words []string
		want  string
	}{
		{[]string{"dets", "sta"}, "stats"},
		{[]string{"dets", "comp"}, "compact completion"},
		{[]string{"dets", "get", "--f"}, "--format"},
		{[]string{"dets", "keys", "--c"}, "--count"},
		{[]string{"dets", "compact", "--d"}, "--dry-run"},
		{[]string{"dets", "dump", "--format", ""}, "erlang json"},
		{[]string{"dets", "load", "--format", ""}, "otp9 native"},
		{[]string{"dets", "repair", "--kind", "b"}, "bag"},
		{[]string{"dets", "completion", ""}, "bash zsh"},
	}
	for _, c := range cases {
		if got := strings.Join(complete(t, script, c.words...), " "); got != c.want {
			t.Errorf("completing %q: %q, want %q", c.words, got, c.want)
		}
	}
	// Every visible command and every flag of its help is offered.
	all := strings.Join(complete(t, script, "dets", ""), " ")
	for _, c := range commands {
		if c.hidden != strings.Contains(all, c.name) {
			continue
		}
		t.Errorf("command %s: hidden %v, offered %q", c.name, c.hidden, all)
	}
	zsh := must(t, "completion", "zsh").stdout
	if !strings.HasPrefix(zsh, "#compdef dets") || !strings.Contains(zsh, "'--dry-run[]'") {
		t.Errorf("zsh completion:\n%s", zsh)
	}
	if path, err := exec.LookPath("zsh"); err == nil {
		if out, err := exec.Command(path, "-n", "-c", zsh).CombinedOutput(); err != nil {
			t.Errorf("zsh -n: %v: %s", err, out)
		}
	}
	r := runDets(t, "completion", "fish")
	r.want(t, exitError, "completion fish")
}
