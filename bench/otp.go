package bench

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed otp_driver.escript
var driverSource []byte

// ErrNoErlang: escript (from Erlang/OTP) is not on PATH.
var ErrNoErlang = errors.New("bench: escript not found on PATH; install OTP with apt-get install -y erlang-nox")

// OTP runs otp_driver.escript with real Erlang/OTP.
type OTP struct {
	escript string
	script  string
}

// NewOTP writes the driver into dir and returns a runner.
func NewOTP(dir string) (*OTP, error) {
	p, err := exec.LookPath("escript")
	if err != nil {
		return nil, ErrNoErlang
	}
	script := filepath.Join(dir, "otp_driver.escript")
	if err := os.WriteFile(script, driverSource, 0o644); err != nil {
		return nil, err
	}
	return &OTP{escript: p, script: script}, nil
}

// Result is one "RESULT key=value ..." line of the driver.
type Result map[string]string

// Int returns the integer field k, or -1 when absent or malformed.
func (r Result) Int(k string) int64 {
	v, err := strconv.ParseInt(r[k], 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// Run runs the driver with args and returns its results by op.
func (o *OTP) Run(timeout time.Duration, args ...string) (map[string]Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.escript, append([]string{o.script}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bench: escript %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()+out.String()))
	}
	res := map[string]Result{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "RESULT" {
			continue
		}
		r := Result{}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			r[k] = v
		}
		res[r["op"]] = r
	}
	return res, nil
}
