#!/usr/bin/env bash
# run_examples_under_recorder.sh WORKDIR EXAMPLE...: the examples over the hal backend and the
# fake driver library, each run by aclvmm-hal-record (docs/hal.md §6). Asserts that every example
# exits 0 under the recorder, that every trace line is JSON naming a function, and that the
# driver calls each example's API calls stand for were recorded, in every process that made them.
#
# Environment (set by examples/CMakeLists.txt): REC_SCRIPT the script in the build tree,
# FAKE_HAL the fake driver library, PYTHON the interpreter.
set -euo pipefail
WORK="$1"
shift
rm -rf "$WORK"
mkdir -p "$WORK"

fail() {
    echo "FAIL: $*"
    exit 1
}

# The driver functions an example must have called (in some process of it).
expected() {
    case "$(basename "$1")" in
    *01_basic_lifecycle) echo "halDeviceOpen halMemCreate halMemAddressReserve halMemMap halMemUnmap halMemRelease halMemAddressFree drvMemcpy halDeviceClose" ;;
    *02_expandable_arena) echo "halMemCreate halMemMap halMemUnmap halMemRelease halMemGetInfo" ;;
    *03_sleep_wake) echo "halMemCreate halMemMap drvMemcpy halMemUnmap halMemRelease" ;;
    *04_share_whitelist) echo "halMemExportToShareableHandle halMemSetPidToShareableHandle halMemImportFromShareableHandle halMemShareHandleInfoGet" ;;
    *05_share_open) echo "halMemExportToShareableHandle halMemShareHandleSetAttribute halMemImportFromShareableHandle" ;;
    *) echo "" ;;
    esac
}

for example in "$@"; do
    name="$(basename "$example")"
    dir="$WORK/$name"
    mkdir -p "$dir"
    (cd "$dir" && ACLVMM_DRIVER=hal ACLVMM_HAL_LIBRARY="$FAKE_HAL" \
        "$REC_SCRIPT" -o "$dir/trace.%p.jsonl" -- "$example" > "$dir/output.txt" 2>&1) ||
        { cat "$dir/output.txt"; fail "$name exited non-zero under the recorder"; }
    "$PYTHON" - "$dir" $(expected "$example") <<'PY' || fail "$name: the trace is not what was expected"
import glob, json, sys
directory, wanted = sys.argv[1], sys.argv[2:]
files = sorted(glob.glob(directory + "/trace.*.jsonl"))
if not files:
    sys.exit("no trace file in " + directory)
seen = set()
for path in files:
    with open(path) as f:
        for number, line in enumerate(f, 1):
            record = json.loads(line)  # raises on a line that is not JSON
            if not isinstance(record.get("fn"), str) or "ret" not in record:
                sys.exit("%s:%d lacks fn or ret: %s" % (path, number, line[:200]))
            seen.add(record["fn"])
missing = [fn for fn in wanted if fn not in seen]
if missing:
    sys.exit("not recorded: %s (recorded: %s)" % (" ".join(missing), " ".join(sorted(seen))))
print("%s: %d file(s), %d functions" % (directory, len(files), len(seen)))
PY
done
