#!/usr/bin/env bash
# Compares godets with real Erlang/OTP dets and with the Go peers (bbolt,
# pogreb, pebble), and prints the report.
#   ./run.sh                 everything: OTP engine, repair, sessions, then the peers
#   ./run.sh otp             the OTP comparisons only
#   ./run.sh peers           the peer comparison only (OTP joins in when escript is there),
#                            then redraws ../docs/bench-peers.svg from results/peers.json
#   BENCH_LARGE=1 ./run.sh   adds 1M (engine, repair, peers)
#   BENCH_SIZES=10000 ./run.sh   chosen sizes for engine, repair and peers
#   BENCH_ROUNDS=5 ./run.sh      interleaved rounds (default 3; medians)
#   BENCH_SESSION_ITERS=N        peer session cycles per system and round (default 1000)
#   BENCH_RESULTS=FILE           where the peer run writes its results (default results/peers.json)
#   BENCH_REPORT=FILE            also appends the report to FILE
# Needs escript (Erlang/OTP 25, apt-get install -y erlang-nox) on PATH for the OTP side.
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-all}"
case "$mode" in
all) tests='TestCompare|TestPeers' ;;
otp) tests='TestCompare' ;;
peers) tests='TestPeers' ;;
*)
	echo "usage: $0 [all|otp|peers]" >&2
	exit 2
	;;
esac
echo "godets vs OTP $(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().' 2>/dev/null || echo '?') dets and the Go peers, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(go version | cut -d' ' -f3)"
BENCH_COMPARE=1 BENCH_PEERS=1 go test -count=1 -run "$tests" -v -timeout 180m . 2>&1 |
	grep -v -e '^=== RUN' -e '^PASS$'
if [ "$mode" != otp ]; then
	results="${BENCH_RESULTS:-results/peers.json}"
	go run ./cmd/chart "$results" ../docs/bench-peers.svg
	echo "chart: docs/bench-peers.svg (from $results)"
fi
