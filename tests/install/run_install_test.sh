#!/usr/bin/env bash
# run_install_test.sh <cmake> <build-dir> <work-dir> <project-version>
#
# Installs the build tree into <work-dir>/stage, moves the root to <work-dir>/root (the files must
# find the root relative to themselves), then checks the CANN-like layout and set_env.sh and
# builds consumer.c against the root the ways applications do:
#   cmake   find_package(aclvmm) -> aclvmm::ascendcl and aclvmm::acl_rt (consumer/CMakeLists.txt),
#           from the root and from the build tree (its export, never installed)
#   pc      cc $(pkg-config --cflags --libs aclvmm) and ascendcl.pc / acl_rt.pc
#   vendor  cc -I<root>/include -L<root>/lib64 -lascendcl (and -lacl_rt), as the CANN samples do
# Each consumer runs with only set_env.sh's environment and must print the value it copied
# through device memory and name <root>/lib64/libascendcl.so as the library that defines aclInit.
set -euo pipefail

if [ "$#" -ne 4 ]; then
    echo "usage: $0 <cmake> <build-dir> <work-dir> <project-version>" >&2
    exit 2
fi
CMAKE="$1" BUILD="$2" WORK="$3" VERSION="$4"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STAGE="$WORK/stage" ROOT="$WORK/root"
CC="${CC:-cc}"
EXPECT_VALUE="value=0x5a5aa5a5c0ffee11"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# A clean environment: nothing of the caller's CANN or aclvmm setup may leak in.
clean_env=(env -i "HOME=${HOME:-/root}" "PATH=/usr/local/bin:/usr/bin:/bin"
           "ASCEND_PROCESS_LOG_PATH=${ASCEND_PROCESS_LOG_PATH:-$WORK/logs}" "CC=$CC")
in_root_env() { # in_root_env <command...>: run with <root>/set_env.sh sourced from another cwd
    "${clean_env[@]}" bash -c 'set -eu; cd /; . "$0/set_env.sh"; cd "$1"; shift; "$@"' "$ROOT" "$WORK" "$@"
}

rm -rf "$WORK"
mkdir -p "$WORK"
"$CMAKE" --install "$BUILD" --prefix "$STAGE" >"$WORK/install.log"

# dash cannot tell a sourced file its own path: set_env.sh falls back to the install prefix.
got="$("${clean_env[@]}" dash -c 'set -eu; cd /; . "$0/set_env.sh"; echo "$ASCEND_HOME_PATH"' "$STAGE")"
[ "$got" = "$STAGE" ] && ok "dash: ASCEND_HOME_PATH is the install prefix" \
                      || fail "dash: ASCEND_HOME_PATH=$got, expected $STAGE"

mv "$STAGE" "$ROOT"

# --- layout ---------------------------------------------------------------------------------
for f in set_env.sh bin/setenv.bash include/acl/acl.h include/acl/acl_rt.h include/acl/acl_base.h \
         include/acl/error_codes/rt_error_codes.h include/aclvmm/aclvmm.h lib64/libascendcl.so \
         lib64/cmake/aclvmm/aclvmmConfig.cmake lib64/cmake/aclvmm/aclvmmConfigVersion.cmake \
         lib64/pkgconfig/aclvmm.pc lib64/pkgconfig/ascendcl.pc lib64/pkgconfig/acl_rt.pc; do
    [ -f "$ROOT/$f" ] || fail "missing $f"
done
[ -d "$ROOT/bin" ] || fail "missing bin/"
[ "$(readlink "$ROOT/lib64/libacl_rt.so")" = libascendcl.so ] && ok "libacl_rt.so -> libascendcl.so" \
    || fail "lib64/libacl_rt.so is not a symlink to libascendcl.so"
soname="$(readelf -d "$ROOT/lib64/libascendcl.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = libascendcl.so ] && ok "SONAME libascendcl.so" || fail "SONAME is '$soname'"
arch="$(uname -m)-linux"
[ "$ROOT/$arch/include/acl/acl.h" -ef "$ROOT/include/acl/acl.h" ] && \
    [ "$ROOT/$arch/lib64/libacl_rt.so" -ef "$ROOT/lib64/libascendcl.so" ] && ok "$arch/ mirrors the root" \
    || fail "$arch/{include,lib64} do not lead to the root's files"

