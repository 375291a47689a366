//go:build !windows

package lockfile

import (
	"testing"
	"unsafe"
)

// TestSidecarSharesItsZ: a Target's Sidecar is its NUL-terminated form
// without the NUL, over the same bytes (the allocation newTarget saves).
func TestSidecarSharesItsZ(t *testing.T) {
	tg := newTarget("t.dets", "/d/t.dets")
	if tg.Sidecar != "/d/t.dets"+SidecarSuffix || string(tg.sidecarZ) != tg.Sidecar+"\x00" {
		t.Fatalf("Sidecar %q, sidecarZ %q", tg.Sidecar, tg.sidecarZ)
	}
	if unsafe.StringData(tg.Sidecar) != &tg.sidecarZ[0] {
		t.Fatal("Sidecar copies its bytes")
	}
	if string(tg.dataZ) != tg.Data+"\x00" {
		t.Fatalf("dataZ %q", tg.dataZ)
	}
	if stringBeforeNUL([]byte{0}) != "" || stringBeforeNUL(nil) != "" {
		t.Fatal("an empty NUL-terminated string is not empty")
	}
}
