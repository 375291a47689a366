package main

import (
	"io"
	"log/slog"
	"os"
	"strings"
)

func main() {
	slog.SetDefault(cliLogger(os.Getenv("DETS_LOG"), os.Stderr))
	os.Exit(run(os.Args[1:], env{
		stdin:     os.Stdin,
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		stderrTTY: isTerminal(os.Stderr),
		stdoutTTY: isTerminal(os.Stdout),
	}))
}

// cliLogger is the default logger of the process. The libraries log
// through slog.Default (exclusive reports a failed session cleanup there),
// but a command's stderr is its own one-line message, which already says
// what failed. DETS_LOG=debug, info, warn or error shows the library's
// records on stderr from that level up, for an operator who wants them.
func cliLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	if level == "" || l.UnmarshalText([]byte(strings.ToUpper(level))) != nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
