#!/usr/bin/env bash
# Checks that the Debian packages needed to build and test aclvmm are installed.
#
# Usage: scripts/setup.sh            (called)   -> exits 0 when everything is present
#        source scripts/setup.sh     (sourced)  -> returns instead of exiting
#
# Missing packages: as root, runs `apt-get update` once and `apt-get install -y <missing>`;
# otherwise prints the exact `sudo apt-get install -y ...` line and fails with status 1.
# Nothing is downloaded except through apt-get.

aclvmm_setup() {
    local required=(cmake g++ make binutils pkg-config libspdlog-dev libnuma-dev libgtest-dev libbenchmark-dev
                    python3-dev python3-pytest  # the Python binding acl.so and its tests
                    python3-build python3-setuptools python3-wheel python3-venv  # the wheel (tests/wheel)
                    clang-14 libclang-rt-14-dev  # clang + libFuzzer: the fuzz stage of tests/run.sh
                    libfabric-dev iproute2)  # FABRIC across hosts (docs/fabric.md) and its namespaces
    local missing=() pkg status

    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "setup: dpkg-query not found (not a Debian-based system?); cannot verify packages:" \
             "${required[*]}" >&2
        return 0
    fi

    for pkg in "${required[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        case "$status" in
            *" installed") ;;
            *) missing+=("$pkg") ;;
        esac
    done

    if [ "${#missing[@]}" -eq 0 ]; then
        echo "setup: all packages present"
        return 0
    fi

    echo "setup: missing packages: ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: install them with:" >&2
        echo "sudo apt-get install -y ${missing[*]}"
        return 1
    fi

    echo "setup: running as root; installing with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get update </dev/null; then
        echo "setup: apt-get update failed" >&2
        return 1
    fi
    if ! apt-get install -y "${missing[@]}" </dev/null; then
        echo "setup: apt-get install -y ${missing[*]} failed" >&2
        return 1
    fi

    # Verify the install actually took.
    local still=()
    for pkg in "${missing[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        case "$status" in
            *" installed") ;;
            *) still+=("$pkg") ;;
        esac
    done
    if [ "${#still[@]}" -ne 0 ]; then
        echo "setup: still missing after apt-get install: ${still[*]}" >&2
        return 1
    fi
    echo "setup: installed ${missing[*]}"
    return 0
}

if (return 0 2>/dev/null); then
    # Sourced: do not exit the caller's shell, and do not leak shell options.
    aclvmm_setup
    __aclvmm_setup_rc=$?
    unset -f aclvmm_setup
    return "$__aclvmm_setup_rc"
else
    aclvmm_setup
    exit $?
fi
