#!/usr/bin/env python3
"""check_trace.py MODE ...: asserts what the recorder wrote (run_recorder_test.sh calls it).

  basic TRACE CLIENT_OUT          the lines of `rec_client basic`, field by field
  fork DIR PREFIX CLIENT_OUT      one file per process, each with that process's calls only
  shared TRACE CLIENT_OUT         the same run with one file for all processes
  threads TRACE N M               N threads x M create/release pairs, no line interleaved
  truncate TRACE                  one over-long line, cut to a valid, marked line

Every line must be one JSON object with the schema of tools/hal-recorder/README.md.
Exit status 0 when every check passed; each failure is printed.
"""
import json
import os
import re
import sys

LINE_MAX = 4096
TOP_KEYS = ["seq", "t_ns", "pid", "tid", "fn", "args", "out", "ret"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def read_lines(path):
    """Every line of a trace parsed, with the top-level schema checked."""
    with open(path, "rb") as f:
        raw = f.read()
    check(raw.endswith(b"\n") or not raw, f"{path}: does not end with a newline")
    lines = []
    for i, b in enumerate(raw.splitlines(), 1):
        check(len(b) + 1 <= LINE_MAX, f"{path}:{i}: {len(b) + 1} bytes > {LINE_MAX}")
        try:
            text = b.decode("utf-8")
            obj = json.loads(text)
        except (UnicodeDecodeError, ValueError) as e:
            check(False, f"{path}:{i}: not JSON ({e}): {b[:200]!r}")
            continue
        keys = list(obj)
        check(keys[: len(TOP_KEYS)] == TOP_KEYS, f"{path}:{i}: keys {keys}")
        rest = keys[len(TOP_KEYS):]
        allowed = ["ret_name", "dur_ns", "missing", "truncated"]
        check([k for k in allowed if k in rest] == rest and "dur_ns" in rest,
              f"{path}:{i}: trailing keys {rest}")
        for k in ("seq", "t_ns", "pid", "tid", "dur_ns"):
            check(isinstance(obj.get(k), int) and obj.get(k) >= 0, f"{path}:{i}: {k} = {obj.get(k)!r}")
        check(isinstance(obj["args"], dict) and isinstance(obj["out"], dict), f"{path}:{i}: args/out")
        if isinstance(obj["ret"], int) and "ret_name" in obj and obj["ret_name"] != "UNKNOWN":
            check(obj["ret_name"].startswith("DRV_ERROR_"), f"{path}:{i}: ret_name {obj['ret_name']}")
        lines.append(obj)
    return lines


def client_pid(client_out):
    with open(client_out) as f:
        for line in f:
            if line.startswith("pid "):
                return int(line.split()[1])
    raise SystemExit(f"{client_out}: no pid line")


def is_hex(v):
    return isinstance(v, str) and re.fullmatch(r"0x[0-9a-f]+", v) is not None


# The calls of `rec_client basic`, in order: (fn, ret, ret_name or None, check(line) -> bool).
def basic_expectations(pid):
    def out_eq(**kw):
        return lambda l: all(l["out"].get(k) == v for k, v in kw.items())

    prop = {"side": 1, "side_name": "MEM_DEV_SIDE", "devid": 1, "module_id": 33, "pg_type": 1,
            "pg_type_name": "MEM_HUGE_PAGE_TYPE", "mem_type": 0, "mem_type_name": "MEM_HBM_TYPE",
            "reserve": "0x0"}
    token_hex = "".join(f"{v:02x}000000" for v in (1, 2, 3, 4, 5)) + "00" * 107 + "ab"
    alloc_flags = {"devid": 1, "virt": "MEM_DEV", "phy": "MEM_TYPE_HBM", "page": "MEM_PAGE_HUGE",
                   "align_exp": 9, "bits": ["MEM_ADVISE_P2P"], "module_id": 33}
    desc = [{"type": 3, "type_name": "MEM_ACCESS_TYPE_READWRITE",
             "location": {"id": i, "side": 1, "side_name": "MEM_DEV_SIDE"}, "rsv": [0, 0]}
            for i in (0, 1)]
    return [
        ("halGetAPIVersion", 0, None, lambda l: is_hex(l["args"]["version"]) and l["out"] == {"version": "0x72418"}),
        ("drvGetDevNum", 0, None, out_eq(count=2)),
        ("halGetHostID", 0, None, out_eq(hostId=65)),
        ("halGetSocVersion", 0, None, lambda l: l["args"]["dev"] == 0 and l["args"]["nameLen"] == 64
         and l["out"] == {"name": "Ascend910B1"}),
        ("halGetSocVersion", 0, None, lambda l: l["out"] == {"name": "Ascend\"9\\10\n\x01\xff"}),
        ("halSupportFeature", True, "absent", lambda l: l["args"] == {
            "dev": 0, "feature": 2, "feature_name": "FEATURE_SVM_GET_USER_MALLOC_ATTR"}),
        ("halSupportFeature", False, "absent", lambda l: l["args"]["feature"] == 6),
        ("halMemCtl", 0, None, lambda l: l["args"]["ctlType"] == 2
         and l["args"]["in"] == {"support_feature": "0x10", "devid": 0}
         and l["args"]["inSize"] == 16 and l["args"]["outSize"] == 16
         and l["out"] == {"outSize": 8, "out": "1010101010101010"}),
        ("halMemAddressReserve", 0, None, lambda l: l["args"]["size"] == 4 << 20
         and l["args"]["fixedVa"] == "0x0" and l["args"]["flags"] == "0x201"
         and l["args"]["flags_decoded"] == {"page_type": 1, "page_type_name": "MEM_HUGE_PAGE_TYPE",
                                            "DEVICE_SHARE": False, "REMOTE_MAP": True}
         and l["out"] == {"va": "0x120000000000"}),
        ("halMemCreate", 0, None, lambda l: l["args"]["prop"] == prop and l["args"]["flags"] == "0x0"
         and l["args"]["size"] == 2 << 20 and l["out"] == {"handle": "0x5a100"}),
        ("halMemCreate", 3, "DRV_ERROR_INVALID_VALUE", lambda l: l["args"]["size"] == 0 and l["out"] == {}),
        ("halMemCreate", 3, "DRV_ERROR_INVALID_VALUE", lambda l: l["args"]["prop"] == "0x10"),
        ("halMemSetAccess", 0, None, lambda l: l["args"]["count"] == 2 and l["args"]["desc"] == desc),
        ("halMemGetAccess", 0, None, lambda l: l["args"]["location"] == {"id": 1, "side": 1, "side_name": "MEM_DEV_SIDE"}
         and l["out"] == {"flags": "0x3"}),
        ("halMemExportToShareableHandleV2", 0, None, lambda l: l["args"]["handle"] == "0x5a100"
         and l["args"]["type_name"] == "MEM_HANDLE_TYPE_FABRIC"
         and l["out"]["token"] == {"u32": [1, 2, 3, 4, 5], "hex": token_hex}),
        ("halMemShareHandleSetAttribute", 0, None, lambda l: l["args"] == {
            "token": "0x100000001", "type": 0, "value": {"enableFlag": 1, "rsv": [0] * 7 + [0x77]}}),
        ("halMemManagedAdvise", 0, None, lambda l: l["args"] == {
            "ptr": "0x90000000000", "size": 2 << 20, "advice": 2, "advice_name": "PREFER_LOCATION",
            "location": {"type": 1, "type_name": "DRV_UVM_LOCATION_TYPE_DEVICE", "id": 3}}),
        ("halMemAlloc", 0, None, lambda l: l["args"]["flags"] == "0x2100000002924401"
         and l["args"]["flags_decoded"] == alloc_flags and l["out"] == {"ptr": "0x100000001000"}),
        ("drvMemGetAttribute", 0, None, lambda l: l["args"]["ptr"] == "0x100000001000" and l["out"]["attr"] == {
            "memType": "0x14", "memType_bits": ["DV_MEM_SVM_DEVICE", "DV_MEM_LOCK_DEV"], "resv1": 0,
            "resv2": 0, "devId": 1, "pageSize": 0x200000, "resv": [0] * 7 + [9]}),
        ("halMemGetInfo", 0, None, lambda l: l["args"]["type_name"] == "MEM_INFO_TYPE_HBM_SIZE" and l["out"] == {
            "phy_info": {"total": 1000, "free": 500, "huge_total": 64, "huge_free": 32,
                         "giant_total": 2, "giant_free": 1}}),
        ("halDeviceClose", 0, None, lambda l: l["args"]["in"] == {
            "close_type": 0, "close_type_name": "DEV_CLOSE_HOST_DEVICE", "reserve0": 0}),
        ("halMapErrorCode", 1003, "absent", lambda l: l["args"] == {"code": 3, "code_name": "DRV_ERROR_INVALID_VALUE"}),
        ("drvDeviceGetBareTgid", pid, "absent", lambda l: l["args"] == {}),
        ("halMemMapNoAccess", 0xfffe, "DRV_ERROR_NOT_SUPPORT", lambda l: l.get("missing") is True
         and l["out"] == {} and l["dur_ns"] == 0 and l["args"]["handle"] == "0x5a100"),
        ("halMemRelease", 0, None, lambda l: l["args"] == {"handle": "0x5a100"}),
    ]


def check_basic(trace, client_out):
    pid = client_pid(client_out)
    lines = read_lines(trace)
    expected = basic_expectations(pid)
    check(len(lines) == len(expected), f"basic: {len(lines)} lines, expected {len(expected)}: "
          f"{[l['fn'] for l in lines]}")
    seqs = [l["seq"] for l in lines]
    check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"basic: seq not increasing: {seqs}")
    for i, (l, (fn, ret, name, pred)) in enumerate(zip(lines, expected)):
        where = f"basic line {i + 1} ({fn})"
        if not check(l["fn"] == fn, f"{where}: fn is {l['fn']}"):
            continue
        check(l["pid"] == pid and l["tid"] == pid, f"{where}: pid/tid {l['pid']}/{l['tid']} != {pid}")
        check(l["ret"] == ret and type(l["ret"]) is type(ret), f"{where}: ret {l['ret']!r} != {ret!r}")
        if name == "absent":
            check("ret_name" not in l, f"{where}: unexpected ret_name")
        else:
            check(l.get("ret_name") == (name or "DRV_ERROR_NONE"), f"{where}: ret_name {l.get('ret_name')}")
        check("missing" in l or fn != "halMemMapNoAccess", f"{where}: not marked missing")
        check("missing" not in l or fn == "halMemMapNoAccess", f"{where}: marked missing")
        check("truncated" not in l, f"{where}: truncated")
        try:
            ok = pred(l)
        except (KeyError, TypeError) as e:
            ok = False
            check(False, f"{where}: {type(e).__name__} {e}")
        check(ok, f"{where}: decoded fields differ: {json.dumps(l)}")
    # the driver's own inner halGetHostID (inside halMemCreate) is not a line of its own
    check(sum(l["fn"] == "halGetHostID" for l in lines) == 1, "basic: nested call recorded")


