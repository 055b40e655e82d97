"""aclvmm-smi against real processes (docs/smi.md).

Each test gets its own segment directory (ACLVMM_SMI_DIR) and log directory, starts smi_child
processes that hold known amounts of device memory, and checks what `aclvmm-smi --json` and the
table report: exact bytes per device, the process's pid and name, updates after frees, removal
on normal exit, and that a SIGKILLed process's leftover segment is recognised as stale.

Run by ctest (tests/smi/CMakeLists.txt), which sets ACLVMM_SMI_TOOL and ACLVMM_SMI_CHILD.
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

MIB = 1 << 20
TOOL = os.environ.get("ACLVMM_SMI_TOOL", "aclvmm-smi")
CHILD = os.environ.get("ACLVMM_SMI_CHILD", "smi_child")
CHILD_NAME = "smi_child"  # comm of the child: its file name
UID = os.getuid()

# observability/smi_layout.h, written independently here so that the test also checks the layout.
MAGIC, VERSION, SEGMENT_SIZE, MAX_DEVICES = 0x534D5641, 2, 128 + 64 * 64, 64
LIVE_OFFSET = 96  # version 2: ipc_keys, ipc_imports, host_registrations, binaries (u64 each)
LIVE_KEYS = ("ipc_keys", "ipc_imports", "host_registrations", "binaries")
NO_LIVE = dict.fromkeys(LIVE_KEYS, 0)


def file_live(path):
    """The live counts as the segment file says: {key: count}."""
    with open(path, "rb") as f:
        data = f.read()
    return dict(zip(LIVE_KEYS, struct.unpack_from("<4Q", data, LIVE_OFFSET)))


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return int(stat[stat.rindex(")") + 2:].split()[19])  # field 22


def pid_namespace():
    return os.stat("/proc/self/ns/pid").st_ino


def segment_bytes(pid, start, name, soc, devices, magic=MAGIC, active=1, ns=None, version=VERSION,
                  live=(0, 0, 0, 0)):
    ns = pid_namespace() if ns is None else ns
    head = struct.pack("<IIIiQIi16s32sIIQ4Q", magic, version, SEGMENT_SIZE, pid, start, UID,
                       len(devices), name.encode(), soc.encode(), active, 0, ns, *live)
    body = b"".join(struct.pack("<QQ48x", total, used) for total, used in devices)
    return (head + body).ljust(SEGMENT_SIZE, b"\0")


class Child:
    """One smi_child process; answers are (used on device 0, used on device 1)."""

    def __init__(self, env):
        self.proc = subprocess.Popen([CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True)
        self.pid = self.proc.pid
        self.used = self.expect("ready")

    def expect(self, word):
        line = self.expect_words(word)
        return int(line[1]), int(line[2])

    def expect_words(self, word):
        line = self.proc.stdout.readline().split()
        if not line or line[0] != word:
            raise AssertionError(f"smi_child said {line!r}, expected '{word} ...'")
        return line

    def ask(self, command, word):
        """Sends the command; the words of its answer after `word`."""
        self.send(command)
        return self.expect_words(word)[1:]

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def finish(self, command):
        self.send(command)
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


class SmiTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="aclvmm-smi-test.")
        self.dir = os.path.join(self.root, "shm")
        self.logs = os.path.join(self.root, "logs")
        os.mkdir(self.dir)
        self.env = dict(os.environ, ACLVMM_SMI_DIR=self.dir, ASCEND_PROCESS_LOG_PATH=self.logs,
                        ACLVMM_DEVICE_COUNT="4", ACLVMM_DEVICE_MEMORY="1G")
        self.children = []

    def tearDown(self):
        for c in self.children:
            c.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def child(self, **extra_env):
        c = Child(dict(self.env, **extra_env))
        self.children.append(c)
        return c

    def smi(self, *args):
        out = subprocess.run([TOOL, *args], env=self.env, capture_output=True, text=True,
                             timeout=30, check=True)
        return json.loads(out.stdout) if "--json" in args else out.stdout

    def segment_path(self, pid):
        return os.path.join(self.dir, f"aclvmm.{UID}.{pid}")

    def process(self, listing, pid):
        found = [p for p in listing["processes"] if p["pid"] == pid]
        self.assertEqual(len(found), 1, listing)
        return found[0]

    def assert_usage(self, listing, pid, used):
        p = self.process(listing, pid)
        self.assertEqual(p["name"], CHILD_NAME)
        self.assertEqual(p["uid"], UID)
        self.assertEqual(p["soc"], "Ascend910B1")
        self.assertEqual(p["start_time"], start_time(pid))
        self.assertEqual([d["id"] for d in p["devices"]], [0, 1, 2, 3])
        self.assertEqual([d["memory_total"] for d in p["devices"]], [1 << 30] * 4)
        self.assertEqual([d["memory_used"] for d in p["devices"]], [used[0], used[1], 0, 0])

    def test_live_usage_follows_allocations_and_frees(self):
        a = self.child()
        # 3 x 2 MiB physical on device 0; 2 MiB physical + a 1 MiB aclrtMalloc on device 1.
        self.assertEqual(a.used[0], 6 * MIB)
        self.assertGreaterEqual(a.used[1], 3 * MIB)
        listing = self.smi("--json")
        self.assert_usage(listing, a.pid, a.used)
        self.assertEqual(listing["stale"], [])

        b = self.child()
        listing = self.smi("info", "--json")
        self.assertEqual([p["pid"] for p in listing["processes"]], sorted([a.pid, b.pid]))
        devices = {d["id"]: d for d in listing["devices"]}
        self.assertEqual(sorted(devices), [0, 1, 2, 3])
        self.assertEqual(devices[0]["memory_used"], 12 * MIB)
        self.assertEqual(devices[1]["memory_used"], a.used[1] + b.used[1])
        self.assertEqual(devices[2]["memory_used"], 0)
        self.assertEqual([devices[i]["processes"] for i in range(4)], [2, 2, 0, 0])
        self.assertEqual(devices[0]["memory_total"], 1 << 30)

        a.send("free")
        freed = a.expect("freed")
        self.assertEqual(freed, (4 * MIB, 2 * MIB))
        listing = self.smi("--json")
        self.assert_usage(listing, a.pid, freed)
        self.assert_usage(listing, b.pid, b.used)

    def test_finalize_and_exit_remove_the_process(self):
        a = self.child()
        b = self.child()
        path = self.segment_path(a.pid)
        inode = os.stat(path).st_ino
        a.send("finalize")  # the process lives on without aclvmm: not listed, file kept
        self.assertEqual(a.proc.stdout.readline(), "finalized\n")
        listing = self.smi("--json")
        self.assertEqual([p["pid"] for p in listing["processes"]], [b.pid])
        self.assertEqual(listing["stale"], [])
        self.assertEqual(os.stat(path).st_ino, inode)

        a.send("init")  # a second runtime start: listed again, through the same file
        self.assertEqual(a.expect("again"), (2 * MIB, 0))
        self.assert_usage(self.smi("--json"), a.pid, (2 * MIB, 0))
        self.assertEqual(os.stat(path).st_ino, inode)

        self.assertEqual(a.finish("quit"), 0)  # exit handler: teardown, then the file goes
        self.assertEqual(b.finish("finalize"), 0)  # aclFinalize, then a plain exit
        self.assertFalse(os.path.exists(path))
        self.assertFalse(os.path.exists(self.segment_path(b.pid)))
        listing = self.smi("--json")
        self.assertEqual(listing["processes"], [])
        self.assertEqual(listing["devices"], [])
        self.assertEqual(listing["stale"], [])

    def test_killed_process_segment_is_stale(self):
        a = self.child()
        b = self.child()
        os.kill(a.pid, signal.SIGKILL)
        a.proc.wait(timeout=30)
        path = self.segment_path(a.pid)
        self.assertTrue(os.path.exists(path), "SIGKILL leaves the segment behind")

        listing = self.smi("--json", "--keep-stale")
        self.assertEqual([p["pid"] for p in listing["processes"]], [b.pid])
        self.assertEqual(listing["stale"], [{"pid": a.pid, "path": path, "removed": False}])
        self.assertEqual({d["id"]: d["memory_used"] for d in listing["devices"]}[0], 6 * MIB)
        self.assertTrue(os.path.exists(path))
        self.assertNotIn(str(a.pid), self.smi("--keep-stale"))

        listing = self.smi("--json")
        self.assertEqual(listing["stale"], [{"pid": a.pid, "path": path, "removed": True}])
        self.assertFalse(os.path.exists(path))
        self.assertEqual([p["pid"] for p in self.smi("--json")["processes"]], [b.pid])

    def test_table_lists_devices_and_processes(self):
        a = self.child()
        table = self.smi()
        self.assertEqual(table, self.smi("info"))
        # "| NPU | Process id | Process name | Process memory(MB) |" rows, one per device in use.
        self.assertRegex(table, rf"\|\s+0\s+\|\s+{a.pid}\s+\|\s+{CHILD_NAME}\s+\|\s+6\s+\|")
        mb1 = a.used[1] // MIB
        self.assertRegex(table, rf"\|\s+1\s+\|\s+{a.pid}\s+\|\s+{CHILD_NAME}\s+\|\s+{mb1}\s+\|")
        self.assertRegex(table, r"\|\s+0\s+\|\s+Ascend910B1\s+\|\s+6 / 1024\s+\|\s+1\s+\|")
        self.assertEqual(len(re.findall(rf"\|\s+\d+\s+\|\s+{a.pid}\s+\|", table)), 2)
        # And one row of what it holds besides memory (nothing here).
        self.assertEqual(len(re.findall(rf"^\|\s+{a.pid}\s+\|", table, re.M)), 1)
        self.assertRegex(table, r"\|\s+Process id\s+\|\s+Process name\s+\|\s+IPC keys\s+\|\s+IPC imports\s+\|"
                                r"\s+Host reg\s+\|\s+Binaries\s+\|")
        self.assertRegex(table, rf"\|\s+{a.pid}\s+\|\s+{CHILD_NAME}\s+\|(\s+0\s+\|){{4}}")
        self.assertNotIn("No running processes found", table)
        a.finish("quit")
        table = self.smi()
        self.assertIn("No running processes found", table)
        self.assertIn("No devices reported", table)

    def test_reused_pid_and_foreign_files(self):
        me = os.getpid()
        live = segment_bytes(me, start_time(me), "writer", "Ascend910B4",
                             [(64 * MIB, 2 * MIB), (64 * MIB, 0)])
        with open(self.segment_path(me), "wb") as f:
            f.write(live)
        # This pid is alive but started at another time: its segment is a dead process's.
        parent = os.getppid()
        with open(self.segment_path(parent), "wb") as f:
            f.write(segment_bytes(parent, start_time(parent) + 1, "old", "Ascend910B4",
                                  [(64 * MIB, 4 * MIB)]))
        # Live processes whose segments are skipped, neither listed nor judged stale: one after
        # aclFinalize (inactive), one in another pid namespace (its pid means nothing here).
        sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
        skipped = []
        try:
            for proc, extra in zip(sleepers, ({"active": 0}, {"ns": pid_namespace() + 1})):
                path = self.segment_path(proc.pid)
                with open(path, "wb") as f:
                    f.write(segment_bytes(proc.pid, start_time(proc.pid), "skip", "x",
                                          [(MIB, MIB)], **extra))
                skipped.append(path)
            # Not segments of this layout: neither listed nor deleted.
            foreign = [os.path.join(self.dir, n) for n in (
                f"aclvmm.{UID}.1", "aclvmm.x.1", f"aclvmm.{UID}.{me}.tmp", "other.0.1")]
            for path in foreign:
                with open(path, "wb") as f:
                    f.write(segment_bytes(1, 0, "bad", "x", [], magic=0))

            listing = self.smi("--json")
        finally:
            for proc in sleepers:
                proc.kill()
                proc.wait()
        self.assertEqual(listing["processes"], [{
            "pid": me, "uid": UID, "name": "writer", "start_time": start_time(me),
            "soc": "Ascend910B4", "devices": [
                {"id": 0, "memory_total": 64 * MIB, "memory_used": 2 * MIB},
                {"id": 1, "memory_total": 64 * MIB, "memory_used": 0}],
            "live": NO_LIVE}])
        self.assertEqual(listing["stale"], [
            {"pid": parent, "path": self.segment_path(parent), "removed": True}])
        self.assertEqual(listing["devices"], [
            {"id": 0, "soc": "Ascend910B4", "memory_total": 64 * MIB, "memory_used": 2 * MIB,
             "processes": 1},
            {"id": 1, "soc": "Ascend910B4", "memory_total": 64 * MIB, "memory_used": 0,
             "processes": 0}])
        for path in foreign + skipped:
            self.assertTrue(os.path.exists(path), path)

    def live(self, pid):
        return self.process(self.smi("--json"), pid)["live"]

    def test_live_counts_of_keys_imports_registrations_binaries(self):
        a = self.child()
        b = self.child()
        self.assertEqual(self.live(a.pid), NO_LIVE)
        keys = a.ask("keys 2", "keys")  # any process may import them
        self.assertEqual(len(keys), 2)
        # b: imports both, exports one key of its own, registers a host page, loads a binary.
        self.assertEqual(b.ask("hold " + " ".join(keys), "held"), [])
        listing = self.smi("--json")
        self.assertEqual(self.process(listing, a.pid)["live"],
                         {"ipc_keys": 2, "ipc_imports": 0, "host_registrations": 0, "binaries": 0})
        self.assertEqual(self.process(listing, b.pid)["live"],
                         {"ipc_keys": 1, "ipc_imports": 2, "host_registrations": 1, "binaries": 1})
        self.assertEqual(file_live(self.segment_path(b.pid)), self.process(listing, b.pid)["live"])
        # "| Process id | Process name | IPC keys | IPC imports | Host reg | Binaries |"
        table = self.smi()
        self.assertRegex(table, rf"\|\s+{b.pid}\s+\|\s+{CHILD_NAME}\s+\|\s+1\s+\|\s+2\s+\|\s+1\s+\|\s+1\s+\|")
        self.assertRegex(table, rf"\|\s+{a.pid}\s+\|\s+{CHILD_NAME}\s+\|\s+2\s+\|\s+0\s+\|\s+0\s+\|\s+0\s+\|")

        self.assertEqual(b.ask("release", "released"), [])
        self.assertEqual(self.live(b.pid), NO_LIVE)
        self.assertEqual(self.live(a.pid)["ipc_keys"], 2)
        self.assertEqual(a.ask("release", "released"), [])
        self.assertEqual(self.live(a.pid), NO_LIVE)
        self.assertRegex(self.smi(), rf"\|\s+{b.pid}\s+\|\s+{CHILD_NAME}\s+\|(\s+0\s+\|){{4}}")

        # The same key imported twice is one import (closed twice).
        keys = a.ask("keys 1", "keys")
        b.ask(f"hold {keys[0]} {keys[0]}", "held")
        self.assertEqual(self.live(b.pid),
                         {"ipc_keys": 1, "ipc_imports": 1, "host_registrations": 1, "binaries": 1})
        b.ask("release", "released")
        self.assertEqual(self.live(b.pid), NO_LIVE)

    def test_live_counts_after_teardown_and_restart(self):
        a = self.child()
        a.ask("hold", "held")  # a key of its own, a host page, a binary: left to the teardown
        self.assertEqual(self.live(a.pid),
                         {"ipc_keys": 1, "ipc_imports": 0, "host_registrations": 1, "binaries": 1})
        a.send("finalize")  # aclFinalize releases them (the leak report) and the counts go to 0
        self.assertEqual(a.proc.stdout.readline(), "finalized\n")
        self.assertEqual(file_live(self.segment_path(a.pid)), NO_LIVE)
        a.send("init")
        a.expect("again")
        self.assertEqual(self.live(a.pid), NO_LIVE)
        a.ask("hold", "held")  # the same file counts the new runtime's
        self.assertEqual(self.live(a.pid),
                         {"ipc_keys": 1, "ipc_imports": 0, "host_registrations": 1, "binaries": 1})

    def test_forked_child_live_counts_are_its_own(self):
        a = self.child()
        a.ask("keys 2", "keys")
        words = a.ask("fork", "child")
        child = int(words[0])
        # The child's own runtime: one registered host page (its last code), nothing inherited.
        self.assertEqual(words[4:], ["0", "0", "0"], words)
        listing = self.smi("--json")
        self.assertEqual(self.process(listing, a.pid)["live"],
                         {"ipc_keys": 2, "ipc_imports": 0, "host_registrations": 0, "binaries": 0})
        self.assertEqual(self.process(listing, child)["live"],
                         {"ipc_keys": 0, "ipc_imports": 0, "host_registrations": 1, "binaries": 0})
        self.assertEqual(a.ask("reap", "reaped"), ["0"])
        self.assertEqual(file_live(self.segment_path(a.pid))["ipc_keys"], 2)
        self.assertEqual(self.live(a.pid)["host_registrations"], 0)

    def test_version_1_segment_is_listed_with_zero_counts(self):
        sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
        try:
            old, new = (p.pid for p in sleepers)
            # Version 1: the same layout with reserved bytes where version 2 counts; whatever
            # they hold, the counts are zeros.
            with open(self.segment_path(old), "wb") as f:
                f.write(segment_bytes(old, start_time(old), "old", "Ascend910B1", [(MIB, 0)],
                                      version=1, live=(7, 7, 7, 7)))
            with open(self.segment_path(new), "wb") as f:
                f.write(segment_bytes(new, start_time(new), "new", "Ascend910B1", [(MIB, 0)],
                                      live=(3, 4, 5, 6)))
            listing = self.smi("--json")
            table = self.smi()
        finally:
            for proc in sleepers:
                proc.kill()
                proc.wait()
        self.assertEqual(self.process(listing, old)["live"], NO_LIVE)
        self.assertEqual(self.process(listing, new)["live"],
                         {"ipc_keys": 3, "ipc_imports": 4, "host_registrations": 5, "binaries": 6})
        self.assertRegex(table, rf"\|\s+{old}\s+\|\s+old\s+\|(\s+0\s+\|){{4}}")
        self.assertRegex(table, rf"\|\s+{new}\s+\|\s+new\s+\|\s+3\s+\|\s+4\s+\|\s+5\s+\|\s+6\s+\|")

    def test_publishing_failure_does_not_fail_the_application(self):
        # errno 13 (EACCES) for the segment's creation, then a directory that does not exist.
        # Level 2 logs WARNING lines (the default, 3, only errors).
        a = self.child(ACLVMM_FAULTS="drv.stats_segment:1:13", ASCEND_GLOBAL_LOG_LEVEL="2")
        b = self.child(ACLVMM_SMI_DIR=os.path.join(self.root, "missing"),
                       ASCEND_GLOBAL_LOG_LEVEL="2")
        self.assertEqual(a.used[0], 6 * MIB)
        self.assertEqual(b.used[0], 6 * MIB)
        self.assertEqual(os.listdir(self.dir), [])
        self.assertEqual(self.smi("--json")["processes"], [])
        self.assertEqual(a.finish("finalize"), 0)
        self.assertEqual(b.finish("finalize"), 0)
        warnings = {}
        for pid in (a.pid, b.pid):
            for dirpath, _, files in os.walk(self.logs):
                for name in files:
                    if name.startswith(f"plog-{pid}_"):
                        with open(os.path.join(dirpath, name), errors="replace") as f:
                            text = f.read()
                        warnings[pid] = warnings.get(pid, 0) + text.count(
                            "aclvmm-smi will not show this process")
        self.assertEqual(warnings, {a.pid: 1, b.pid: 1})

    def test_disabled_publishes_nothing(self):
        started = time.time()
        a = self.child(ACLVMM_SMI_DIR="none")
        self.assertEqual(a.used[0], 6 * MIB)
        # Nothing in the default directory either. A file of that name older than the child is
        # another process's that had the pid before (a run of the suite without tests/run.sh,
        # which leaves its files there), not this child's.
        default = f"/dev/shm/aclvmm.{UID}.{a.pid}"
        self.assertFalse(os.path.exists(default) and os.stat(default).st_mtime >= started - 1,
                         default)
        self.assertEqual(os.listdir(self.dir), [])
        env = dict(self.env, ACLVMM_SMI_DIR="none")
        out = subprocess.run([TOOL], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1)
        self.assertIn("publish no statistics", out.stderr)


if __name__ == "__main__":
    unittest.main()
