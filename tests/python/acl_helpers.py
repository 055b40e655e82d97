"""Helpers of the acl binding tests: mapped device memory, byte copies through acl.rt.memcpy, and
the other process of the two-process tests."""
import os
import select
import subprocess
import sys
import time

import acl
import acl.rt
import acl.util

from acl_constants import ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS, MIB, device_prop


class Mapped:
    """size bytes of device memory: a physical handle mapped at a fresh reservation."""

    def __init__(self, size=2 * MIB, device=0):
        self.size = size
        self.handle, ret = acl.rt.malloc_physical(size, device_prop(device), 0)
        assert ret == ACL_SUCCESS and self.handle != 0
        self.va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
        assert ret == ACL_SUCCESS and self.va != 0
        assert acl.rt.map_mem(self.va, size, 0, self.handle, 0) == ACL_SUCCESS

    def release(self):
        assert acl.rt.unmap_mem(self.va) == ACL_SUCCESS
        assert acl.rt.release_mem_address(self.va) == ACL_SUCCESS
        assert acl.rt.free_physical(self.handle) == ACL_SUCCESS


def h2d(dst, data):
    """Copies the bytes object `data` to device address dst; the aclError."""
    return acl.rt.memcpy(dst, len(data), acl.util.bytes_to_ptr(data), len(data), ACL_MEMCPY_HOST_TO_DEVICE)


def d2h(src, size):
    """size bytes read from device address src through a pinned host buffer."""
    host, ret = acl.rt.malloc_host(size)
    assert ret == ACL_SUCCESS and host != 0
    try:
        assert acl.rt.memcpy(host, size, src, size, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS
        return acl.util.ptr_to_bytes(host, size)
    finally:
        assert acl.rt.free_host(host) == ACL_SUCCESS


class Child:
    """A helper script (share_child.py, ipc_child.py) in its own interpreter and runtime, driven one
    command line at a time. It first says `ready <words>` (kept in self.ready), then answers each
    command with a line that repeats the command word, then the result."""

    # Seconds, bound on every wait for the child: interpreter start and aclInit included, on a
    # 2-core machine that may be running sanitizer builds beside the suite.
    TIMEOUT = 60

    def __init__(self, script, *argv):
        self.proc = subprocess.Popen([sys.executable, script, *map(str, argv)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.buf = b""
        words = self._line()
        assert words[0] == "ready", words
        self.ready = words[1:]

    def _line(self):
        deadline = time.monotonic() + self.TIMEOUT
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no reply from the child within {self.TIMEOUT} s"
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
        return int(result[0]), self.proc.wait(self.TIMEOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:  # a failed test: never leave the child behind
            self.proc.kill()
            self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
