#!/usr/bin/env bash
# check_no_self_binding.sh <library.so>
#
# Fails if the library has a dynamic relocation (PLT slot, GOT entry, data pointer) against one
# of the names it exports itself. Such a relocation is how a library calls or takes the address of
# its own exported function through the dynamic linker; an application or LD_PRELOAD shim that
# defines the same name (an aclrtFree wrapper, say) would then receive the library's internal
# calls too. interpose_app.c checks the same at run time for the paths it exercises; this checks
# every path. Linking with -Wl,-Bsymbolic(-functions) removes such relocations by construction.
set -euo pipefail
if [ "$#" -ne 1 ] || [ ! -e "$1" ]; then
    echo "usage: $0 <library.so>" >&2
    exit 2
fi
lib="$1"
exports="$(nm -D --defined-only "$lib" | awk 'NF >= 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' | LC_ALL=C sort -u)"
# readelf -rW rows of symbol relocations: offset info type value name[@version] [+ addend]
relocated="$(readelf -rW "$lib" | awk '$1 ~ /^[0-9a-f]+$/ && NF >= 5 { sub(/@.*/, "", $5); print $5 }' | LC_ALL=C sort -u)"
self="$(LC_ALL=C comm -12 <(printf '%s\n' "$exports") <(printf '%s\n' "$relocated") | sed '/^$/d')"
if [ -n "$self" ]; then
    echo "check_no_self_binding: $lib binds $(wc -l <<<"$self") of its own exported name(s) dynamically:"
    sed 's/^/  self-bound: /' <<<"$self"
    exit 1
fi
echo "check_no_self_binding: $lib OK ($(wc -l <<<"$exports") exports, none relocated against)"