# docs/install.md describes what is installed: every top-level entry of the root has a row in its
# layout table, and its "Not installed" paragraph names nothing that is.
DOC="$HERE/../../docs/install.md"
layout="$(sed -n '/^## Layout/,/^## [^L]/p' "$DOC" | grep '^|' || true)"
for entry in "$ROOT"/*; do
    name="$(basename "$entry")"
    [ "$name" = "$arch" ] && name="<arch>-linux"
    grep -qF "| \`$name" <<<"$layout" || fail "docs/install.md's layout table has no row for $name/"
done
not_installed="$(sed -n '/^Not installed:/,/^$/p' "$DOC" | tr '\n' ' ')"
if [ -f "$ROOT/python/site-packages/acl.so" ] && grep -qi 'python' <<<"$not_installed"; then
    fail "docs/install.md lists the Python binding as not installed, but python/site-packages/acl.so is"
fi

# --- Python: acl and the pytest plugin from the root ----------------------------------------
# With set_env.sh sourced, pytest loads the plugin by the root's aclvmm-<version>.dist-info
# entry point (no pip involved) and the fixture runs on the root's library.
if [ -f "$ROOT/python/site-packages/acl.so" ] && [ -n "${ACLVMM_PYTHON:-}" ]; then
    mkdir -p "$WORK/py"
    cat >"$WORK/py/test_root.py" <<'PYEOF'
import os
import acl
import aclvmm
import pytest

@pytest.mark.npu_emulator(device_count=2)
def test_fixture_from_the_root(npu_emulator):
    root = os.environ["ASCEND_HOME_PATH"]
    assert aclvmm.library_path() == os.path.join(root, "lib64", "libascendcl.so")
    assert acl.init() == 0 and acl.rt.get_device_count() == (2, 0) and acl.finalize() == 0
PYEOF
    if in_root_env env -C "$WORK/py" PYTHONDONTWRITEBYTECODE=1 "$ACLVMM_PYTHON" -m pytest -q \
            -p no:cacheprovider test_root.py >"$WORK/py.log" 2>&1 && grep -q "1 passed" "$WORK/py.log"; then
        ok "pytest with set_env.sh: the npu_emulator fixture from the root"
    else
        fail "pytest with set_env.sh:"; cat "$WORK/py.log"
    fi
fi

# --- set_env.sh -----------------------------------------------------------------------------
vars='ASCEND_HOME_PATH ASCEND_TOOLKIT_HOME ASCEND_AICPU_PATH ASCEND_OPP_PATH TOOLCHAIN_HOME PATH
LD_LIBRARY_PATH PYTHONPATH CMAKE_PREFIX_PATH PKG_CONFIG_PATH'
show='for v in '"$(echo $vars)"'; do eval "echo $v=\${$v:-}"; done'
once="$(in_root_env bash -c "$show")"
expected="ASCEND_HOME_PATH=$ROOT
ASCEND_TOOLKIT_HOME=$ROOT
ASCEND_AICPU_PATH=$ROOT
ASCEND_OPP_PATH=$ROOT/opp
TOOLCHAIN_HOME=$ROOT/toolkit
PATH=$ROOT/bin:/usr/local/bin:/usr/bin:/bin
LD_LIBRARY_PATH=$ROOT/lib64
PYTHONPATH=$ROOT/python/site-packages
CMAKE_PREFIX_PATH=$ROOT/lib64/cmake
PKG_CONFIG_PATH=$ROOT/lib64/pkgconfig"
[ "$once" = "$expected" ] && ok "set_env.sh sets the CANN variables" \
    || { fail "set_env.sh environment differs:"; diff <(echo "$expected") <(echo "$once") || true; }
# Idempotent (sourced again from another directory), shell options untouched, stale root removed.
twice="$(in_root_env bash -c 'set -u; cd /tmp; before=$-; . "$ASCEND_HOME_PATH/set_env.sh"; [ "$-" = "$before" ] || echo "options changed: $before -> $-"; '"$show")"
[ "$twice" = "$expected" ] && ok "sourcing set_env.sh twice changes nothing" \
    || { fail "second source differs:"; diff <(echo "$expected") <(echo "$twice") || true; }
switched="$("${clean_env[@]}" LD_LIBRARY_PATH=/opt/x ASCEND_HOME_PATH=/opt/old \
            bash -c 'LD_LIBRARY_PATH=/opt/old/lib64:$LD_LIBRARY_PATH; . "$0/set_env.sh"; echo "$LD_LIBRARY_PATH"' "$ROOT")"
[ "$switched" = "$ROOT/lib64:/opt/x" ] && ok "the previous root's lib64 is removed" \
    || fail "LD_LIBRARY_PATH after switching roots: $switched"
# The Dockerfile's ENV lines are set_env.sh's output for its root (a process started without a
# shell sees the same environment as one that sourced set_env.sh); its packages are among
# scripts/setup.sh's, and its version is the project's.
DOCKERFILE="$HERE/../../Dockerfile"
docker_root=/usr/local/Ascend/ascend-toolkit/latest
docker_env="$(sed -n 's/^ENV \([A-Z_]*\)=\(.*\)$/\1=\2/p' "$DOCKERFILE" | grep -v '^BASH_ENV=' | sort)"
docker_expected="$(sed "s|$ROOT|$docker_root|g; s|^PATH=\($docker_root/bin\):.*|PATH=\1:\$PATH|" <<<"$expected" | sort)"
[ "$docker_env" = "$docker_expected" ] && ok "the Dockerfile's ENV is set_env.sh's environment" \
    || { fail "Dockerfile ENV differs from set_env.sh:"; diff <(echo "$docker_expected") <(echo "$docker_env") || true; }
grep -qx "ARG ACLVMM_VERSION=$VERSION" "$DOCKERFILE" && ok "Dockerfile version $VERSION" \
    || fail "Dockerfile's ARG ACLVMM_VERSION is not $VERSION"
setup_pkgs=" $(sed 's/#.*//' "$HERE/../../scripts/setup.sh" | sed -n '/local required=(/,/)/p' | sed 's/.*(//; s/).*//' | tr '\n' ' ') "
for pkg in $(sed -n '/apt-get install/,/rm -rf/p' "$DOCKERFILE" | sed 's/\\$//' | tr ' ' '\n' \
             | grep -E '^[a-z0-9][a-z0-9+.-]+$' | grep -vxE 'apt-get|install|rm|update'); do
    [[ "$setup_pkgs" == *" $pkg "* ]] || fail "the Dockerfile installs $pkg, which scripts/setup.sh does not list"
done

legacy="$("${clean_env[@]}" bash -c '. "$0/bin/setenv.bash"; echo "$ASCEND_HOME_PATH"' "$ROOT")"
[ "$legacy" = "$ROOT" ] && ok "bin/setenv.bash sources set_env.sh" || fail "bin/setenv.bash gave '$legacy'"

# --- consumers --------------------------------------------------------------------------------
build_ok() { # build_ok <name> <command...>
    local name="$1"; shift
    if in_root_env "$@" >"$WORK/$name.build.log" 2>&1; then return 0; fi
    fail "building $name:"; cat "$WORK/$name.build.log"; return 1
}
run_consumer() { # run_consumer <name> <executable>
    local out
    out="$(in_root_env "$2" 2>&1)" || { fail "$1 exited non-zero: $out"; return; }
    case "$out" in
        *"$EXPECT_VALUE lib=$ROOT/lib64/libascendcl.so"*) ok "$1: $out" ;;
        *) fail "$1 printed: $out" ;;
    esac
}

