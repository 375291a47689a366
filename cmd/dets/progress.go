package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// isTerminal reports whether f is a terminal (a character device), which is
// when progress bars are worth drawing.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress draws a one-line bar on a terminal. A nil *progress is quiet, so
// callers need not check whether stderr is a terminal.
type progress struct {
	w     io.Writer
	label string
	total int64 // 0 when unknown: the bar shows a count only
	done  int64
	last  time.Time
	drawn bool
}

// newProgress returns a bar for the command, or nil when stderr is not a
// terminal.
func (c *cmdCtx) newProgress(label string, total int64) *progress {
	if !c.stderrTTY {
		return nil
	}
	return &progress{w: c.stderr, label: label, total: total}
}

// Set records n units done and redraws at most ten times a second.
func (p *progress) Set(n int64) {
	if p == nil {
		return
	}
	p.done = n
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond {
		p.last = now
		p.draw()
	}
}

// Add records n more units done.
func (p *progress) Add(n int64) {
	if p != nil {
		p.Set(p.done + n)
	}
}

// SetTotal changes the expected total, e.g. when a repair learns the size.
func (p *progress) SetTotal(n int64) {
	if p != nil {
		p.total = n
	}
}

func (p *progress) draw() {
	const width = 30
	p.drawn = true
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%s %d", p.label, p.done)
		return
	}
	d := min(max(p.done, 0), p.total)
	fill := int(d * width / p.total)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d", p.label,
		strings.Repeat("#", fill), strings.Repeat(" ", width-fill), d*100/p.total, d, p.total)
}

// Done erases the bar so that later output starts on a clean line.
func (p *progress) Done() {
	if p == nil || !p.drawn {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
}
