#!/usr/bin/env bash
# check_config_docs.sh <repo>: every environment variable the library reads (an "ACLVMM_*" or
# "ASCEND_*" string in src/, drivers/ or tools/) has a row in the README's configuration table and
# in docs/configuration.md, so that neither page can silently fall behind the code.
set -euo pipefail
REPO="$1"
failures=0

# The README's table is the one under "## Configuration", up to the next heading.
readme_table="$(sed -n '/^## Configuration/,/^## /p' "$REPO/README.md" | grep '^|' || true)"
config_rows="$(grep '^|' "$REPO/docs/configuration.md" || true)"

vars="$(grep -rhoE '"(ACLVMM|ASCEND)_[A-Z0-9_]+"' "$REPO/src" "$REPO/drivers" "$REPO/tools" | tr -d '"' | sort -u)"
[ -n "$vars" ] || { echo "FAIL: no variables found in the sources"; exit 1; }
for v in $vars; do
    if ! grep -qF "\`$v\`" <<<"$readme_table"; then
        echo "FAIL: $v is read by the library but has no row in README.md's configuration table"
        failures=$((failures + 1))
    fi
    if ! grep -qF "\`$v\`" <<<"$config_rows"; then
        echo "FAIL: $v is read by the library but has no row in docs/configuration.md"
        failures=$((failures + 1))
    fi
done
echo "$(wc -w <<<"$vars") variables checked, $failures missing row(s)"
[ "$failures" -eq 0 ]
