#!/usr/bin/env bash
# check_exports.sh <library.so> <symbols.txt>
#
# Fails (exit 1) if
#   - any name listed in symbols.txt (one per line; '#' comments and blank lines ignored) is not
#     exported by the library as a defined function symbol (nm -D types T, W or i), or
#   - the library exports any defined dynamic symbol whose name does not start with "acl"
#     (the version script must export only the ACL names and the aclvmm* extensions).
# Version-definition nodes (absolute symbols of value 0 that a version script creates) are not
# exports and are ignored. Symbol version suffixes (@VER, @@VER) are stripped.
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: $0 <library.so> <symbols.txt>" >&2
    exit 2
fi
lib="$1"
symfile="$2"

if [ ! -e "$lib" ]; then
    echo "check_exports: library not found: $lib" >&2
    exit 1
fi
if [ ! -r "$symfile" ]; then
    echo "check_exports: symbol list not readable: $symfile" >&2
    exit 1
fi
NM="${NM:-nm}"
if ! command -v "$NM" >/dev/null 2>&1; then
    echo "check_exports: '$NM' not found (install binutils)" >&2
    exit 1
fi

if ! nm_out="$("$NM" -D --defined-only "$lib" 2>&1)"; then
    echo "check_exports: $NM -D --defined-only $lib failed:" >&2
    echo "$nm_out" >&2
    exit 1
fi

# nm -D lines: "<value> <type> <name>[@[@]VERSION]" (value may be blank for some types).
parsed="$(awk '
    NF >= 2 {
        name = $NF; type = $(NF-1); value = (NF >= 3) ? $1 : "";
        sub(/@.*/, "", name);
        if (type == "A" && (value == "" || value ~ /^0+$/)) next;   # version node
        print type, name;
    }' <<<"$nm_out")"

functions="$(awk '$1 == "T" || $1 == "W" || $1 == "i" { print $2 }' <<<"$parsed" | LC_ALL=C sort -u)"
exported="$(awk '{ print $2 }' <<<"$parsed" | LC_ALL=C sort -u)"
required="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$symfile" | LC_ALL=C sort -u)"

status=0

missing="$(LC_ALL=C comm -23 <(printf '%s\n' "$required") <(printf '%s\n' "$functions") | sed '/^$/d')"
if [ -n "$missing" ]; then
    echo "check_exports: $lib does not export $(wc -l <<<"$missing") required function(s) from $symfile:"
    sed 's/^/  missing: /' <<<"$missing"
    status=1
fi

offenders="$(grep -v '^acl' <<<"$exported" | sed '/^$/d' || true)"
if [ -n "$offenders" ]; then
    echo "check_exports: $lib exports $(wc -l <<<"$offenders") symbol(s) not starting with 'acl':"
    while IFS= read -r name; do
        type="$(awk -v n="$name" '$2 == n { print $1; exit }' <<<"$parsed")"
        echo "  unexpected: $name ($type)"
    done <<<"$offenders"
    status=1
fi

if [ "$status" -eq 0 ]; then
    echo "check_exports: $lib OK ($(wc -l <<<"$required") required functions present," \
         "$(wc -l <<<"$exported") exported symbols, all acl*)"
fi
exit "$status"
