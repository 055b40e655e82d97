#!/usr/bin/env bash
# check_layers_selftest.sh <repo>
#
# The layout check must catch what it is there to catch: on copies of the tree with one
# forbidden include added, or one file put where it does not belong (each row below),
# check_layers.sh must fail and name exactly that file. The unchanged copy must pass.
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 <repo>" >&2
    exit 2
fi
repo="$1"
check="$(dirname "$0")/check_layers.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

copy_tree() {  # copy_tree <destination>: what the check reads
    mkdir -p "$1/tests"
    cp -r "$repo/src" "$repo/drivers" "$1/"
    cp -r "$repo/tests/unit" "$repo/tests/conformance" "$1/tests/"
}

# file the check must name | what is done to the copy (a shell command run in the copy)
add() { echo "sed -i '1a #include \"$2\"' '$1'"; }
mutations=(
    "src/base/status.cpp|$(add src/base/status.cpp observability/log.h)"
    "src/observability/trace.cpp|$(add src/observability/trace.cpp runtime/runtime.h)"
    "src/vmm/address_space.cpp|$(add src/vmm/address_space.cpp runtime/runtime.h)"
    "src/vmm/vmm_map.cpp|$(add src/vmm/vmm_map.cpp runtime/config.h)"
    "src/runtime/config.cpp|$(add src/runtime/config.cpp api/api_common.h)"
    "src/vmm/physical.h|$(add src/vmm/physical.h drivers/emu/os/memfd_memory.h)"
    "src/api/api_memory.cpp|$(add src/api/api_memory.cpp drivers/device_backend.h)"
    "drivers/emu/os/util.h|$(add drivers/emu/os/util.h vmm/physical.h)"
    "drivers/device_registry.cpp|$(add drivers/device_registry.cpp runtime/runtime.h)"
    "drivers/fake/fake_host.cpp|$(add drivers/fake/fake_host.cpp drivers/host/host_facts.h)"
    "drivers/host/host_facts.cpp|$(add drivers/host/host_facts.cpp drivers/emu/os/util.h)"
    "drivers/injection/injecting_units.cpp|$(add drivers/injection/injecting_units.cpp drivers/fake/fake_machine.h)"
    "tests/conformance/harness.h|$(add tests/conformance/harness.h vmm/physical.h)"
    "src/runtime/stream.cpp|$(add src/runtime/stream.cpp core/status.h)"
    "src/core/leftover.cpp|mkdir -p src/core && echo '// a file outside the layers' > src/core/leftover.cpp"
    "src/vmm/vmm_malloc.cpp|$(add src/vmm/vmm_malloc.cpp runtime/runtime.h)"
    "tests/unit/stream_test.cpp|mv tests/unit/runtime/stream_test.cpp tests/unit/"
    "tests/unit/api/misuse_test.cpp|mkdir -p tests/unit/api && echo '// no such layer' > tests/unit/api/misuse_test.cpp"
    "tests/unit/vmm/address_space.cpp|mv tests/unit/vmm/address_space_test.cpp tests/unit/vmm/address_space.cpp"
    "tests/unit/runtime/streams_test.cpp|mv tests/unit/runtime/stream_test.cpp tests/unit/runtime/streams_test.cpp"
    "tests/unit/helpers.h|mv tests/unit/testing/test_device.h tests/unit/helpers.h"
)

status=0
copy_tree "$work/clean"
if ! "$check" "$work/clean" >"$work/clean.out" 2>&1; then
    echo "selftest: the unchanged tree fails the check:"
    cat "$work/clean.out"
    status=1
fi

n=0
for row in "${mutations[@]}"; do
    IFS='|' read -r file command <<<"$row"
    n=$((n + 1))
    copy="$work/m$n"
    copy_tree "$copy"
    (cd "$copy" && eval "$command")
    if [ -f "$repo/$file" ] && cmp -s "$repo/$file" "$copy/$file"; then
        echo "selftest: mutation $n changed nothing in $file: update this table"
        status=1
        continue
    fi
    if "$check" "$copy" >"$copy.out" 2>&1; then
        echo "selftest: mutation $n ($file) passed the check, it must fail"
        status=1
        continue
    fi
    named="$(sed -n 's/^check_layers: \([^ :]*\): .*/\1/p' "$copy.out" | sort -u)"
    if [ "$named" != "$file" ]; then
        echo "selftest: mutation $n ($file) was reported as: ${named:-nothing}"
        cat "$copy.out"
        status=1
        continue
    fi
    echo "selftest: mutation $n: check_layers names $file: $(grep -m1 "^check_layers: $file" "$copy.out" | cut -d: -f3-)"
done
exit "$status"