def children(client_out):
    with open(client_out) as f:
        return [int(l.split()[1]) for l in f if l.startswith("child ")]


def check_fork(directory, prefix, client_out):
    parent = client_pid(client_out)
    kids = children(client_out)
    check(len(kids) == 3, f"fork: children {kids}")
    files = sorted(f for f in os.listdir(directory) if f.startswith(prefix))
    want = sorted(f"{prefix}{p}.jsonl" for p in [parent] + kids)
    check(files == want, f"fork: files {files}, expected {want}")
    for p in [parent] + kids:
        path = os.path.join(directory, f"{prefix}{p}.jsonl")
        if not os.path.exists(path):
            continue
        lines = read_lines(path)
        check(all(l["pid"] == p for l in lines), f"fork: {path} holds another process's lines")
        if p == parent:
            check(len(lines) == 1 + 400, f"fork: parent wrote {len(lines)} lines, expected 401")
        else:
            fns = [l["fn"] for l in lines]
            check(fns == ["drvGetDevNum", "halGetHostID"] * 5, f"fork: child {p} wrote {fns}")
            check(all(l["tid"] == p for l in lines), f"fork: child {p} tid")


def check_shared(trace, client_out):
    parent = client_pid(client_out)
    kids = children(client_out)
    lines = read_lines(trace)
    by_pid = {}
    for l in lines:
        by_pid[l["pid"]] = by_pid.get(l["pid"], 0) + 1
    want = {parent: 401, **{k: 10 for k in kids}}
    check(by_pid == want, f"shared: lines per pid {by_pid}, expected {want}")


