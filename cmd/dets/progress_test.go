package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	quiet := &cmdCtx{env: env{stderr: &buf}}
	p := quiet.newProgress("load", 10)
	p.Set(5) // a nil bar is a no-op
	p.SetTotal(20)
	p.Done()
	if buf.Len() != 0 {
		t.Fatalf("progress without a terminal wrote %q", buf.String())
	}

	tty := &cmdCtx{env: env{stderr: &buf, stderrTTY: true}}
	p = tty.newProgress("load", 200)
	time.Sleep(150 * time.Millisecond) // past the redraw throttle
	p.Set(50)
	if s := buf.String(); !strings.Contains(s, "load") || !strings.Contains(s, "25%") || !strings.Contains(s, "50/200") {
		t.Errorf("bar at 50/200: %q", s)
	}
	p.Done()
	if !strings.HasSuffix(buf.String(), "\x1b[2K\r") {
		t.Errorf("Done does not clear the line: %q", buf.String())
	}
}

// TestProgressBars: on a terminal, load, dump, compact and repair draw a
// bar on stderr and clear it at the end; their stdout is unchanged.
func TestProgressBars(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/t.dets"
	var in strings.Builder
	for i := range 3000 {
		in.WriteString("{" + itoa(i) + ", <<\"value\">>}.\n")
	}
	for _, c := range []struct {
		args  []string
		label string
	}{
		{[]string{"load", path}, "load"},
		{[]string{"dump", path}, "dump"},
		{[]string{"compact", path}, "compact: writing objects"},
		{[]string{"repair", path}, "repair: scanning bytes"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, env{stdin: strings.NewReader(in.String()), stdout: &out, stderr: &errb, stderrTTY: true})
		if code != 0 {
			t.Fatalf("dets %v: exit %d: %s", c.args, code, errb.String())
		}
		s := errb.String()
		if !strings.Contains(s, "\r"+c.label) || !strings.Contains(s, "100%") || !strings.HasSuffix(s, "\x1b[2K\r") {
			t.Errorf("dets %v: stderr %q", c.args, s)
		}
		if strings.Contains(out.String(), "\r") {
			t.Errorf("dets %v: the bar went to stdout", c.args)
		}
	}
}
