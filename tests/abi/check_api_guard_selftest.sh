#!/usr/bin/env bash
# check_api_guard_selftest.sh <library.so> <src/api directory>
#
# The barrier check must catch what it is there to catch: on copies of the sources with one
# function's guard taken away (each row below), check_api_guard.sh must fail and name exactly
# that function. The unchanged copy must pass.
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: $0 <library.so> <src/api directory>" >&2
    exit 2
fi
lib="$1"
src="$2"
check="$(dirname "$0")/check_api_guard.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# file | function the mutation breaks | sed program
mutations=(
    'api_memory.cpp|aclrtFree|s/^  ACLVMM_API_ENTER("aclrtFree");/  const char* api = "aclrtFree";\n  ACLVMM_ENTRY(api);/'
    'api_init.cpp|aclGetRecentErrMsg|/^const char\* aclGetRecentErrMsg/,/^}/{/ACLVMM_API_EXIT_WITH/d}'
    'api_init.cpp|aclrtGetRunMode|s/ACLVMM_API_GUARD("aclrtGetRunMode")/ACLVMM_API_GUARD("aclrtGetVersion")/'
    'api_vaddr.cpp|aclrtMemSetAccess|/^aclError aclrtMemSetAccess/,/^}/{/ACLVMM_API_ENTER/d;/ACLVMM_API_EXIT/d}'
)

status=0
cp -r "$src" "$work/clean"
if ! "$check" "$lib" "$work/clean" >"$work/clean.out" 2>&1; then
    echo "selftest: the unchanged sources fail the check:"
    cat "$work/clean.out"
    status=1
fi

n=0
for row in "${mutations[@]}"; do
    IFS='|' read -r file name program <<<"$row"
    n=$((n + 1))
    copy="$work/m$n"
    cp -r "$src" "$copy"
    sed -i -e "$program" "$copy/$file"
    if cmp -s "$src/$file" "$copy/$file"; then
        echo "selftest: mutation $n ($name) changed nothing in $file: update this table"
        status=1
        continue
    fi
    if "$check" "$lib" "$copy" >"$copy.out" 2>&1; then
        echo "selftest: mutation $n ($name in $file) passed the check, it must fail"
        status=1
        continue
    fi
    named="$(sed -n 's/^check_api_guard: \([A-Za-z0-9_]*\)[ :].*/\1/p' "$copy.out" | sort -u)"
    if [ "$named" != "$name" ]; then
        echo "selftest: mutation $n ($name in $file) was reported as: ${named:-nothing}"
        cat "$copy.out"
        status=1
        continue
    fi
    echo "selftest: mutation $n: check_api_guard names $name, as it must"
done
exit "$status"
