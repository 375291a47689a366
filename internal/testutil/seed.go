// Package testutil is the test kit shared by godets's test packages: one
// seed for randomized tests (Seed) and one way to re-execute the test binary
// as a child process with a role (Command, StartChild, RunChildRole).
//
// It imports only the standard library, so that the internal tests of
// packages dets depends on (etf, etf/matchspec) can use it too. The helpers
// that need a table (MemFS, OpenT) are in internal/testutil/tabletest.
package testutil

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// SeedFlag and SeedEnv name the one flag and the one environment variable
// that set the seed of every randomized test: go test ./pkg -seed=N, or
// GODETS_SEED=N go test ./pkg (the flag must follow the package path).
const (
	SeedFlag = "seed"
	SeedEnv  = "GODETS_SEED"
)

// seedValue is a flag that takes a signed or an unsigned 64-bit decimal:
// seeds printed by older uint64 helpers replay unchanged.
type seedValue struct{ v int64 }

func (s *seedValue) String() string {
	if s == nil {
		return "0"
	}
	return strconv.FormatInt(s.v, 10)
}

func (s *seedValue) Set(text string) error {
	v, err := parseSeed(text)
	if err != nil {
		return err
	}
	s.v = v
	return nil
}

// parseSeed reads a decimal seed, signed or unsigned; an unsigned one past
// MaxInt64 keeps its 64 bits.
func parseSeed(text string) (int64, error) {
	if v, err := strconv.ParseInt(text, 10, 64); err == nil {
		return v, nil
	}
	u, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("seed %q is not a 64-bit decimal integer", text)
	}
	return int64(u), nil
}

var seedFlag = new(seedValue)

func init() {
	flag.Var(seedFlag, SeedFlag, "seed of the randomized tests (0: $"+SeedEnv+", else random; logged by each test)")
}

// alias is an older per-package seed flag and environment variable.
type alias struct {
	flag *seedValue
	name string
	env  string
}

var (
	aliasMu sync.Mutex
	aliases []alias
)

// SeedAlias keeps an older seed flag and environment variable of a package
// working, so that seeds in old CI logs and notes still replay. Call it in
// a package-level var declaration of the test package (flags must exist
// before go test parses them); either name may be empty. The canonical
// -seed and GODETS_SEED win over every alias.
func SeedAlias(flagName, envName string) struct{} {
	a := alias{name: flagName, env: envName}
	if flagName != "" {
		a.flag = new(seedValue)
		flag.Var(a.flag, flagName, "old name of -"+SeedFlag+" (kept so old logs replay)")
	}
	aliasMu.Lock()
	aliases = append(aliases, a)
	aliasMu.Unlock()
	return struct{}{}
}

// Seed returns the seed of a randomized test and logs it with the way to
// replay it. The seed comes from -seed, else an alias flag, else
// GODETS_SEED, else an alias variable, else it is random; zero means
// unset. A malformed environment value fails the test.
func Seed(t testing.TB) int64 {
	t.Helper()
	seed, err := chosenSeed()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if seed == 0 {
		seed = int64(rand.Uint64()>>1 | 1)
	}
	t.Logf("seed %d (replay: go test -count=1 -run '^%s$' %s -%s=%d, or %s=%d)", seed, t.Name(), packageDir(), SeedFlag, seed, SeedEnv, seed)
	return seed
}

// packageDir is the tested package's directory relative to the module root
// (go test runs a test binary in its package's directory), for the replay
// line; "." when the root is not found.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(dir, wd); err == nil && rel != "." {
				return "./" + filepath.ToSlash(rel)
			}
			return "."
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}

// chosenSeed is the seed that flags and environment ask for, 0 if none.
func chosenSeed() (int64, error) {
	if seedFlag.v != 0 {
		return seedFlag.v, nil
	}
	aliasMu.Lock()
	defer aliasMu.Unlock()
	for _, a := range aliases {
		if a.flag != nil && a.flag.v != 0 {
			return a.flag.v, nil
		}
	}
	envs := []string{SeedEnv}
	for _, a := range aliases {
		if a.env != "" {
			envs = append(envs, a.env)
		}
	}
	for _, name := range envs {
		text := os.Getenv(name)
		if text == "" {
			continue
		}
		v, err := parseSeed(text)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", name, err)
		}
		if v != 0 {
			return v, nil
		}
	}
	return 0, nil
}
