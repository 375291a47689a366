// Package bench compares godets with real Erlang/OTP 25 dets on the same
// workloads in the same run, and prints the ratios (see README.md and run.sh).
//
// It is a separate module so that its benchmark-only dependencies (bbolt)
// and its long runs stay out of the main module's go test.
package bench
