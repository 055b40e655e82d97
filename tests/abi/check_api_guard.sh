#!/usr/bin/env bash
# check_api_guard.sh <library.so> <src/api directory>
#
# Proves the exception barrier's shape (src/api/api_guard.h) for every function the built library
# exports: each exported name must have exactly one definition in <dir>/*.cpp whose body
#   - starts with ACLVMM_API_ENTER("<name>"); or ACLVMM_API_GUARD("<name>");  (its own name), and
#   - ends with ACLVMM_API_EXIT(); or ACLVMM_API_EXIT_WITH(<value>);
# and contains each of them once. Fails (exit 1) listing every name that does not; the list of
# names comes from the library (nm -D --defined-only), not from a hand-kept file, so a new export
# cannot be forgotten.
#
# Definitions are read as the sources are written: the signature starts in column 0 and the body
# ends with a "}" alone on its line.
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: $0 <library.so> <src/api directory>" >&2
    exit 2
fi
lib="$1"
dir="$2"
NM="${NM:-nm}"
if [ ! -e "$lib" ]; then
    echo "check_api_guard: library not found: $lib" >&2
    exit 1
fi
shopt -s nullglob
sources=("$dir"/*.cpp)
if [ "${#sources[@]}" -eq 0 ]; then
    echo "check_api_guard: no sources in $dir" >&2
    exit 1
fi
if ! nm_out="$("$NM" -D --defined-only "$lib" 2>&1)"; then
    echo "check_api_guard: $NM -D --defined-only $lib failed:" >&2
    echo "$nm_out" >&2
    exit 1
fi
exported="$(awk 'NF >= 2 && ($(NF-1) == "T" || $(NF-1) == "W" || $(NF-1) == "i") {
                     name = $NF; sub(/@.*/, "", name); print name }' <<<"$nm_out" | LC_ALL=C sort -u)"
if [ -z "$exported" ]; then
    echo "check_api_guard: $lib exports no functions" >&2
    exit 1
fi

# One line per top-level definition: name, file:line, then the body's guard facts
# (first statement, last statement, number of opens, number of closes), tab-separated.
definitions="$(awk '
    function report() {
        printf "%s\t%s:%d\t%s\t%s\t%d\t%d\n", name, FILENAME, at, first, last, opens, closes
    }
    state == 0 && /^[A-Za-z_]/ && !/^(namespace|extern|using|struct|class|typedef|template|static_assert)([^A-Za-z0-9_]|$)/ \
            && match($0, /[A-Za-z_][A-Za-z0-9_]*\(/) {
        name = substr($0, RSTART, RLENGTH - 1); at = FNR
        state = ($0 ~ /;[[:space:]]*$/) ? 0 : 1   # a declaration has no body
    }
    state == 1 {
        if ($0 ~ /\{[[:space:]]*$/) { state = 2; first = ""; last = ""; opens = 0; closes = 0 }
        next
    }
    state == 2 {
        if ($0 == "}") { report(); state = 0; next }
        line = $0; sub(/^[[:space:]]+/, "", line); sub(/[[:space:]]+$/, "", line)
        if (line == "" || line ~ /^\/\//) next
        if (first == "") first = line
        last = line
        if (line ~ /^ACLVMM_API_(ENTER|GUARD)\(/) ++opens
        if (line ~ /^ACLVMM_API_EXIT(_WITH)?\(/) ++closes
    }
' "${sources[@]}")"

status=0
count=0
while IFS= read -r name; do
    count=$((count + 1))
    defs="$(awk -F'\t' -v n="$name" '$1 == n' <<<"$definitions")"
    if [ -z "$defs" ]; then
        echo "check_api_guard: $name: exported, but no definition found in $dir"
        status=1
        continue
    fi
    if [ "$(wc -l <<<"$defs")" -ne 1 ]; then
        echo "check_api_guard: $name: more than one definition:"
        cut -f2 <<<"$defs" | sed 's/^/  at /'
        status=1
        continue
    fi
    IFS=$'\t' read -r _ where first last opens closes <<<"$defs"
    problems=()
    if [[ "$first" != "ACLVMM_API_ENTER(\"$name\");" && "$first" != "ACLVMM_API_GUARD(\"$name\");" ]]; then
        problems+=("does not start with ACLVMM_API_ENTER(\"$name\"); or ACLVMM_API_GUARD(\"$name\"); (starts with: $first)")
    fi
    if [[ ! "$last" =~ ^ACLVMM_API_EXIT\(\)\;$ && ! "$last" =~ ^ACLVMM_API_EXIT_WITH\(.+\)\;$ ]]; then
        problems+=("does not end with ACLVMM_API_EXIT(); or ACLVMM_API_EXIT_WITH(value); (ends with: $last)")
    fi
    if [ "$opens" -ne 1 ] || [ "$closes" -ne 1 ]; then
        problems+=("opens the barrier $opens time(s) and closes it $closes time(s), not once each")
    fi
    for p in "${problems[@]}"; do
        echo "check_api_guard: $name ($where): $p"
        status=1
    done
done <<<"$exported"

if [ "$status" -eq 0 ]; then
    echo "check_api_guard: all $count exported functions of $lib open and close the barrier"
fi
exit "$status"
