"""Sharing physical memory between two real Python processes through the binding.

The parent exports a handle, the child (share_child.py, its own interpreter and runtime) reports
its bare tgid, the parent whitelists it, the child imports, maps and reads the parent's bytes,
then writes bytes the parent reads back through its own mapping.
"""
import hashlib
import os
import select
import subprocess
import sys
import time

import acl
import acl.rt

from acl_constants import (ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_NO_PERMISSION,
                           ACL_MEM_HANDLE_TYPE_NONE, ACL_RT_VMM_EXPORT_FLAG_DEFAULT,
                           ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, ACL_SUCCESS, MIB, pattern)
from acl_helpers import Mapped, d2h, h2d

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "share_child.py")
TIMEOUT = 10  # seconds, bound on every wait for the child


class Child:
    """share_child.py as a subprocess, driven one command line at a time."""

    def __init__(self, token):
        self.proc = subprocess.Popen([sys.executable, CHILD, f"{token:x}"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.buf = b""
        words = self._line()
        assert words[0] == "ready", words
        self.tgid = int(words[1])

    def _line(self):
        deadline = time.monotonic() + TIMEOUT
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no reply from the child within {TIMEOUT} s"
            chunk = os.read(fd, 4096)
            assert chunk, f"the child exited with {self.proc.wait()}"
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode().split()

    def cmd(self, *words):
        """The reply's result words (the echoed command word is checked and dropped)."""
        self.proc.stdin.write((" ".join(map(str, words)) + "\n").encode())
        self.proc.stdin.flush()
        reply = self._line()
        assert reply[0] == words[0], reply
        return reply[1:]

    def finish(self):
        """The child's teardown result and exit status."""
        result = self.cmd("exit")
        return int(result[0]), self.proc.wait(TIMEOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:  # a failed test: never leave the child behind
            self.proc.kill()
            self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def export_filled(size, seed, flags):
    """Mapped memory filled with pattern(size, seed) and exported: (mapping, bytes, shareable handle)."""
    mine = Mapped(size)
    data = pattern(size, seed)
    assert h2d(mine.va, data) == ACL_SUCCESS
    token, ret = acl.rt.mem_export_to_shareable_handle(mine.handle, ACL_MEM_HANDLE_TYPE_NONE, flags)
    assert ret == ACL_SUCCESS and token != 0 and token >> 40 == 0  # share id + device, bits 40-63 zero
    return mine, data, token


def test_whitelisted_child_imports_and_both_see_each_others_bytes():
    size = 4 * MIB
    mine, data, token = export_filled(size, 17, ACL_RT_VMM_EXPORT_FLAG_DEFAULT)
    # A process cannot import its own export onto the device the memory is on.
    assert acl.rt.mem_import_from_shareable_handle(token, 0) == (0, ACL_ERROR_RT_DRV_INTERNAL_ERROR)

    with Child(token) as child:
        assert child.tgid == child.proc.pid  # no pid namespace here: the bare tgid is the pid
        assert child.cmd("import") == [str(ACL_ERROR_RT_DRV_INTERNAL_ERROR)]  # not whitelisted yet
        assert acl.rt.mem_set_pid_to_shareable_handle(token, [child.tgid]) == ACL_SUCCESS
        assert child.cmd("import") == [str(ACL_SUCCESS)]
        assert child.cmd("map", size) == [str(ACL_SUCCESS)]
        assert child.cmd("read", 0, size) == [sha(data)]
        # The child writes across the 2 MiB boundary; the parent sees exactly that change.
        off, n = 3 * MIB - 100, 5000
        assert child.cmd("write", off, n, 77) == [str(ACL_SUCCESS)]
        assert d2h(mine.va, size) == data[:off] + pattern(n, 77) + data[off + n:]
        # And the other way round, after the import.
        assert h2d(mine.va, pattern(4096, 78)) == ACL_SUCCESS
        assert child.cmd("read", 0, 4096) == [sha(pattern(4096, 78))]
        assert child.finish() == (ACL_SUCCESS, 0)
    mine.release()


def test_export_without_pid_validation_needs_no_whitelist():
    size = 2 * MIB
    mine, data, token = export_filled(size, 23, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
    # Such an export has no whitelist to add to.
    assert acl.rt.mem_set_pid_to_shareable_handle(token, [os.getpid()]) == ACL_ERROR_RT_NO_PERMISSION
    with Child(token) as child:
        assert child.cmd("import") == [str(ACL_SUCCESS)]
        assert child.cmd("map", size) == [str(ACL_SUCCESS)]
        assert child.cmd("read", 0, size) == [sha(data)]
        assert child.finish() == (ACL_SUCCESS, 0)
    mine.release()
