#!/usr/bin/env bash
# Builds aclvmm and runs the benchmark suite, then prints the table of ratios against the
# performance targets (operation, aclvmm, baseline, ratio, target, pass/fail).
#
#   tests/bench/run.sh [google-benchmark flags...]
#
# ACLVMM_BENCH_MIN_TIME sets the minimum time per benchmark in seconds (default 0.5; the smoke run
# in CI uses 0.001). Exit status 1 when a target was missed. Timings need a quiet machine: run
# nothing else meanwhile. docs/performance.md explains each row and what bounds it.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JOBS="${ACLVMM_JOBS:-$(nproc 2>/dev/null || echo 2)}"
BUILD="$REPO/build"

bash "$REPO/scripts/setup.sh"
cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo </dev/null >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target aclvmm_bench </dev/null >/dev/null

export ASCEND_PROCESS_LOG_PATH="${ASCEND_PROCESS_LOG_PATH:-$BUILD/bench-logs}"
exec "$BUILD/tests/bench/aclvmm_bench" --fail-on-miss \
    --benchmark_min_time="${ACLVMM_BENCH_MIN_TIME:-0.5}" "$@"
