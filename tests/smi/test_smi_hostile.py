"""Statistics segments among hostile users and forked children (docs/smi.md, "Another user").

The segment directory is shared with every user, like /dev/shm: each test makes its own sticky,
world-writable directory. A real second uid ("nobody") plays the other user: it plants files under
the names a process will use, truncates and rewrites everything it can reach, and keeps a
segment-looking file shrinking and growing while aclvmm-smi reads the directory. The victims are
root's smi_child processes and aclvmm-smi itself: none may crash, hang, adopt a planted file or
list what is not a valid segment. Forked children of a process must not count into its file.

Needs root (CI runs the suite as root); skipped otherwise. Run by ctest (tests/smi/CMakeLists.txt).
"""
import json
import os
import pwd
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import traceback
import unittest

from test_smi import CHILD, MIB, SEGMENT_SIZE, TOOL, segment_bytes, start_time

WARNING = "aclvmm-smi will not show this process"

try:
    _nobody = pwd.getpwnam("nobody")
    NOBODY_UID, NOBODY_GID = _nobody.pw_uid, _nobody.pw_gid
except KeyError:
    NOBODY_UID = NOBODY_GID = 65534

needs_root = unittest.skipUnless(os.geteuid() == 0, "needs root to act as a second uid")


def drop_to_nobody():
    os.setgroups([])
    os.setresgid(NOBODY_GID, NOBODY_GID, NOBODY_GID)
    os.setresuid(NOBODY_UID, NOBODY_UID, NOBODY_UID)


