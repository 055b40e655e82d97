#!/usr/bin/env bash
# check_layers.sh <repo>: the include rule of the source layout (docs/architecture.md, "Layout").
#
#   include/ (acl/, aclvmm/)  the public headers: anyone may include them
#   src/base                  includes only base
#   src/observability         base
#   src/runtime               base, observability, vmm, the driver interface (drivers/*.h)
#   src/vmm                   base, observability, the driver interface (never runtime/: vmm gets
#                             what it needs of the runtime at construction, through
#                             vmm/device_directory.h and vmm/runtime_services.h)
#   src/api                   base, observability, runtime, vmm (never drivers/: the façade
#                             reaches the device through the core)
#   drivers/*                 the driver interface, the backends and the shared modules
#                             (registries), base/status.h
#   drivers/host/, drivers/injection/, drivers/ranges/
#                             shared modules (the POSIX host services; the failure-injection
#                             decorator; the free-range allocator of the software backends'
#                             windows): the driver interface, their own files, base/status.h
#   drivers/<backend>/        the driver interface, its own backend, the shared modules,
#                             base/status.h; never drivers/host/ from drivers/fake/ (the fake
#                             makes no system call: docs/device-interface.md §8, D11)
#   drivers/hal/fake/         the fake driver library (libascend_hal.so over the emulator): what
#                             a backend may include, plus the emu backend it is built on and
#                             the hal backend's declarations (drivers/hal/hal_decls.h)
#   tests/conformance/        the driver interface, the backends and shared modules (whose test
#                             hooks it uses), its own files, the unit tests' helpers
#                             (tests/unit/testing/); nothing of src/ (the suite tests backends
#                             without the core)
#
# Nothing in src/ but api includes api/, and nothing in src/ includes a backend (drivers/emu/...).
# The source tree has no other directories, and the unit tests mirror it: every
# tests/unit/<dir>/<module>_test.cpp (or <module>_<aspect>_test.cpp) lies under the name of a
# layer (base, observability, runtime, vmm) or of drivers/ or a backend (drivers/emu) and names
# one of its modules; shared helpers go to tests/unit/testing/.
#
# Each violation is one line "check_layers: <path>: ..." (tests/layout/check_layers_selftest.sh
# relies on that form).
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 <repo>" >&2
    exit 2
fi
repo="$1"
layers="base observability runtime vmm api"
# Directories of drivers/ that are shared by the backends, not backends themselves.
shared_driver_dirs="host injection ranges"

# The check runs a few hundred files and (in its self-test) twenty times over: nothing below forks
# per file or include (no command substitution; one awk reads every include), since a fork costs
# milliseconds on small CI machines.
violations=0
includes_checked=0
files_checked=0
fail() { echo "check_layers: $1"; violations=$((violations + 1)); }

# in_list <word> <space-separated list>: whether the word is in the list.
in_list() { [[ " $2 " == *" $1 "* ]]; }

# The kind of a directory directly under drivers/, into $dir_kind: shared:<dir> or backend:<dir>.
driver_dir_kind() {
    if in_list "$1" "$shared_driver_dirs"; then dir_kind="shared:$1"; else dir_kind="backend:$1"; fi
}

# The layer a quoted include names, into $tgt: public, base ... api, interface, backend:<name>,
# shared:<name>, conformance, unit-testing, unknown.
target_kind() {
    case "$1" in
        acl/*|aclvmm/*) tgt=public ;;
        base/*|observability/*|runtime/*|vmm/*|api/*) tgt="${1%%/*}" ;;
        drivers/*/*) local rest="${1#drivers/}"; driver_dir_kind "${rest%%/*}"; tgt="$dir_kind" ;;
        drivers/*) tgt=interface ;;
        conformance/*) tgt=conformance ;;
        unit/testing/*) tgt=unit-testing ;;
        *) tgt=unknown ;;
    esac
}

# allowed <source kind> <file name> <include> <target kind>: 0 when the include is allowed;
# otherwise 1, with the rule it breaks in $why.
allowed() {
    local src="$1" name="$2" inc="$3" tgt="$4"
    why=""
    [ "$tgt" = public ] && return 0
    if [ "$tgt" = unknown ]; then
        why="\"$inc\" is neither a public header nor a file of a layer or of drivers/"; return 1
    fi
    case "$src" in
        base)
            [ "$tgt" = base ] && return 0
            why="base includes only base" ;;
        observability)
            case "$tgt" in base|observability) return 0 ;; esac
            why="observability includes only base" ;;
        runtime)
            case "$tgt" in base|observability|runtime|vmm|interface) return 0 ;; esac
            why="runtime includes base, observability, vmm and the driver interface only" ;;
        vmm)
            case "$tgt" in base|observability|vmm|interface) return 0 ;; esac
            why="vmm includes base, observability and the driver interface only (what it needs of the runtime comes through vmm/runtime_services.h)" ;;
        api)
            case "$tgt" in base|observability|runtime|vmm|api) return 0 ;; esac
            why="api reaches the device through the core, not drivers/" ;;
        drivers)
            case "$tgt" in interface|backend:*|shared:*) return 0 ;; esac
            [ "$inc" = base/status.h ] && return 0
            why="drivers/ includes nothing from src/ but base/status.h" ;;
        shared:*)
            case "$tgt" in interface|"$src") return 0 ;; esac
            [ "$inc" = base/status.h ] && return 0
            why="a shared driver module includes the driver interface, its own files and base/status.h only" ;;
        backend:fake)
            case "$tgt" in interface|"$src"|shared:injection|shared:ranges) return 0 ;; esac
            [ "$inc" = base/status.h ] && return 0
            why="the fake backend includes the driver interface, its own files, drivers/injection/, drivers/ranges/ and base/status.h only (no drivers/host/: it makes no system call)" ;;
        hal-fake)
            case "$tgt" in interface|backend:emu|shared:*) return 0 ;; esac
            case "$inc" in base/status.h|drivers/hal/hal_decls.h|drivers/hal/fake/*) return 0 ;; esac
            why="the fake driver library includes the driver interface, itself, the hal backend's declarations, the emu backend, the shared modules and base/status.h only" ;;
        backend:*)
            case "$tgt" in interface|"$src"|shared:*) return 0 ;; esac
            [ "$inc" = base/status.h ] && return 0
            why="a backend includes the driver interface, its own files, the shared modules (drivers/host, drivers/injection) and base/status.h only" ;;
        conformance)
            case "$tgt" in interface|backend:*|shared:*|conformance|unit-testing) return 0 ;; esac
            why="the conformance suite includes the driver interface, backends, shared modules, its own files and tests/unit/testing/ only" ;;
    esac
    return 1
}

check_file() {  # check_file <path relative to repo> <source kind>
    local rel="$1" src="$2" name inc tgt why
    name="${rel##*/}"
    files_checked=$((files_checked + 1))
    while IFS= read -r inc; do
        [ -n "$inc" ] || continue
        includes_checked=$((includes_checked + 1))
        target_kind "$inc"
        if ! allowed "$src" "$name" "$inc" "$tgt"; then
            fail "$rel: includes \"$inc\": $why"
        fi
    done <<<"${quoted_includes[$rel]:-}"
}

