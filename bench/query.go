package bench

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/godets/godets/etf"
)

//go:embed query_driver.escript
var queryDriverSource []byte

// NewQueryOTP writes the query driver (query_driver.escript) into dir and
// returns a runner for it.
func NewQueryOTP(dir string) (*OTP, error) {
	p, err := exec.LookPath("escript")
	if err != nil {
		return nil, ErrNoErlang
	}
	script := filepath.Join(dir, "query_driver.escript")
	if err := os.WriteFile(script, queryDriverSource, 0o644); err != nil {
		return nil, err
	}
	return &OTP{escript: p, script: script}, nil
}

// SelectSpecText is the select of the query benchmark, in Erlang syntax:
// the objects whose value's byte 3 (the low byte of i) is 7, a non-key
// pattern with a guard on a byte of the value. query_driver.escript runs
// the same spec.
const SelectSpecText = `[{{'_', '$1'}, [{'=:=', {binary_part, '$1', 3, 1}, <<7>>}], ['$_']}]`

// SelectMatches is how many of the objects 0..n-1 the select returns.
func SelectMatches(n int) int { return (n + 256 - 8) / 256 }

// SelectSpec returns SelectSpecText parsed.
func SelectSpec() etf.Term {
	t, err := etf.Parse(SelectSpecText)
	if err != nil {
		panic("bench: SelectSpecText does not parse: " + err.Error())
	}
	return t
}
