#!/usr/bin/env bash
# Compares godets with real Erlang/OTP dets and prints the report.
#   ./run.sh                 engine at 10k and 100k, repair at 100k, sessions
#   BENCH_LARGE=1 ./run.sh   adds 1M (engine and repair)
#   BENCH_SIZES=10000 ./run.sh   chosen sizes for engine and repair
#   BENCH_ROUNDS=5 ./run.sh      interleaved engine rounds (default 3; medians)
#   BENCH_REPORT=FILE        also appends the report to FILE
# Needs escript (Erlang/OTP 25, apt-get install -y erlang-nox) on PATH.
set -euo pipefail
cd "$(dirname "$0")"
echo "godets vs OTP $(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().' 2>/dev/null || echo '?') dets, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(go version | cut -d' ' -f3)"
BENCH_COMPARE=1 go test -count=1 -run 'TestCompare' -v -timeout 120m . 2>&1 |
	grep -v -e '^=== RUN' -e '^PASS$'
