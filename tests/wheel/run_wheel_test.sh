#!/usr/bin/env bash
# run_wheel_test.sh <python> <cmake> <source-dir> <build-dir> <work-dir> <project-version>
#
# Builds the wheel from the existing build tree (no second compilation) with Debian's
# `python3 -m build --no-isolation`, installs it into fresh virtual environments and, from a
# directory outside the checkout with a clean environment, checks what a pip user gets:
# `import acl`, `aclvmm-smi --json`, `python -m aclvmm`, and a pytest file using the fixture
# npu_emulator (loaded by the wheel's pytest11 entry point) with two device counts and a
# subprocess that imports a shared handle. Then `pip install --no-build-isolation <checkout>`.
set -euo pipefail

if [ "$#" -ne 6 ]; then
    echo "usage: $0 <python> <cmake> <source-dir> <build-dir> <work-dir> <project-version>" >&2
    exit 2
fi
PY="$1" CMAKE="$2" SRC="$3" BUILD="$4" WORK="$5" VERSION="$6"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# A directory of its own per run: two runs on one build tree do not meet.
mkdir -p "$WORK"
WORK="$(mktemp -d "$WORK/run.XXXXXX")"
mkdir -p "$WORK/elsewhere"
# `python -m build` run from the checkout would import its build/ directory as the module.
cd "$WORK"
# Whatever the packaging writes into the checkout (setuptools' build/ and egg-info without
# ACLVMM_WHEEL_BUILD_BASE): entries of its top two levels changed since the stamp, build trees
# aside. No Git needed (a tarball or a Docker context has none).
touch "$WORK/stamp"
checkout_writes() { find "$SRC" -maxdepth 2 -newer "$WORK/stamp" -not -path "$SRC/build*" -not -path "$SRC" -print; }
export ACLVMM_CMAKE_BUILD_DIR="$BUILD" ACLVMM_WHEEL_BUILD_BASE="$WORK/setuptools" ACLVMM_CMAKE="$CMAKE"
"$PY" -m build --wheel --no-isolation --outdir "$WORK/dist" "$SRC" >"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log"; echo "FAIL: building the wheel"; exit 1; }
wheel="$(ls "$WORK"/dist/aclvmm-"$VERSION"-*.whl)"
ok "built $(basename "$wheel")"
[ -z "$(checkout_writes)" ] || fail "building the wheel wrote into the checkout: $(checkout_writes)"

# --- what the wheel holds ---------------------------------------------------------------
listing="$("$PY" -m zipfile -l "$wheel" | awk 'NR > 1 {print $1}')"
for f in acl.so aclvmm/__init__.py aclvmm/pytest_plugin.py aclvmm/lib/libascendcl.so \
         aclvmm/lib/libacl_rt.so aclvmm/bin/aclvmm-smi acl-stubs/__init__.pyi acl-stubs/rt.pyi \
         acl-stubs/util.pyi; do
    grep -qx "$f" <<<"$listing" || fail "the wheel has no $f"
done
entry="$("$PY" -m zipfile -e "$wheel" "$WORK/unpacked" && cat "$WORK"/unpacked/aclvmm-*.dist-info/entry_points.txt)"
grep -qx 'aclvmm = aclvmm.pytest_plugin' <<<"$entry" && grep -qx 'aclvmm-smi = aclvmm._smi:main' <<<"$entry" \
    && ok "entry points: pytest11 aclvmm, console script aclvmm-smi" || fail "entry points: $entry"
dyn="$(readelf -d "$WORK/unpacked/acl.so" "$WORK/unpacked/aclvmm/lib/libacl_rt.so")"
grep -q 'runpath: \[\$ORIGIN/aclvmm/lib\]' <<<"$dyn" && grep -q 'soname: \[libacl_rt.so\]' <<<"$dyn" \
    && ok "acl.so finds aclvmm/lib; libacl_rt.so is the shim" || fail "dynamic sections: $dyn"

