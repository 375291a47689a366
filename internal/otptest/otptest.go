// Package otptest runs Erlang code in a real `erl -noshell` for interop tests.
//
// Terms cross the boundary as term_to_binary bytes: the caller passes byte
// blobs in, the Erlang code sees them as the list In of binaries, and it must
// evaluate to a list of binaries, which come back as [][]byte. The package
// uses no godets code, so every package's tests can depend on it.
//
// When erl is missing the test is skipped, except under CI=true, where a
// missing erl is a failure: interop is the project's oracle.
package otptest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Timeout bounds one erl run.
var Timeout = 10 * time.Minute

// Runner runs Erlang code with one erl executable.
type Runner struct {
	erl string
}

// Erl returns a Runner, skipping t when erl is not installed (failing under
// CI=true).
func Erl(t testing.TB) *Runner {
	t.Helper()
	r, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("otptest: %v (interop tests must run under CI)", err)
		}
		t.Skipf("otptest: %v", err)
	}
	return r
}

// Find returns a Runner or an error when erl is not on PATH.
func Find() (*Runner, error) {
	p, err := exec.LookPath("erl")
	if err != nil {
		return nil, errors.New("erl not found on PATH; install OTP with apt-get install -y erlang-nox")
	}
	return &Runner{erl: p}, nil
}

// Path returns the erl executable.
func (r *Runner) Path() string { return r.erl }

// driver reads the code and inputs from the directory given as the plain
// argument, evaluates the code with In bound, and writes the result.
const driver = `
[Dir] = init:get_plain_arguments(),
Fail = fun(Fmt, Args) ->
    file:write_file(filename:join(Dir, "err"), unicode:characters_to_binary(io_lib:format(Fmt, Args))),
    halt(3)
end,
try
    {ok, Src} = file:read_file(filename:join(Dir, "code.erl")),
    Text = unicode:characters_to_list(Src),
    Toks = case erl_scan:string(Text ++ "\n.") of
        {ok, T, _} -> T;
        {error, SE, _} -> Fail("scan error: ~p", [SE])
    end,
    Exprs = case erl_parse:parse_exprs(Toks) of
        {ok, E} -> E;
        {error, PE} -> Fail("parse error: ~p", [PE])
    end,
    {ok, InBin} = file:read_file(filename:join(Dir, "in.bin")),
    In = binary_to_term(InBin),
    {value, V, _} = erl_eval:exprs(Exprs, erl_eval:add_binding('In', In, erl_eval:new_bindings())),
    ok = file:write_file(filename:join(Dir, "out.bin"), term_to_binary(V)),
    halt(0)
catch C:R:S -> Fail("~p:~tp~n~tp", [C, R, S])
end.
`

// Eval runs code and returns its result, failing t on any error with erl's
// own error text.
func (r *Runner) Eval(t testing.TB, code string, in ...[]byte) [][]byte {
	t.Helper()
	out, err := r.EvalErr(code, in...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// EvalErr runs code as Eval does and returns the error instead of failing.
func (r *Runner) EvalErr(code string, in ...[]byte) ([][]byte, error) {
	dir, err := os.MkdirTemp("", "otptest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd, err := r.prepare(dir, code, in)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	var outBuf bytes.Buffer
	c.Stdout, c.Stderr = &outBuf, &outBuf
	runErr := c.Run()
	if msg, err := os.ReadFile(filepath.Join(dir, "err")); err == nil {
		return nil, fmt.Errorf("otptest: erl error: %s\n%s", msg, tail(outBuf.String()))
	}
	if runErr != nil {
		return nil, fmt.Errorf("otptest: erl failed: %v\n%s", runErr, tail(outBuf.String()))
	}
	res, err := os.ReadFile(filepath.Join(dir, "out.bin"))
	if err != nil {
		return nil, fmt.Errorf("otptest: erl wrote no result: %v\n%s", err, tail(outBuf.String()))
	}
	return decodeBinaryList(res)
}

// Start starts code in the background, as Eval would run it, and returns the
// running command; the caller kills or waits for it. It is for crash tests
// that SIGKILL erl at a chosen moment. The caller removes dir.
func (r *Runner) Start(dir, code string, in ...[]byte) (*exec.Cmd, error) {
	cmd, err := r.prepare(dir, code, in)
	if err != nil {
		return nil, err
	}
	return cmd, cmd.Start()
}

func (r *Runner) prepare(dir, code string, in [][]byte) (*exec.Cmd, error) {
	if err := os.WriteFile(filepath.Join(dir, "code.erl"), []byte(code), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "in.bin"), encodeBinaryList(in), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(r.erl, "-noshell", "-noinput", "-eval", driver, "-extra", dir)
	cmd.Env = os.Environ()
	if os.Getenv("HOME") == "" {
		cmd.Env = append(cmd.Env, "HOME="+dir)
	}
	return cmd, nil
}

func tail(s string) string {
	const max = 4000
	if len(s) > max {
		return "..." + s[len(s)-max:]
	}
	return strings.TrimSpace(s)
}

// encodeBinaryList writes term_to_binary of a list of binaries.
func encodeBinaryList(bins [][]byte) []byte {
	b := []byte{131}
	if len(bins) > 0 {
		b = append(b, 108)
		b = binary.BigEndian.AppendUint32(b, uint32(len(bins)))
		for _, x := range bins {
			b = append(b, 109)
			b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
			b = append(b, x...)
		}
	}
	return append(b, 106)
}

// decodeBinaryList reads term_to_binary of a list of binaries.
func decodeBinaryList(b []byte) ([][]byte, error) {
	bad := func(why string) ([][]byte, error) {
		return nil, fmt.Errorf("otptest: the Erlang code must return a list of binaries: %s", why)
	}
	if len(b) < 2 || b[0] != 131 {
		return bad("no version byte")
	}
	b = b[1:]
	if b[0] == 106 && len(b) == 1 {
		return [][]byte{}, nil
	}
	if b[0] != 108 || len(b) < 5 {
		return bad(fmt.Sprintf("tag %d", b[0]))
	}
	n := binary.BigEndian.Uint32(b[1:5])
	b = b[5:]
	if uint64(n)*5 > uint64(len(b)) {
		return bad("length")
	}
	out := make([][]byte, 0, n)
	for range n {
		if len(b) < 5 || b[0] != 109 {
			return bad("an element is not a binary")
		}
		l := binary.BigEndian.Uint32(b[1:5])
		if uint64(l) > uint64(len(b)-5) {
			return bad("binary length")
		}
		out = append(out, b[5:5+l])
		b = b[5+l:]
	}
	if len(b) != 1 || b[0] != 106 {
		return bad("improper list")
	}
	return out, nil
}