# Every quoted include of the checked directories, read by one awk: quoted_includes[<path>] holds
# the file's includes, one per line.
declare -A quoted_includes
while IFS=$'\t' read -r rel inc; do
    quoted_includes[$rel]+="$inc"$'\n'
done < <(cd "$repo" && find src drivers tests/conformance -type f \( -name '*.h' -o -name '*.cpp' \) \
             -exec awk '/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
                            line = $0; sub(/^[^"]*"/, "", line); sub(/".*/, "", line)
                            print FILENAME "\t" line }' {} + 2>/dev/null)

# src/: only the layers, each file in one of them.
while IFS= read -r rel; do
    sub="${rel#src/}"
    layer="${sub%%/*}"
    if [ "$sub" = "$layer" ] || ! in_list "$layer" "$layers"; then
        fail "$rel: not in a layer directory (src/{${layers// /,}}/)"
        continue
    fi
    case "$rel" in *.h|*.cpp) check_file "$rel" "$layer" ;; esac
done < <(cd "$repo" && find src -type f | sort)

# drivers/: the interface and registries at the top, one directory per backend or shared module.
while IFS= read -r rel; do
    sub="${rel#drivers/}"
    if [ "$sub" = "${sub%%/*}" ]; then kind=drivers; else driver_dir_kind "${sub%%/*}"; kind="$dir_kind"; fi
    case "$rel" in drivers/hal/fake/*) kind=hal-fake ;; esac
    check_file "$rel" "$kind"
done < <(cd "$repo" && find drivers -type f \( -name '*.h' -o -name '*.cpp' \) | sort)

# tests/conformance/: device-level tests of the backends, without the core.
while IFS= read -r rel; do
    check_file "$rel" conformance
done < <(cd "$repo" && [ -d tests/conformance ] && find tests/conformance -type f \( -name '*.h' -o -name '*.cpp' \) | sort)

# The source directory a tests/unit/<dir> mirrors, into $mirrored.
source_dir() {
    case "$1" in drivers|drivers/*) mirrored="$1" ;; *) mirrored="src/$1" ;; esac
}
# module_tested <test path> <dir>: the test's name is <module>_test.cpp or
# <module>_<aspect>_test.cpp for a module (a .h or .cpp) of the mirrored directory.
module_tested() {
    local name f stem
    name="${1##*/}"
    name="${name%_test.cpp}"
    source_dir "$2"
    for f in "$repo/$mirrored"/*.h "$repo/$mirrored"/*.cpp; do
        [ -e "$f" ] || continue
        stem="${f##*/}"
        stem="${stem%.*}"
        case "$name" in "$stem"|"$stem"_*) return 0 ;; esac
    done
    return 1
}

# tests/unit mirrors the tree.
while IFS= read -r rel; do
    sub="${rel#tests/unit/}"
    dir="${sub%/*}"
    [ "$dir" = "$sub" ] && dir=.
    case "$rel" in
        *.cpp)
            case "$dir" in
                base|observability|runtime|vmm) ;;
                drivers|drivers/*) [ -d "$repo/$dir" ] || fail "$rel: $dir/ is not a directory of the tree" ;;
                *) fail "$rel: a unit test lies in tests/unit/<layer>/ or tests/unit/drivers[/<backend>]/" ;;
            esac
            case "$sub" in
                *_test.cpp)
                    module_tested "$rel" "$dir" ||
                        fail "$rel: names no module of $mirrored/ (<module>_test.cpp or <module>_<aspect>_test.cpp)" ;;
                *) fail "$rel: a unit test file is named <module>_test.cpp" ;;
            esac ;;
        *.h)
            case "$dir" in
                testing|base|observability|runtime|vmm|drivers|drivers/*) ;;
                *) fail "$rel: shared unit-test helpers go to tests/unit/testing/" ;;
            esac ;;
    esac
done < <(cd "$repo" && find tests/unit -type f | sort)

echo "check_layers: $files_checked files, $includes_checked quoted includes checked, $violations violation(s)"
[ "$violations" -eq 0 ]
