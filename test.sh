#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need when it is
# missing: Erlang/OTP (erlang-nox) is the oracle for the otp9 format, and
# util-linux's flock(1) is used by the lock tests.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v erl >/dev/null 2>&1 || need+=(erlang-nox)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "test.sh: installing ${need[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

echo "== gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

echo "== go test"
go test -count=1 -timeout 20m ./...

echo "== go test -race (concurrent packages)"
race_pkgs=()
for p in ./dets ./exclusive ./internal/lockfile ./kinds; do
	[ -d "$p" ] && race_pkgs+=("$p")
done
if [ ${#race_pkgs[@]} -gt 0 ]; then
	go test -count=1 -race -short -timeout 15m "${race_pkgs[@]}"
fi