# --- a fresh venv, used from elsewhere with a clean environment ---------------------------
clean=(env -i "HOME=$WORK" "PATH=/usr/bin:/bin" "ASCEND_PROCESS_LOG_PATH=$WORK/logs" "TMPDIR=$WORK")
"$PY" -m venv "$WORK/venv" && "${clean[@]}" "$WORK/venv/bin/pip" install -q --no-index "$wheel" \
    >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log"; fail "pip install of the wheel"; }
cd "$WORK/elsewhere"
out="$("${clean[@]}" "$WORK/venv/bin/python" -c 'import acl, acl.rt; print(acl.__file__, acl.init(), acl.rt.get_device_count())' 2>&1)"
[ "$out" = "$WORK/venv/lib/python3.$("$PY" -c 'import sys; print(sys.version_info[1])')/site-packages/acl.so 0 (8, 0)" ] \
    && ok "import acl: $out" || fail "import acl printed: $out"
if "${clean[@]}" "$WORK/venv/bin/aclvmm-smi" --json >"$WORK/smi.json" 2>"$WORK/smi.err" \
   && "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["version"] == sys.argv[2], d' \
        "$WORK/smi.json" "$VERSION"; then
    ok "aclvmm-smi --json: valid JSON, version $VERSION"
else
    fail "aclvmm-smi --json: $(cat "$WORK/smi.json" "$WORK/smi.err")"
fi
which="$("${clean[@]}" "$WORK/venv/bin/python" -m aclvmm 2>&1 || true)"
if grep -q "^library: $WORK/venv/lib/python3[.0-9]*/site-packages/aclvmm/lib/libascendcl.so$" <<<"$which" \
   && grep -qx "aclvmm: yes" <<<"$which"; then
    ok "python -m aclvmm names the venv's library"
else
    fail "python -m aclvmm: $which"
fi

# pytest is Debian's (no index here): a second fresh venv that also sees the system packages.
"$PY" -m venv --system-site-packages "$WORK/venv-pytest" \
    && "${clean[@]}" "$WORK/venv-pytest/bin/pip" install -q --no-index "$wheel" >"$WORK/pip2.log" 2>&1 \
    || { cat "$WORK/pip2.log"; fail "pip install into the pytest venv"; }
cp "$HERE/test_in_venv.py" "$HERE/../pytest_plugin/npu_scenarios.py" "$WORK/elsewhere/"
if "${clean[@]}" ACLVMM_TEST_VENV="$WORK/venv-pytest" PYTHONDONTWRITEBYTECODE=1 \
        "$WORK/venv-pytest/bin/python" -m pytest -p no:cacheprovider -v test_in_venv.py >"$WORK/pytest.log" 2>&1 \
   && grep -q "aclvmm: acl from $WORK/venv-pytest/.*acl.so, library $WORK/venv-pytest/.*libascendcl.so" "$WORK/pytest.log" \
   && grep -qE '(^| )4 passed' "$WORK/pytest.log"; then
    ok "pytest with the fixture in the venv: $(tail -1 "$WORK/pytest.log")"
else
    fail "pytest in the venv:"; cat "$WORK/pytest.log"
fi

# pip install of the checkout itself (the build tree is reused through ACLVMM_CMAKE_BUILD_DIR).
if "${clean[@]}" ACLVMM_CMAKE_BUILD_DIR="$BUILD" ACLVMM_WHEEL_BUILD_BASE="$WORK/setuptools-pip" \
        ACLVMM_CMAKE="$CMAKE" "$WORK/venv-pytest/bin/pip" install -q --no-index --no-build-isolation \
        --force-reinstall "$SRC" >"$WORK/pip3.log" 2>&1 \
   && [ "$("${clean[@]}" "$WORK/venv-pytest/bin/python" -c 'import acl; print(acl.init())')" = 0 ]; then
    ok "pip install --no-build-isolation <checkout>"
else
    fail "pip install --no-build-isolation <checkout>:"; cat "$WORK/pip3.log"
fi

[ -z "$(checkout_writes)" ] || fail "pip install wrote into the checkout: $(checkout_writes)"

if [ "$failures" -ne 0 ]; then
    echo "wheel test: $failures failure(s)"
    exit 1
fi
echo "wheel test: all checks passed"
cd /
rm -rf "$WORK"
