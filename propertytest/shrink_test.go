package propertytest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"

	"github.com/godets/godets/dets"
)

// TestShrinksLyingSync runs the set property on a disk whose fsync lies:
// the property must fail, and gopter must shrink the failing sequence to at
// most three commands (e.g. Insert, Sync, Crash(synced-only)), which is what
// a CI failure then prints, and keep the failing crash image.
func TestShrinksLyingSync(t *testing.T) {
	setForTest(t, &lyingSync, true)
	seed := propSeed(t)
	setForTest(t, &evidenceDir, t.TempDir())
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = 100
	params.MaxShrinkCount = 1000
	var stats propStats
	res := commands.Prop(kindCommands(dets.Set, dets.OTP9, &stats)).Check(params)
	if res.Passed() {
		t.Fatalf("the property passed %d sequences on a disk whose fsync lies", res.Succeeded)
	}
	if len(res.Args) == 0 {
		t.Fatalf("no failing sequence reported (status %v, error %v)", res.Status, res.Error)
	}
	shrunk, orig := seqLen(res.Args[0].Arg), seqLen(res.Args[0].OrigArg)
	t.Logf("failing sequence shrunk from %d to %d commands in %d steps: %s", orig, shrunk, res.Args[0].Shrinks, res.Args[0].ArgFormatted)
	if shrunk > 3 {
		t.Fatalf("the shrunk failing sequence has %d commands, want at most 3: %s", shrunk, res.Args[0].ArgFormatted)
	}
	why := strings.Join(res.Labels, "; ")
	if res.Error != nil {
		why += res.Error.Error()
	}
	if _, err := os.Stat(filepath.Join(evidenceDir, "crash-image.dets")); err != nil && !strings.Contains(why, "the crash left no table file") {
		t.Fatalf("the failing crash image was not kept (%v), and the failure (%s) does not say there was none", err, why)
	}
}

// seqLen is the number of commands in one of gopter's command sequences
// (its type is unexported; the length of a slice field reads fine).
func seqLen(actions any) int {
	return reflect.ValueOf(actions).Elem().FieldByName("sequentialCommands").Len()
}

func setForTest[T any](t *testing.T, v *T, x T) {
	old := *v
	*v = x
	t.Cleanup(func() { *v = old })
}
