#!/usr/bin/env bash
# Runs aclvmm_fuzz_api for CTest.
#   run_fuzz.sh bounded <harness> <source dir> <build dir> <seconds>
#       fuzzes for <seconds> from the seed corpus; new inputs go to <build dir>/corpus-work, a
#       crash or invariant violation is saved under <build dir>/artifacts/ and fails the test
#   run_fuzz.sh replay <harness> <source dir> <build dir>
#       runs every file of <source dir>/corpus and <source dir>/crashes once
set -euo pipefail
mode="$1" harness="$2" src="$3" build="$4"
mkdir -p "$build/artifacts"
case "$mode" in
    bounded)
        seconds="${5:-60}"
        [ "$seconds" -ge 1 ] 2>/dev/null || seconds=1  # 0 would mean "forever" to libFuzzer
        mkdir -p "$build/corpus-work"
        # -timeout: one input must never take more than 30 s; -rss_limit_mb: the emulator's memory is
        # sparse, but a leak across inputs would grow it.
        exec "$harness" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
            -artifact_prefix="$build/artifacts/" "$build/corpus-work" "$src/corpus"
        ;;
    replay)
        files=()
        for dir in "$src/corpus" "$src/crashes"; do
            [ -d "$dir" ] || continue
            while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$dir" -type f ! -name '*.md' -print0 | sort -z)
        done
        if [ "${#files[@]}" -eq 0 ]; then echo "run_fuzz.sh: no inputs to replay" >&2; exit 1; fi
        echo "replaying ${#files[@]} inputs"
        exec "$harness" -timeout=30 -artifact_prefix="$build/artifacts/" "${files[@]}"
        ;;
    *) echo "usage: run_fuzz.sh bounded|replay <harness> <source dir> <build dir> [seconds]" >&2; exit 2 ;;
esac