def check_threads(trace, n, m):
    lines = read_lines(trace)
    check(len(lines) == 2 * n * m, f"threads: {len(lines)} lines, expected {2 * n * m}")
    seqs = [l["seq"] for l in lines]
    check(len(set(seqs)) == len(seqs), "threads: duplicate seq")
    per_tid = {}
    for l in lines:
        per_tid.setdefault(l["tid"], []).append(l)
    check(len(per_tid) == n, f"threads: {len(per_tid)} threads seen, expected {n}")
    handles = set()
    for tid, ls in per_tid.items():
        fns = [l["fn"] for l in ls]
        check(fns == ["halMemCreate", "halMemRelease"] * m, f"threads: tid {tid} order {fns[:6]}...")
        for create, release in zip(ls[0::2], ls[1::2]):
            check(create["out"].get("handle") == release["args"].get("handle"),
                  f"threads: tid {tid} released another handle")
            handles.add(create["out"].get("handle"))
    check(len(handles) == n * m, f"threads: {len(handles)} distinct handles, expected {n * m}")


def check_truncate(trace):
    lines = read_lines(trace)
    if not check(len(lines) == 1, f"truncate: {len(lines)} lines"):
        return
    l = lines[0]
    check(l.get("truncated") is True, "truncate: no truncated marker")
    check(l["fn"] == "halMemSetAccess" and l["ret"] == 0 and l.get("ret_name") == "DRV_ERROR_NONE",
          f"truncate: fn/ret {l['fn']} {l['ret']}")
    desc = l["args"].get("desc", [])
    check(l["args"].get("count") == 64 and 0 < len(desc) < 64, f"truncate: {len(desc)} descs kept")
    check(all(d["rsv"] == [0xffffffff] * 2 and d["location"]["id"] == 4000000000 for d in desc),
          "truncate: a kept desc is damaged")
    with open(trace, "rb") as f:
        size = len(f.read())
    # the arguments stop at their own limit (LINE_MAX - 1024, room kept for the outputs)
    check(LINE_MAX - 1024 < size <= LINE_MAX, f"truncate: line of {size} bytes")


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == "basic":
        check_basic(*args)
    elif mode == "fork":
        check_fork(*args)
    elif mode == "shared":
        check_shared(*args)
    elif mode == "threads":
        check_threads(args[0], int(args[1]), int(args[2]))
    elif mode == "truncate":
        check_truncate(*args)
    else:
        raise SystemExit(f"unknown mode {mode}")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"check_trace {mode}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
