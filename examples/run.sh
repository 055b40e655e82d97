#!/usr/bin/env bash
# Builds the examples in <repo>/build (the same tree tests/run.sh uses) and runs every
# example binary build/examples/example_* in name order against our libascendcl.so.
# Prints a header, the output and PASS/FAIL (by exit code) per example; the last line is
# "N passed, M failed". Exit status 1 if any example failed or none was built.
# An example with a kernel library (build/examples/kernels/example_NN_name.so, built from its
# kernels.c) runs with that library appended to ACLVMM_KERNEL_LIBS.
# An example that cannot run on this machine (12 and 13 need root for their network namespaces)
# says why and exits with 77: SKIP, counted apart and not a failure.
# ACLVMM_JOBS overrides -j; ACLVMM_EXAMPLE_TIMEOUT (seconds, default 600) bounds each example.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$REPO/build"
JOBS="${ACLVMM_JOBS:-$(nproc 2>/dev/null || echo 2)}"
TIMEOUT="${ACLVMM_EXAMPLE_TIMEOUT:-600}"

bash "$REPO/scripts/setup.sh"

echo "=== configure $BUILD ==="
if ! cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACLVMM_BUILD_EXAMPLES=ON </dev/null; then
    echo "examples: cmake configure failed" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
echo "=== build target examples (-j$JOBS) ==="
if ! cmake --build "$BUILD" --target examples -j"$JOBS" </dev/null; then
    echo "examples: build failed" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# Examples log into the build tree, not into $HOME (same as the tests).
export ASCEND_PROCESS_LOG_PATH="${ASCEND_PROCESS_LOG_PATH:-$BUILD/example-logs}"
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

RUNNER=()
if command -v timeout >/dev/null 2>&1; then
    RUNNER=(timeout --kill-after=10 "$TIMEOUT")
fi

examples=()
while IFS= read -r -d '' f; do
    examples+=("$f")
done < <(find "$BUILD/examples" -maxdepth 1 -type f -name 'example_*' -perm -u+x -print0 2>/dev/null \
         | LC_ALL=C sort -z)

if [ "${#examples[@]}" -eq 0 ]; then
    echo "examples: no example binaries found in $BUILD/examples" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
skipped=0
results=()
for exe in "${examples[@]}"; do
    name="$(basename "$exe")"
    echo
    echo "=================== $name ==================="
    kernel_libs="${ACLVMM_KERNEL_LIBS:-}"
    if [ -f "$BUILD/examples/kernels/$name.so" ]; then
        kernel_libs="${kernel_libs:+$kernel_libs:}$BUILD/examples/kernels/$name.so"
        echo "(ACLVMM_KERNEL_LIBS=$kernel_libs)"
    fi
    rc=0
    (cd "$BUILD/examples" && ACLVMM_KERNEL_LIBS="$kernel_libs" ${RUNNER[@]+"${RUNNER[@]}"} "$exe") </dev/null 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "--- $name: PASS"
        passed=$((passed + 1))
        results+=("PASS  $name")
    elif [ "$rc" -eq 77 ]; then
        echo "--- $name: SKIP (the reason is printed above)"
        skipped=$((skipped + 1))
        results+=("SKIP  $name")
    else
        if [ "$rc" -eq 124 ] && [ "${#RUNNER[@]}" -gt 0 ]; then
            echo "--- $name: FAIL (timed out after ${TIMEOUT}s)"
        else
            echo "--- $name: FAIL (exit code $rc)"
        fi
        failed=$((failed + 1))
        results+=("FAIL  $name")
    fi
done

echo
echo "=== summary ==="
printf '%s\n' "${results[@]}"
if [ "$skipped" -gt 0 ]; then
    echo "$skipped skipped: this machine cannot run them (each says why above)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
