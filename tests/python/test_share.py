"""Sharing physical memory between two real Python processes through the binding.

The parent exports a handle, the child (share_child.py, its own interpreter and runtime) reports
its bare tgid, the parent whitelists it, the child imports, maps and reads the parent's bytes,
then writes bytes the parent reads back through its own mapping.
"""
import hashlib
import os

import acl
import acl.rt

from acl_constants import (ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_NO_PERMISSION,
                           ACL_MEM_HANDLE_TYPE_NONE, ACL_RT_VMM_EXPORT_FLAG_DEFAULT,
                           ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, ACL_SUCCESS, MIB, pattern)
from acl_helpers import Child as ChildProcess
from acl_helpers import Mapped, d2h, h2d

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "share_child.py")


class Child(ChildProcess):
    """share_child.py importing `token`; tgid: the bare tgid it reported."""

    def __init__(self, token):
        super().__init__(CHILD, f"{token:x}")
        self.tgid = int(self.ready[0])


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