if build_ok cmake-configure "$CMAKE" -S "$HERE/consumer" -B "$WORK/cmake-consumer" -DCMAKE_BUILD_TYPE=Release \
   && build_ok cmake-build "$CMAKE" --build "$WORK/cmake-consumer"; then
    grep -q "aclvmm $VERSION from $ROOT/lib64/cmake/aclvmm, includes $ROOT/include\$" \
        "$WORK/cmake-configure.build.log" && ok "find_package found aclvmm $VERSION in the root" \
        || { fail "find_package did not report the root:"; cat "$WORK/cmake-configure.build.log"; }
    run_consumer cmake-ascendcl "$WORK/cmake-consumer/consumer_ascendcl"
    run_consumer cmake-acl_rt "$WORK/cmake-consumer/consumer_acl_rt"
fi

# Without set_env.sh: the root as CMAKE_PREFIX_PATH (Debian's CMake searches no lib64 directory:
# share/cmake/aclvmm forwards), or aclvmm_DIR; each reports the include directory once.
for how in "CMAKE_PREFIX_PATH=$ROOT share/cmake/aclvmm" "aclvmm_DIR=$ROOT/lib64/cmake/aclvmm lib64/cmake/aclvmm"; do
    set -- $how
    log="$WORK/cmake-${1%%=*}.log"
    if (cd "$WORK" && "${clean_env[@]}" "$CMAKE" -S "$HERE/consumer" -B "$WORK/cmake-${1%%=*}" \
            -DCMAKE_BUILD_TYPE=Release "-D$1") >"$log" 2>&1 \
       && grep -q "aclvmm $VERSION from $ROOT/$2, includes $ROOT/include\$" "$log"; then
        ok "find_package with -D$1 and no set_env.sh"
    else
        fail "find_package with -D$1 and no set_env.sh:"; cat "$log"
    fi