def as_nobody(fn):
    """Runs fn() in a child that is nobody for good; returns what fn returned (JSON-able)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            drop_to_nobody()
            os.write(w, json.dumps(fn()).encode())
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise AssertionError("the nobody child failed")
    return json.loads(data)


def file_used(path):
    """(used on device 0, used on device 1) as the segment file says."""
    with open(path, "rb") as f:
        data = f.read()
    return struct.unpack_from("<Q", data, 128 + 8)[0], struct.unpack_from("<Q", data, 192 + 8)[0]


def attack_everything(directory, victim):
    """As nobody: every modification it can try on every entry; counts what was tried and what
    was allowed, on everything and on `victim` (a name, never unlinked: the test still needs it)."""
    tried = allowed = victim_allowed = 0
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        attempts = [
            lambda: os.truncate(path, 0),
            lambda: os.truncate(path, 4096),
            lambda: os.close(os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NONBLOCK | os.O_NOFOLLOW)),
            lambda: os.rename(path, path + ".moved"),
        ]
        if not os.path.islink(path):
            attempts.append(lambda: os.chmod(path, 0o666))
        if name != victim:
            attempts.append(lambda: os.unlink(path))
        for attempt in attempts:
            tried += 1
            try:
                attempt()
                allowed += 1
                victim_allowed += name == victim
                if os.path.lexists(path + ".moved"):
                    os.rename(path + ".moved", path)
            except OSError:
                pass
    return {"tried": tried, "allowed": allowed, "victim_allowed": victim_allowed}


class Victim:
    """A root smi_child that waits for "go" before its runtime starts (SMI_CHILD_WAIT=1)."""

    def __init__(self, env):
        self.proc = subprocess.Popen([CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=dict(env, SMI_CHILD_WAIT="1"), text=True)
        word, pid = self.proc.stdout.readline().split()
        assert word == "waiting", word
        self.pid = int(pid)

    def line(self):
        return self.proc.stdout.readline().split()

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def expect(self, word):
        line = self.line()
        if not line or line[0] != word:
            raise AssertionError(f"smi_child said {line!r} (exit {self.proc.poll()}), expected {word}")
        return int(line[1]), int(line[2])

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@needs_root
class SmiHostileTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="aclvmm-smi-hostile.")
        os.chmod(self.root, 0o755)  # nobody must reach the segment directory inside
        self.dir = os.path.join(self.root, "shm")
        os.mkdir(self.dir)
        os.chmod(self.dir, 0o1777)  # like /dev/shm
        self.logs = os.path.join(self.root, "logs")
        self.env = dict(os.environ, ACLVMM_SMI_DIR=self.dir, ASCEND_PROCESS_LOG_PATH=self.logs,
                        ACLVMM_DEVICE_COUNT="4", ACLVMM_DEVICE_MEMORY="1G",
                        ASCEND_GLOBAL_LOG_LEVEL="2")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
            for stream in (p.stdin, p.stdout):
                if stream and not stream.closed:
                    stream.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def victim(self):
        v = Victim(self.env)
        self.procs.append(v.proc)
        return v

    def warnings(self, pid):
        count = 0
        for dirpath, _, files in os.walk(self.logs):
            for name in files:
                if name.startswith(f"plog-{pid}_"):
                    with open(os.path.join(dirpath, name), errors="replace") as f:
                        count += f.read().count(WARNING)
        return count

    def smi_json(self, *args, user=None):
        out = subprocess.run([TOOL, "--json", "--keep-stale", "--dir", self.dir, *args],
                             capture_output=True, text=True, timeout=30, user=user,
                             group=NOBODY_GID if user is not None else None,
                             extra_groups=[] if user is not None else None)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def assert_segment_is_the_victims(self, path, victim, used):
        st = os.lstat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual((st.st_uid, st.st_nlink, stat.S_IMODE(st.st_mode), st.st_size),
                         (0, 1, 0o644, SEGMENT_SIZE))
        self.assertEqual(file_used(path), used)
        with open(path, "rb") as f:
            magic, _, _, pid = struct.unpack_from("<IIIi", f.read(16))
        self.assertEqual((magic, pid), (0x534D5641, victim.pid))

    # Item 6: what another user plants under the names a process will use.
    PLANTS = ["nothing", "old temp name: file", "old temp name: symlink", "old temp name: hard link",
              "old temp name: fifo", "random-looking temp names", "final name: file",
              "final name: symlink", "final name: hard link", "final name: fifo"]
    RUNS = 3

    def plant(self, kind, pid):
        final = os.path.join(self.dir, f"aclvmm.0.{pid}")
        bait = os.path.join(self.root, "bait")  # a file of root's that a symlink points at
        target = final if kind.startswith("final name") else final + ".tmp"

        def work():
            own = os.path.join(self.dir, f"nobody-{pid}")
            with open(own, "wb") as f:
                f.write(b"N" * SEGMENT_SIZE)
            os.chmod(own, 0o666)
            if kind == "random-looking temp names":
                for i in range(64):
                    with open(f"{final}.tmp-{i:016x}", "wb") as f:
                        f.write(b"N")
            elif kind.endswith("file"):
                with open(target, "wb") as f:
                    f.write(b"N" * SEGMENT_SIZE)
                os.chmod(target, 0o666)
            elif kind.endswith("symlink"):
                os.symlink(bait, target)
            elif kind.endswith("hard link"):
                os.link(own, target)
            elif kind.endswith("fifo"):
                os.mkfifo(target, 0o666)
            return None

        with open(bait, "wb") as f:
            f.write(b"bait")
        as_nobody(work)
        planted = {}
        for name in os.listdir(self.dir):
            st = os.lstat(os.path.join(self.dir, name))
            planted[name] = (st.st_ino, st.st_uid, st.st_size, st.st_mode)
        return final, planted

    def test_planted_names_are_never_adopted(self):
        attacks = 0
        for kind in self.PLANTS:
            for run in range(self.RUNS):
                with self.subTest(kind=kind, run=run):
                    attacks += self.one_planted_run(kind)
                for name in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, name))
        print(f"planted: {len(self.PLANTS)} kinds x {self.RUNS} runs; {attacks} modifications "
              "tried by nobody, none of the victim's file allowed", file=sys.stderr)

    def one_planted_run(self, kind):
        v = self.victim()
        final, planted = self.plant(kind, v.pid)
        victim_name = os.path.basename(final)
        v.send("go")
        used = v.expect("ready")
        self.assertEqual(used[0], 6 * MIB)
        # What the victim's start did to the directory, checked below.
        after_start = {n: os.lstat(os.path.join(self.dir, n)) for n in os.listdir(self.dir)}
        # Nobody tries every modification on every entry, and the victim keeps allocating: had it
        # adopted a planted file, the truncation would kill it here (SIGBUS).
        result = as_nobody(lambda: attack_everything(self.dir, victim_name))
        v.send("churn 8")
        self.assertEqual(v.expect("churned"), used)

        publishes = not kind.startswith("final name")
        if publishes:
            self.assertEqual(result["victim_allowed"], 0, "nobody changed the victim's file")
            self.assert_segment_is_the_victims(final, v, used)
            self.assertEqual(self.warnings(v.pid), 0)
            listing = self.smi_json()
            self.assertEqual([p["pid"] for p in listing["processes"]], [v.pid])
        else:
            # The final name is nobody's: neither replaced nor adopted; one WARNING, and on.
            self.assertEqual(self.warnings(v.pid), 1)
        # Nothing planted was taken over by the start: every entry nobody made is still there,
        # with the same inode, owner, size and type.
        for name, facts in planted.items():
            self.assertIn(name, after_start)
            st = after_start[name]
            self.assertEqual((st.st_ino, st.st_uid, st.st_size, st.st_mode), facts, name)
        # And no temporary file of the victim's was left.
        self.assertEqual(sorted(set(after_start) - set(planted) - {victim_name}), [])

        v.send("free")
        freed = v.expect("freed")
        self.assertEqual(freed, (4 * MIB, 2 * MIB))
        if publishes:
            self.assertEqual(file_used(final), freed)
        self.assertEqual(v.close(), 0)
        if publishes:
            self.assertFalse(os.path.lexists(final), "the victim removes its file at exit")
        return result["tried"]

    def test_unsafe_directories_are_not_used(self):
        """Directories whose names someone else could rearrange: go on without the file."""
        cases = [
            ("world-writable, not sticky", 0o777, 0, False),
            ("group-writable, not sticky", 0o775, 0, False),
            ("another user's, not sticky", 0o755, NOBODY_UID, False),
            ("another user's, sticky", 0o1777, NOBODY_UID, True),
            ("root's, 0755", 0o755, 0, True),
            ("root's, sticky and world-writable", 0o1777, 0, True),
        ]
        for name, mode, owner, used in cases:
            with self.subTest(name):
                d = os.path.join(self.root, name.replace(" ", "_").replace(",", "").replace("'", ""))
                os.mkdir(d)
                os.chown(d, owner, -1)
                os.chmod(d, mode)
                env = dict(self.env, ACLVMM_SMI_DIR=d)
                p = subprocess.Popen([CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True)
                self.procs.append(p)
                self.assertEqual(p.stdout.readline().split()[0], "ready")
                files = [n for n in os.listdir(d) if n.startswith("aclvmm.")]
                self.assertEqual(files, [f"aclvmm.0.{p.pid}"] if used else [])
                self.assertEqual(self.warnings(p.pid), 0 if used else 1)
                p.stdin.close()
                self.assertEqual(p.wait(timeout=30), 0)
                self.assertEqual([n for n in os.listdir(d) if n.startswith("aclvmm.")], [])

    # Fork: a child's charges are its own.
    def test_forked_child_counts_into_its_own_file_only(self):
        env = dict(self.env, SMI_CHILD_WAIT="0")
        p = subprocess.Popen([CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        self.procs.append(p)
        ready = p.stdout.readline().split()
        self.assertEqual(ready[0], "ready")
        used = (int(ready[1]), int(ready[2]))
        parent_file = os.path.join(self.dir, f"aclvmm.0.{p.pid}")
        self.assertEqual(file_used(parent_file), used)
        for run in range(self.RUNS):
            with self.subTest(run=run):
                p.stdin.write("fork\n")
                p.stdin.flush()
                words = p.stdout.readline().split()
                self.assertEqual(words[0], "child", words)
                child, init, alloc = int(words[1]), int(words[5]), int(words[6])
                # Whatever the child did in the runtime it inherited, the parent's file is the
                # parent's: the same bytes as before the fork.
                self.assertEqual(file_used(parent_file), used)
                self.assertEqual((init, alloc), (0, 0), "the child starts a runtime of its own")
                child_file = os.path.join(self.dir, f"aclvmm.0.{child}")
                self.assertEqual(file_used(child_file), (2 * MIB, 0))
                listing = self.smi_json()
                self.assertEqual(sorted(q["pid"] for q in listing["processes"]), sorted([p.pid, child]))
                p.stdin.write("reap\n")
                p.stdin.flush()
                self.assertEqual(p.stdout.readline().split(), ["reaped", "0"])
                self.assertFalse(os.path.lexists(child_file), "the child removes its own file")
                self.assertEqual(file_used(parent_file), used, "and leaves the parent's alone")
        p.stdin.write("free\n")
        p.stdin.flush()
        freed = p.stdout.readline().split()
        self.assertEqual(freed, ["freed", str(4 * MIB), str(2 * MIB)])
        self.assertEqual(file_used(parent_file), (4 * MIB, 2 * MIB))
        p.stdin.close()
        self.assertEqual(p.wait(timeout=30), 0)
        self.assertFalse(os.path.lexists(parent_file))

    # Item 7: aclvmm-smi reading files another user controls.
    SMI_RUNS = 200

    def test_monitor_survives_hostile_files(self):
        env = dict(self.env, SMI_CHILD_WAIT="0")
        victims = []
        for _ in range(2):
            p = subprocess.Popen([CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                 text=True)
            self.procs.append(p)
            words = p.stdout.readline().split()
            self.assertEqual(words[0], "ready")
            victims.append((p.pid, int(words[1]), int(words[2])))

        # Static hostile files, planted by nobody with names that look like segments.
        me = os.getpid()

        def plant():
            uid = NOBODY_UID
            pid = os.getpid()
            good = segment_bytes(pid, start_time(pid), "hostile", "x", [(MIB, MIB)])
            good = good[:24] + struct.pack("<I", uid) + good[28:]
            bad_fields = {
                "wrong magic": (0, b"\0\0\0\0"),
                "version 0": (4, struct.pack("<I", 0)),
                "version 3": (4, struct.pack("<I", 3)),
                "size 9999": (8, struct.pack("<I", 9999)),
                "device_count 65": (28, struct.pack("<i", 65)),
                "device_count -1": (28, struct.pack("<i", -1)),
                "active 7": (80, struct.pack("<I", 7)),
            }
            fake = 400000
            for i, (what, (offset, data)) in enumerate(bad_fields.items()):
                with open(os.path.join(self.dir, f"aclvmm.{uid}.{fake + i}"), "wb") as f:
                    f.write(good[:offset] + data + good[offset + len(data):])
            # The victims' uid and a live pid (this test's), in a file nobody owns: a spoof.
            spoof = segment_bytes(me, start_time(me), "spoof", "x", [(MIB, MIB)])
            with open(os.path.join(self.dir, f"aclvmm.0.{me}"), "wb") as f:
                f.write(spoof)
            with open(os.path.join(self.dir, f"aclvmm.{uid}.{fake + 10}"), "wb") as f:
                f.write(os.urandom(SEGMENT_SIZE))  # garbage
            with open(os.path.join(self.dir, f"aclvmm.{uid}.{fake + 11}"), "wb") as f:
                f.write(good)
                f.truncate(1 << 40)  # huge (sparse)
            with open(os.path.join(self.dir, f"aclvmm.{uid}.{fake + 12}"), "wb") as f:
                f.write(good[:4096])  # a page: too short
            os.mkfifo(os.path.join(self.dir, f"aclvmm.{uid}.{fake + 13}"))  # must not block
            os.symlink("/dev/zero", os.path.join(self.dir, f"aclvmm.{uid}.{fake + 14}"))
            os.mkdir(os.path.join(self.dir, f"aclvmm.{uid}.{fake + 15}"))
            unreadable = os.path.join(self.dir, f"aclvmm.{uid}.{fake + 16}")
            with open(unreadable, "wb") as f:
                f.write(good)
            os.chmod(unreadable, 0)  # nobody's smi cannot read it (root's can: a dead pid)
            return len(bad_fields) + 8

        planted = as_nobody(plant)
        # And a device node, which only root can make.
        try:
            os.mknod(os.path.join(self.dir, f"aclvmm.0.{400020}"), 0o666 | stat.S_IFCHR, os.makedev(1, 5))
            planted += 1
        except OSError:
            pass

        # A nobody process keeps a valid-looking segment of its own pid shrinking and growing.
        hostile_pid = start_resizer(self.dir)
        listed_hostile = 0
        try:
            for run in range(self.SMI_RUNS):
                user = NOBODY_UID if run % 4 == 3 else None
                if run % 2 == 0:
                    listing = self.smi_json(user=user)
                    pids = {q["pid"]: q for q in listing["processes"]}
                    for pid, used0, used1 in victims:
                        self.assertIn(pid, pids, f"run {run}")
                        self.assertEqual([d["memory_used"] for d in pids[pid]["devices"]][:2], [used0, used1])
                    listed_hostile += hostile_pid in pids
                    self.assertEqual(set(pids) - {hostile_pid}, {v[0] for v in victims}, f"run {run}")
                else:
                    out = subprocess.run([TOOL, "--keep-stale", "--dir", self.dir], capture_output=True,
                                         text=True, timeout=30, user=user,
                                         group=NOBODY_GID if user is not None else None,
                                         extra_groups=[] if user is not None else None)
                    self.assertEqual(out.returncode, 0, f"run {run}: {out.stderr}")
                    for pid, _, _ in victims:
                        self.assertIn(str(pid), out.stdout)
        finally:
            os.kill(hostile_pid, signal.SIGKILL)
            _, status = os.waitpid(hostile_pid, 0)
        self.assertEqual(os.WTERMSIG(status), signal.SIGKILL, "the resizer ran until killed")
        print(f"monitor: {self.SMI_RUNS} runs (json and table, as root and nobody) under a resizing "
              f"file and {planted} planted files; the resizing file listed in {listed_hostile}",
              file=sys.stderr)


def start_resizer(directory):
    """A forked nobody process that cycles its own valid segment through the sizes 0, one page,
    full and huge, and rewrites parts of it with garbage, as fast as it can, until killed. Returns
    its pid once the file exists."""
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        with os.fdopen(r, "rb") as f:
            if f.read(1) != b"r":
                raise AssertionError("the resizer did not start")
        return pid
    try:
        os.close(r)
        drop_to_nobody()
        me = os.getpid()
        good = bytearray(segment_bytes(me, start_time(me), "hostile", "x", [(MIB, MIB)]))
        struct.pack_into("<I", good, 24, NOBODY_UID)
        fd = os.open(os.path.join(directory, f"aclvmm.{NOBODY_UID}.{me}"), os.O_RDWR | os.O_CREAT,
                     0o644)
        os.pwrite(fd, good, 0)
        os.write(w, b"r")
        os.close(w)
        while True:
            os.ftruncate(fd, 0)
            os.pwrite(fd, good, 0)
            os.ftruncate(fd, 4096)
            os.ftruncate(fd, SEGMENT_SIZE)
            os.pwrite(fd, good, 0)
            os.ftruncate(fd, 1 << 30)
            os.pwrite(fd, os.urandom(64), 64)
            os.pwrite(fd, good, 0)
    except BaseException:
        traceback.print_exc()
    os._exit(1)


if __name__ == "__main__":
    unittest.main()
