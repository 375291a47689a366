// Package killtest holds the crash tests that use real processes
// (issue #20, docs/reliability.md §3): the test binary re-executes itself
// as a writer, a repairer or a session holder (or runs the dets tool,
// built by TestKillCLI, inside its session), the parent kills it with
// SIGKILL, and another child opens the file with AutoRepair and reports
// what it holds. The parent checks that against the child's fsynced log of
// acknowledged calls, through internal/model.
//
// `go test -run Kill -v ./killtest` prints one counted summary line per
// family; GODETS_SOAK=1 runs 10,000 writer kills; -kill.seed=N or
// GODETS_KILL_SEED=N replays a run's seeds.
package killtest
