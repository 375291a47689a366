package main

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// isTerminal reports whether f is a terminal (a character device), which is
// when progress bars are worth drawing.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress is a bar on stderr drawn by github.com/schollz/progressbar. A
// nil *progress is quiet, so callers need not check whether stderr is a
// terminal.
type progress struct {
	bar  *progressbar.ProgressBar
	done int64
}

// newProgress returns a bar for the command, or nil when stderr is not a
// terminal. A total of 0 or less is unknown: the bar shows a count.
func (c *cmdCtx) newProgress(label string, total int64) *progress {
	if !c.stderrTTY {
		return nil
	}
	if total <= 0 {
		total = -1 // the library's spinner with a count
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription(label),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionSetRenderBlankState(true),
	)}
}

// Set records n units done; the library redraws at most ten times a second.
func (p *progress) Set(n int64) {
	if p != nil {
		p.done = n
		_ = p.bar.Set64(n)
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
	if p != nil && n > 0 {
		p.bar.ChangeMax64(n)
	}
}

// Done erases the bar so that later output starts on a clean line.
func (p *progress) Done() {
	if p != nil {
		_ = p.bar.Clear()
	}
}
