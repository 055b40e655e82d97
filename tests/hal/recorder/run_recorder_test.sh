#!/usr/bin/env bash
# run_recorder_test.sh CASE WORKDIR: one ctest case of the recorder of driver-library calls
# (tools/hal-recorder). Runs rec_client (linked against the test driver) under the recorder, via
# the aclvmm-hal-record script or a raw LD_PRELOAD, and has check_trace.py assert the trace.
#
# Environment (set by CMakeLists.txt): REC_LIB the recorder library, REC_SCRIPT the script in
# the build tree, REC_CLIENT the client, REC_CHECK check_trace.py, REC_DECLS hal_decls.h,
# PYTHON the interpreter.
#
# Cases: script, preload, fork, threads, truncate, cli, unwritable, exports.
set -euo pipefail
CASE="$1"
WORK="$2"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
unset ACLVMM_HAL_TRACE ACLVMM_HAL_RECORDER_LIB

fail() {
    echo "FAIL: $*"
    exit 1
}
check() { "$PYTHON" "$REC_CHECK" "$@"; }
preload() { LD_PRELOAD="$REC_LIB" "$@"; }
# The one file matching a glob, or failure.
only() {
    local files
    # shellcheck disable=SC2206 # the glob is meant to expand
    files=($1)
    if [ ${#files[@]} -ne 1 ] || [ ! -f "${files[0]}" ]; then
        fail "expected one file for $1, got: ${files[*]}"
    fi
    echo "${files[0]}"
}
# The summary row of a function: "<fn> <calls> <failed> <missing>".
row() { awk -v fn="$2" '$1 == fn { print $1, $2, $3, $4 }' "$1"; }

case "$CASE" in
script)
    # The script finds the library beside itself (the build tree), sets the trace, runs the
    # client and prints the summary on stderr; the client's own checks pass.
    "$REC_SCRIPT" -o "$WORK/trace.jsonl" -- "$REC_CLIENT" basic >out.txt 2>err.txt ||
        fail "client failed under the script: $(cat err.txt)"
    cat err.txt
    check basic trace.jsonl out.txt
    grep -q '^25 call(s) recorded$' err.txt || fail "summary: call count"
    [ "$(row err.txt halMemCreate)" = "halMemCreate 3 2 0" ] || fail "summary: halMemCreate row"
    [ "$(row err.txt halMemMapNoAccess)" = "halMemMapNoAccess 1 0 1" ] || fail "summary: missing row"
    grep -q 'DRV_ERROR_INVALID_VALUE:2' err.txt || fail "summary: failure names"
    # a second run appends to the same file; its summary counts the new lines only
    "$REC_SCRIPT" -o "$WORK/trace.jsonl" "$REC_CLIENT" basic >/dev/null 2>err2.txt || fail "second run"
    grep -q '^25 call(s) recorded$' err2.txt || fail "second summary counts old lines: $(cat err2.txt)"
    [ "$(wc -l <trace.jsonl)" -eq 50 ] || fail "second run did not append"
    ;;
preload)
    # Raw LD_PRELOAD, per-process name; then the same output as without the recorder, apart from
    # the pid and the function that only the recorder provides.
    ACLVMM_HAL_TRACE="$WORK/t.%p.jsonl" preload "$REC_CLIENT" basic >with.txt || fail "client failed under the recorder"
    "$REC_CLIENT" basic >without.txt || fail "client failed without the recorder"
    trace=$(only "$WORK/t.*.jsonl")
    [ "$trace" = "$WORK/t.$(awk '/^pid /{print $2}' with.txt).jsonl" ] || fail "%p is not the pid: $trace"
    check basic "$trace" with.txt
    diff <(grep -v '^pid \|^halMemMapNoAccess ' with.txt) <(grep -v '^pid \|^halMemMapNoAccess ' without.txt) ||
        fail "the client saw different results under the recorder"
    grep -q '^halMemMapNoAccess absent$' without.txt || fail "the weak function exists without the recorder"
    [ "$(stat -c %a "$trace")" = 600 ] || fail "trace mode $(stat -c %a "$trace")"
    # the default name, in the current directory
    mkdir dflt
    (cd dflt && preload "$REC_CLIENT" basic >out.txt) || fail "default-name run"
    only "$WORK/dflt/aclvmm-hal-trace.$(awk '/^pid /{print $2}' dflt/out.txt).jsonl" >/dev/null
    ;;
