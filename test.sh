#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need when it is
# missing: Erlang/OTP (erlang-nox) is the oracle for the otp9 format,
# util-linux's flock(1) is used by the lock tests, qemu-user-static runs
# the arm64 tests, and the race detector needs cgo, so a C compiler and
# the C library's headers (gcc, libc6-dev).
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v erl >/dev/null 2>&1 || need+=(erlang-nox)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -e /usr/include/stdlib.h ] || need+=(libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	if ! command -v apt-get >/dev/null 2>&1 || { [ -n "$sudo" ] && ! command -v sudo >/dev/null 2>&1; }; then
		echo "test.sh: missing Debian packages ${need[*]}; install them (as root: apt-get install ${need[*]}) and run again" >&2
		exit 1
	fi
	echo "test.sh: installing ${need[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# step NAME prints a header; each step's time is printed when the next
# begins, and the total at the end.
t0=$SECONDS
t_step=$SECONDS
step_name=""
step() {
	[ -n "$step_name" ] && echo "-- $step_name: $((SECONDS - t_step))s"
	step_name="$1"
	t_step=$SECONDS
	echo "== $1"
}
trap '[ -n "$step_name" ] && echo "-- $step_name: $((SECONDS - t_step))s"; echo "-- total: $((SECONDS - t0))s"' EXIT

step "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
# bench/ is a module of its own (the peers stay out of the root go.mod):
# vetted here so that a change of the engine's API cannot leave it
# broken until someone runs a benchmark. Its comparisons are run by
# bench/run.sh, not here; its correctness tests are run below.
(cd bench && go vet ./...)

step "go test"
go test -count=1 -timeout 20m ./...
# bench/'s own checks: every peer store answers the workloads rightly
# (the figures mean nothing otherwise), and the chart command draws
# from a results file and refuses a bad one.
(cd bench && BENCH_PEERS=1 go test -count=1 -run 'TestPeersStores$' . && go test -count=1 ./cmd/chart)

step "go test -race (concurrent packages)"
race_pkgs=()
for p in ./dets ./exclusive ./internal/lockfile ./kinds; do
	[ -d "$p" ] && race_pkgs+=("$p")
done
if [ ${#race_pkgs[@]} -gt 0 ]; then
	go test -count=1 -race -short -timeout 15m "${race_pkgs[@]}"
fi

# The platforms of docs and README: every target builds and vets, tests
# included.
step "go vet, cross-target"
for target in linux/amd64 linux/arm64 linux/386 linux/arm darwin/amd64 darwin/arm64 freebsd/amd64 windows/amd64; do
	echo "   $target"
	GOOS=${target%/*} GOARCH=${target#*/} go vet ./...
done

# 32-bit binaries run natively on this kernel, erl too.
step "go test, linux/386"
GOARCH=386 go test -short -count=1 -timeout 15m ./dets ./internal/lockfile ./exclusive ./kinds

# arm64 under qemu-user. GODETS_QEMU names the emulator, so that tests
# re-exec their children through it and skip what the emulator cannot do.
step "go test, linux/arm64 under qemu-user"
GOARCH=arm64 GODETS_QEMU=qemu-aarch64-static go test -short -count=1 -timeout 10m \
	-exec qemu-aarch64-static ./etf ./exclusive ./internal/lockfile

# Fuzzing that runs (issue #20): every fuzz target, one at a time (go test
# -fuzz takes one package and one target), for GODETS_FUZZTIME each: 30s
# by default, 20m with GODETS_SOAK=1. A crasher is written to
# testdata/fuzz/<Target>/ in its package, where plain go test replays it
# from then on; commit it as a regression seed. A new input that only adds
# coverage is minimized for at most 5s (the default, 60s, spent the whole
# 30s of FuzzOpen on minimizing its first find).
step "go test -fuzz"
fuzztime=${GODETS_FUZZTIME:-30s}
if [ "${GODETS_SOAK:-}" = 1 ]; then fuzztime=${GODETS_FUZZTIME:-20m}; fi
for dir in $(git grep -l '^func Fuzz' -- '*_test.go' | xargs -n1 dirname | sort -u); do
	for target in $(go test -list '^Fuzz' "./$dir" | grep '^Fuzz'); do
		echo "   ./$dir $target ($fuzztime)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s "./$dir"; then
			echo "FUZZ FAILURE: ./$dir $target (input written under ./$dir/testdata/fuzz/$target)"
			exit 1
		fi
	done
done
