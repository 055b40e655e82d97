#!/usr/bin/env bash
# check_docs_dependencies.sh <libascendcl.so> <docs/drop-in.md>: the dependency list of
# docs/drop-in.md names every DT_NEEDED library of the built library, and the page does not claim
# that anything is linked statically.
set -euo pipefail
LIB="$1" DOC="$2"
failures=0
deps="$(sed -n '/^- Dependencies/,/^- \|^$/p' "$DOC")"
[ -n "$deps" ] || { echo "FAIL: $DOC has no '- Dependencies' item"; exit 1; }
for needed in $(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    base="${needed%%.so*}"   # libspdlog.so.1.10 -> libspdlog
    case "$base" in ld-linux*|ld64*) continue ;; esac  # the loader itself
    if ! grep -qF "$base" <<<"$deps"; then
        echo "FAIL: $needed is NEEDED by $LIB but not in the dependency list of $DOC"
        failures=$((failures + 1))
    fi
done
if grep -qi 'statically' "$DOC"; then
    echo "FAIL: $DOC says something is linked statically; the library links only shared libraries"
    failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "ok: every NEEDED library is documented"
[ "$failures" -eq 0 ]
