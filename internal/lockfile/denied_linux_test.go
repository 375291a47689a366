package lockfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// Behaviour 35 in a directory the process may not write: the sidecar's
// creation is denied and the error says so (EACCES). The read-only retry
// that follows a denial, meant for another user's existing sidecar, found
// no sidecar and its ENOENT replaced the denial. Root is not denied, so
// as root the test runs a copy of this binary as nobody.
func TestSidecarCreateDenied(t *testing.T) {
	if os.Getenv(testutil.EmulatorEnv) != "" {
		t.Skip("the child runs as another user, which the emulator's command line does not carry")
	}
	top := t.TempDir()
	dir := filepath.Join(top, "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.dets")
	var out string
	if os.Geteuid() != 0 {
		_, err := Acquire(path, Options{})
		if err == nil {
			t.Skip("this user may write a 0555 directory")
		}
		if !os.IsPermission(err) || os.IsNotExist(err) {
			t.Fatalf("want a permission error, got %v", err)
		}
		return
	}
	// A copy of this binary that nobody may run, in directories nobody
	// may enter.
	for _, d := range []string{filepath.Dir(top), top} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(top, "child.test")
	testutil.CopyFile(t, os.Args[0], bin, 0o755)
	cmd := testutil.Command("acquire", childPathEnv+"="+path)
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	b, err := cmd.Output()
	out = strings.TrimSpace(string(b))
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Skipf("cannot run a child as nobody: %v", err)
		}
		t.Fatalf("child: %v (%s)", err, out)
	}
	if !strings.HasPrefix(out, "error eacces=true enoent=false") {
		t.Fatalf("as nobody in a 0555 directory: %q, want a permission error", out)
	}
	if _, err := os.Lstat(path + SidecarSuffix); !os.IsNotExist(err) {
		t.Fatalf("a sidecar exists: %v", err)
	}
}