done

# From the build tree, never installed (its export): the library in <build>, the headers in the
# source tree; the consumer finds the library by its build RPATH, without set_env.sh.
SRC_INCLUDE="$(cd "$HERE/../../include" && pwd)"
BUILD_ABS="$(cd "$BUILD" && pwd)"
for how in "aclvmm_DIR=$BUILD_ABS" "CMAKE_PREFIX_PATH=$BUILD_ABS"; do
    tree="$WORK/cmake-build-tree-${how%%=*}"
    log="$tree.log"
    if (cd "$WORK" && "${clean_env[@]}" "$CMAKE" -S "$HERE/consumer" -B "$tree" -DCMAKE_BUILD_TYPE=Release \
            "-D$how" && "${clean_env[@]}" "$CMAKE" --build "$tree") >"$log" 2>&1 \
       && grep -q "aclvmm $VERSION from $BUILD_ABS, includes $SRC_INCLUDE\$" "$log"; then
        out="$("${clean_env[@]}" "$tree/consumer_acl_rt" 2>&1)" || true
        case "$out" in
            *"$EXPECT_VALUE lib=$BUILD_ABS/libascendcl.so"*) ok "build tree with -D$how: $out" ;;
            *) fail "build-tree consumer (-D$how) printed: $out" ;;
        esac
    else
        fail "find_package from the build tree with -D$how:"; cat "$log"
    fi
done

pcver="$(in_root_env pkg-config --modversion aclvmm)"
[ "$pcver" = "$VERSION" ] && ok "pkg-config aclvmm $pcver" || fail "pkg-config --modversion aclvmm: '$pcver'"
for pc in aclvmm ascendcl acl_rt; do
    # shellcheck disable=SC2016
    build_ok "pc-$pc" sh -c '$CC -Wall -Werror $(pkg-config --cflags '"$pc"') "$0" -o "pc-'"$pc"'" $(pkg-config --libs '"$pc"')' \
        "$HERE/consumer.c" && run_consumer "pkg-config $pc" "$WORK/pc-$pc"
done

for lib in ascendcl acl_rt; do
    build_ok "vendor-$lib" "$CC" -O2 -Wall -Werror -I"$ROOT/include" "$HERE/consumer.c" -o "vendor-$lib" \
        -L"$ROOT/lib64" -l"$lib" && run_consumer "vendor -l$lib" "$WORK/vendor-$lib"
done
# The same binary without set_env.sh but with the samples' LD_LIBRARY_PATH line.
out="$("${clean_env[@]}" LD_LIBRARY_PATH="$ROOT/lib64" "$WORK/vendor-ascendcl" 2>&1)" || true
case "$out" in
    *"$EXPECT_VALUE lib=$ROOT/lib64/libascendcl.so"*) ok "vendor binary with LD_LIBRARY_PATH only" ;;
    *) fail "vendor binary with LD_LIBRARY_PATH only: $out" ;;
esac

if [ "$failures" -ne 0 ]; then
    echo "install test: $failures failure(s)"
    exit 1
fi
echo "install test: all checks passed"
rm -rf "$WORK"
