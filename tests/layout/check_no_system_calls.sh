#!/usr/bin/env bash
# check_no_system_calls.sh <repo>: the core holds no system call of the emulator's (issue 14):
# mmap, memfd, userfaultfd, sockets and descriptor passing live behind the device interface
# (drivers/), so that a real NPU's backend can replace them. The pattern is the issue's:
#   grep -rE 'mmap|memfd|userfaultfd|UFFD|SCM_RIGHTS|sockaddr_un|AF_UNIX' src/
# which may find comments only (a comment may explain what a backend does). A line counts as a
# comment when it starts with // or *, or when the word comes after a // on the line.
#
# Each violation is one line "check_no_system_calls: <path>:<line>: <text>".
# `--selftest` runs the check over a copy of src/ with one forbidden call added, and fails unless
# the check catches it.
set -euo pipefail

pattern='mmap|memfd|userfaultfd|UFFD|SCM_RIGHTS|sockaddr_un|AF_UNIX'

check() {
    local root="$1" found=0
    while IFS= read -r hit; do
        local path="${hit%%:*}" rest="${hit#*:}"
        local line="${rest%%:*}" text="${rest#*:}"
        local code="${text%%//*}"                     # what comes before a // comment
        if [[ "$code" =~ ^[[:space:]]*(\*|/\*) ]]; then continue; fi
        if ! grep -qE "$pattern" <<<"$code"; then continue; fi
        echo "check_no_system_calls: ${path#$root/}:$line:$text"
        found=1
    done < <(grep -rnE "$pattern" "$root/src" || true)
    return $found
}

if [ "${1:-}" = "--selftest" ]; then
    repo="$2"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cp -r "$repo/src" "$tmp/src"
    echo '  void* p = mmap(nullptr, 4096, 0, 0, -1, 0);  // a backend would do this' \
        >> "$tmp/src/vmm/address_space.cpp"
    if out=$(check "$tmp"); then
        echo "the check missed an mmap call in src/vmm/address_space.cpp" >&2
        exit 1
    fi
    grep -q "src/vmm/address_space.cpp" <<<"$out" || { echo "wrong report: $out" >&2; exit 1; }
    echo "caught: $out"
    exit 0
fi

if [ "$#" -ne 1 ]; then
    echo "usage: $0 <repo> | --selftest <repo>" >&2
    exit 2
fi
check "$1"
