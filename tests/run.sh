#!/usr/bin/env bash
# Builds aclvmm and runs the whole test suite, then the sanitizer builds.
#
# Stages:
#   build        configure + build <repo>/build (RelWithDebInfo)
#   test         ctest over <repo>/build
#   asan-build   configure + build <repo>/build-asan (address,undefined at -Og -g1, lock-rank
#                checking on; no benches/examples)
#   asan         ctest -L 'unit|api|integration|abi|conformance|hal' over build-asan
#   tsan-build   configure + build <repo>/build-tsan (thread at -Og -g1, lock-rank checking on;
#                the unit and API test binaries only, where the concurrency tests are)
#   tsan         ctest -R 'Concurrency|Thread' over build-tsan
#   fuzz-build   configure <repo>/build-fuzz with clang-14 and ACLVMM_FUZZ=ON (-Og -g1) and build the
#                libFuzzer harness only (tests/fuzz: the library's sources with ASan+UBSan)
#   fuzz         ctest -L fuzz over build-fuzz: fuzz.api_bounded (fuzzing from the seed corpus for
#                ACLVMM_FUZZ_SECONDS) and fuzz.regression (every seed and saved crash input once)
#
# ACLVMM_SKIP_SANITIZERS=1 skips the sanitizer and fuzz stages; ACLVMM_FUZZ_SECONDS sets the fuzzing
# time (default 60); ACLVMM_JOBS overrides -j.
# A failing stage does not stop the others (a test stage is skipped only when its own tree
# failed to build). Exit status is 1 if any stage failed. The last line is "N passed, M failed",
# totalled over the ctest summaries of all stages; a build or ctest failure that produced no
# ctest summary counts as one failed test so the totals never read as a clean run.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${ACLVMM_JOBS:-$(nproc 2>/dev/null || echo 2)}"

bash "$REPO/scripts/setup.sh"
echo "=== setup (packages): $SECONDS s"

# Test children killed on purpose would leave their aclvmm-smi statistics files in /dev/shm for
# every user's monitor to clean up: every stage's processes publish into the build tree instead
# (the smi tests still give each test a directory of its own).
export ACLVMM_SMI_DIR="${ACLVMM_SMI_DIR:-$REPO/build/smi-segments}"
mkdir -p "$ACLVMM_SMI_DIR"

TOTAL_PASSED=0
TOTAL_FAILED=0
ANY_FAILED=0
STAGE_NAMES=()
STAGE_RESULTS=()

banner() { echo; echo "=== $* ==="; }

# Each stage's wall time goes into its record, so that a slow CI run shows where the time went
# (the suite's budget: docs/reliability.md section 3).
STAGE_CLOCK=$SECONDS
start_stage() { STAGE_CLOCK=$SECONDS; }

record() { # record <stage> <PASS|FAIL|SKIP> [detail]
    local detail="${3:-}"
    if [ "$2" != SKIP ]; then detail+="${detail:+, }$((SECONDS - STAGE_CLOCK)) s"; fi
    STAGE_NAMES+=("$1")
    STAGE_RESULTS+=("$2${detail:+ ($detail)}")
    if [ "$2" = FAIL ]; then ANY_FAILED=1; fi
    echo "=== stage $1: $2${detail:+ ($detail)}"
}

# configure_and_build <stage> <build-dir> <targets|all> [cmake args...]
configure_and_build() {
    local stage="$1" dir="$2" targets="$3"; shift 3
    local target_args=()
    if [ "$targets" != all ]; then
        for t in $targets; do target_args+=(--target "$t"); done
    fi
    start_stage
    banner "$stage: configure $dir"
    if ! cmake -S "$REPO" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" </dev/null; then
        TOTAL_FAILED=$((TOTAL_FAILED + 1))
        record "$stage" FAIL "cmake configure failed"
        return 1
    fi
    banner "$stage: build $dir (-j$JOBS)"
    if ! cmake --build "$dir" -j"$JOBS" "${target_args[@]}" </dev/null; then
        TOTAL_FAILED=$((TOTAL_FAILED + 1))
        record "$stage" FAIL "build failed"
        return 1
    fi
    record "$stage" PASS
}

