package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	quiet := &cmdCtx{env: env{stderr: &buf}}
	p := quiet.newProgress("load", 10)
	p.Set(5) // a nil bar is a no-op
	p.Done()
	if buf.Len() != 0 {
		t.Fatalf("progress without a terminal wrote %q", buf.String())
	}

	tty := &cmdCtx{env: env{stderr: &buf, stderrTTY: true}}
	p = tty.newProgress("load", 200)
	p.Set(50)
	if s := buf.String(); !strings.Contains(s, "25%") || !strings.Contains(s, "50/200") || !strings.HasPrefix(s, "\r") {
		t.Errorf("bar at 50/200: %q", s)
	}
	p.Done()
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Errorf("Done does not clear the line: %q", buf.String())
	}
}