fork)
    # %p: the parent and each forked child (forked while another thread is recording) write
    # their own files; without %p all share one.
    ACLVMM_HAL_TRACE="$WORK/f.%p.jsonl" preload "$REC_CLIENT" fork 3 >out.txt || fail "client failed"
    check fork "$WORK" f. out.txt
    ACLVMM_HAL_TRACE="$WORK/shared.jsonl" preload "$REC_CLIENT" fork 3 >out2.txt || fail "client failed"
    check shared shared.jsonl out2.txt
    ;;
threads)
    ACLVMM_HAL_TRACE="$WORK/threads.jsonl" preload "$REC_CLIENT" threads 8 200 >out.txt || fail "client failed"
    check threads threads.jsonl 8 200
    ;;
truncate)
    ACLVMM_HAL_TRACE="$WORK/long.jsonl" preload "$REC_CLIENT" truncate >out.txt || fail "client failed"
    check truncate long.jsonl
    ;;
cli)
    "$REC_SCRIPT" --help | grep -q '^usage: aclvmm-hal-record' || fail "--help"
    set +e
    "$REC_SCRIPT" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no command: not 2"
    "$REC_SCRIPT" --bogus true >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option: not 2"
    "$REC_SCRIPT" --summary >/dev/null 2>&1; [ $? -eq 2 ] || fail "--summary without a file: not 2"
    ACLVMM_HAL_RECORDER_LIB=/nonexistent.so "$REC_SCRIPT" true >/dev/null 2>&1; [ $? -eq 2 ] ||
        fail "bad ACLVMM_HAL_RECORDER_LIB: not 2"
    "$REC_SCRIPT" -o "$WORK/st.jsonl" -- sh -c 'exit 7' >/dev/null 2>&1; [ $? -eq 7 ] ||
        fail "the command's status is not kept"
    set -e
    # ACLVMM_HAL_RECORDER_LIB and the default name in the current directory (%p per process)
    ACLVMM_HAL_RECORDER_LIB="$REC_LIB" "$REC_SCRIPT" "$REC_CLIENT" basic >out.txt 2>err.txt ||
        fail "run with ACLVMM_HAL_RECORDER_LIB"
    trace=$(only "$WORK/aclvmm-hal-trace.*.jsonl")
    grep -qF "  $trace" err.txt || fail "the summary does not name $trace"
    # --summary of an existing trace, on stdout
    "$REC_SCRIPT" --summary "$trace" >sum.txt || fail "--summary"
    grep -q '^25 call(s) recorded$' sum.txt || fail "--summary: count"
    [ "$(row sum.txt halGetAPIVersion)" = "halGetAPIVersion 1 0 0" ] || fail "--summary: row"
    # an installed layout: bin/ and lib64/aclvmm/ (through a symlink to the script)
    mkdir -p inst/bin inst/lib64/aclvmm elsewhere
    cp "$REC_SCRIPT" inst/bin/ && cp "$REC_LIB" inst/lib64/aclvmm/
    ln -s "$WORK/inst/bin/aclvmm-hal-record" elsewhere/rec
    elsewhere/rec -o "$WORK/inst.jsonl" "$REC_CLIENT" basic >/dev/null 2>&1 || fail "installed layout"
    [ "$(wc -l <inst.jsonl)" -eq 25 ] || fail "installed layout: trace"
    ;;
unwritable)
    # No trace file: the program runs unchanged, with one warning.
    ACLVMM_HAL_TRACE="$WORK/missing-dir/t.jsonl" preload "$REC_CLIENT" basic >out.txt 2>err.txt ||
        fail "client failed without a trace file: $(cat err.txt)"
    [ "$(grep -c 'cannot open the trace file' err.txt)" -eq 1 ] || fail "warning: $(cat err.txt)"
    ;;
exports)
    # Exactly the functions of hal_decls.h, nothing else of the recorder.
    want=$(sed -n 's/^[A-Za-z_0-9 ]*[ *]\(\(hal\|drv\)[A-Za-z0-9]*\)(.*/\1/p' "$REC_DECLS" | sort)
    have=$(nm -D --defined-only "$REC_LIB" | awk '$2 ~ /^[TtWw]$/ { print $3 }' | sort)
    [ "$(wc -w <<<"$want")" -eq 62 ] || fail "hal_decls.h parse: $(wc -w <<<"$want") functions"
    diff <(echo "$want") <(echo "$have") || fail "exported functions differ from hal_decls.h"
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
echo "recorder $CASE: ok"