# run_ctest <stage> <build-dir> <prefix-command...> -- [extra ctest args...]
# CI shows only the tail of this script's output, so the failed tests' names and the end of
# each one's output are repeated just above the summary.
FAILURE_REPORT=""
keep_failures() {
    local stage="$1" log="$2" name
    while read -r name; do
        [ -n "$name" ] || continue
        FAILURE_REPORT+="--- $stage: $name"$'\n'
        # ctest --output-on-failure prints a test's output right after its result line and
        # before the next "Start"/result line; keep the last 40 lines of that block.
        FAILURE_REPORT+=$(awk -v n="$name" '
            index($0, ": " n " ") && /Test +#[0-9]+:/ { grab = 1; next }
            grab && (/^ *Start +[0-9]+:/ || /^ *[0-9]+\/[0-9]+ Test +#/ || /tests passed, /) { grab = 0 }
            grab { print }' "$log" | tail -n 40)$'\n'
    done < <(sed -n '/The following tests FAILED:/,$p' "$log" |
             sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) \(.*/\1/p')
}

# The prefix (at least `env`) sets the per-stage environment, e.g. `env ASAN_OPTIONS=...`.
run_ctest() {
    local stage="$1" dir="$2"; shift 2
    local prefix=()
    while [ "$#" -gt 0 ] && [ "$1" != -- ]; do prefix+=("$1"); shift; done
    [ "$#" -gt 0 ] && shift
    local log="$dir/ctest-$stage.log" rc line failed total passed

    start_stage
    banner "$stage: ctest --test-dir $dir $*"
    set +e
    "${prefix[@]}" ctest --test-dir "$dir" --output-on-failure -j"$JOBS" --timeout 600 "$@" \
        </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    set -e

    # e.g. "100% tests passed, 0 tests failed out of 42" / "97% tests passed, 1 tests failed out of 42"
    line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
    if [ -n "$line" ]; then
        failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
        total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
        passed=$((total - failed))
        TOTAL_PASSED=$((TOTAL_PASSED + passed))
        TOTAL_FAILED=$((TOTAL_FAILED + failed))
        if [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]; then
            record "$stage" PASS "$passed passed, $failed failed"
        else
            record "$stage" FAIL "$passed passed, $failed failed, ctest exit $rc"
            keep_failures "$stage" "$log"
        fi
    elif grep -q 'No tests were found' "$log"; then
        if [ "$rc" -eq 0 ]; then
            record "$stage" PASS "no tests matched"
        else
            TOTAL_FAILED=$((TOTAL_FAILED + 1))
            record "$stage" FAIL "no tests matched, ctest exit $rc"
        fi
    else
        TOTAL_FAILED=$((TOTAL_FAILED + 1))
        record "$stage" FAIL "no ctest summary, ctest exit $rc"
    fi
}

# ---- default tree -------------------------------------------------------------------------
BUILD="$REPO/build"
if configure_and_build build "$BUILD" all -DACLVMM_BUILD_TESTS=ON; then
    run_ctest test "$BUILD" env --
else
    record test SKIP "build failed"
fi

# ---- sanitizer trees ----------------------------------------------------------------------
if [ "${ACLVMM_SKIP_SANITIZERS:-0}" = 1 ]; then
    record asan SKIP "ACLVMM_SKIP_SANITIZERS=1"
    record tsan SKIP "ACLVMM_SKIP_SANITIZERS=1"
    record fuzz SKIP "ACLVMM_SKIP_SANITIZERS=1"
else
    # Sanitizer trees compile at -Og with line tables only: what the reports need. -Og halves the
    # ASan+UBSan tree's compile time against -O1 (the instrumented optimiser is most of it) and
    # its tests ran no slower on this project's CI machine (docs/reliability.md section 3).
    # They also check the lock order (ACLVMM_LOCK_RANK_CHECK: src/base/lock_rank.h), so every test
    # they run aborts on a lock taken out of rank.
    SAN_FLAGS=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-Og -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1"
               -DACLVMM_BUILD_TESTS=ON -DACLVMM_BUILD_BENCH=OFF -DACLVMM_BUILD_EXAMPLES=OFF
               -DACLVMM_LOCK_RANK_CHECK=ON)
    ASAN_BUILD="$REPO/build-asan"
    if configure_and_build asan-build "$ASAN_BUILD" all "${SAN_FLAGS[@]}" \
            -DACLVMM_SANITIZE=address,undefined; then
        # Leak detection is off: the runtime is a process-lifetime singleton.
        run_ctest asan "$ASAN_BUILD" \
            env ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            -- -L 'unit|api|integration|abi|conformance|hal'
    else
        record asan SKIP "build failed"
    fi

    TSAN_BUILD="$REPO/build-tsan"
    # The concurrency tests live in the unit and API binaries; nothing else is built.
    if configure_and_build tsan-build "$TSAN_BUILD" "aclvmm_unit_tests aclvmm_api_tests" \
            "${SAN_FLAGS[@]}" -DACLVMM_SANITIZE=thread; then
        # GCC 12's TSan aborts ("unexpected memory mapping") under the large mmap randomisation
        # of recent kernels; run without ASLR when the sandbox allows changing the personality.
        TSAN_PREFIX=(env TSAN_OPTIONS=halt_on_error=1)
        if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
            TSAN_PREFIX+=(setarch "$(uname -m)" -R)
        fi
        run_ctest tsan "$TSAN_BUILD" "${TSAN_PREFIX[@]}" -- -R 'Concurrency|Thread'
    else
        record tsan SKIP "build failed"
    fi

    # libFuzzer needs clang; the harness links the library's sources itself, so only its target
    # is built. The tests' sanitizer options are set by tests/fuzz/CMakeLists.txt.
    FUZZ_BUILD="$REPO/build-fuzz"
    if configure_and_build fuzz-build "$FUZZ_BUILD" aclvmm_fuzz_api "${SAN_FLAGS[@]}" \
            -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DACLVMM_FUZZ=ON \
            -DACLVMM_FUZZ_SECONDS="${ACLVMM_FUZZ_SECONDS:-60}"; then
        run_ctest fuzz "$FUZZ_BUILD" env -- -L fuzz
    else
        record fuzz SKIP "build failed"
    fi
fi

# ---- summary ------------------------------------------------------------------------------
if [ -n "$FAILURE_REPORT" ]; then
    echo
    echo "=== failed tests (last lines of each one's output) ==="
    printf '%s' "$FAILURE_REPORT"
fi
echo
echo "=== summary ==="
for i in "${!STAGE_NAMES[@]}"; do
    printf '%-12s %s\n' "${STAGE_NAMES[$i]}" "${STAGE_RESULTS[$i]}"
done
echo "whole run: $SECONDS s"
echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
exit "$ANY_FAILED"
