package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], env{
		stdin:     os.Stdin,
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		stderrTTY: isTerminal(os.Stderr),
	}))
}
