"""IPC memory by key (runtime-extra.md section 3) through the binding, pyACL's four calls
(conventions.md 4.2): ipc_mem_get_export_key, ipc_mem_set_import_pid, ipc_mem_import_by_key,
ipc_mem_close.

Two real processes: the parent exports a key, the child (ipc_child.py, its own interpreter and
runtime) reports its bare tgid, is refused until the parent whitelists it, imports, reads the
parent's bytes and writes bytes the parent reads back; then the argument conventions in one
process.
"""
import hashlib
import os
import re

import pytest

import acl
import acl.rt

from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_NO_PERMISSION,
                           ACL_ERROR_RT_PARAM_INVALID, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT,
                           ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT,
                           ACL_SUCCESS, IPC_KEY_BYTES, MIB, pattern)
from acl_helpers import Child, Mapped, d2h, h2d

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ipc_child.py")


def sha(data):
    return hashlib.sha256(data).hexdigest()


def own_tgid():
    tgid, ret = acl.rt.device_get_bare_tgid()
    assert ret == ACL_SUCCESS
    return tgid


def unknown_key(counter=0xFFFF_FFFF):
    """A key in the drivers' format (runtime-extra.md 3.1) that no export made."""
    return f"{own_tgid():08x}{counter:016x}0000".ljust(64, "0")


def export_filled(size, seed, flags):
    """Mapped memory filled with pattern(size, seed) and exported by key: (mapping, bytes, key)."""
    mine = Mapped(size)
    data = pattern(size, seed)
    assert h2d(mine.va, data) == ACL_SUCCESS
    key, ret = acl.rt.ipc_mem_get_export_key(mine.va, size, IPC_KEY_BYTES, flags)
    assert ret == ACL_SUCCESS
    # A str of 64 lowercase hex digits: the exporter's bare tgid, a counter, the device, the VF.
    assert isinstance(key, str) and re.fullmatch(r"[0-9a-f]{64}", key), key
    assert key.startswith(f"{own_tgid():08x}")
    assert key[24:28] == "0000"  # device 0, VF 0
    return mine, data, key


def test_whitelisted_child_imports_by_key_and_both_see_each_others_bytes():
    size = 4 * MIB
    mine, data, key = export_filled(size, 31, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT)
    # The exporter is never on its own whitelist.
    assert acl.rt.ipc_mem_import_by_key(key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT) == (0, ACL_ERROR_RT_DRV_INTERNAL_ERROR)
    with Child(CHILD) as child:
        tgid = int(child.ready[0])
        assert tgid == child.proc.pid  # no pid namespace here: the bare tgid is the pid
        assert child.cmd("import", key, 0) == [str(ACL_ERROR_RT_DRV_INTERNAL_ERROR), "0"]  # not listed
        assert acl.rt.ipc_mem_set_import_pid(key, [tgid]) == ACL_SUCCESS
        ret, ptr = child.cmd("import", key, 0)
        assert ret == str(ACL_SUCCESS) and int(ptr) != 0
        assert child.cmd("read", 0, size) == [sha(data)]
        # The child writes across the 2 MiB boundary; the parent sees exactly that change.
        off, n = 2 * MIB - 100, 5000
        assert child.cmd("write", off, n, 41) == [str(ACL_SUCCESS)]
        assert d2h(mine.va, size) == data[:off] + pattern(n, 41) + data[off + n:]
        assert h2d(mine.va, pattern(4096, 42)) == ACL_SUCCESS
        assert child.cmd("read", 0, 4096) == [sha(pattern(4096, 42))]
        # The same key again: the same address, and one more close.
        assert child.cmd("import", key, 0) == [str(ACL_SUCCESS), ptr]
        assert child.cmd("close", key) == [str(ACL_SUCCESS)]
        assert child.cmd("close", key) == [str(ACL_SUCCESS)]
        # No import left: the key is taken as the child's own export, which it is not.
        assert child.cmd("close", key) == [str(ACL_ERROR_RT_DRV_INTERNAL_ERROR)]
        assert acl.rt.ipc_mem_close(key) == ACL_SUCCESS
        assert child.cmd("import", key, 0) == [str(ACL_ERROR_RT_DRV_INTERNAL_ERROR), "0"]  # closed
        assert child.finish() == (ACL_SUCCESS, 0)
    mine.release()


def test_key_without_pid_validation_needs_no_whitelist():
    size = 2 * MIB
    mine, data, key = export_filled(size, 43, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
    # Such a key has no whitelist to add to.
    assert acl.rt.ipc_mem_set_import_pid(key, [os.getpid() + 1]) == ACL_ERROR_RT_NO_PERMISSION
    with Child(CHILD) as child:
        assert child.cmd("import", key, 0)[0] == str(ACL_SUCCESS)
        assert child.cmd("read", 0, size) == [sha(data)]
        # The exporter may import it too: a second address for the same bytes.
        ptr, ret = acl.rt.ipc_mem_import_by_key(key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT)
        assert ret == ACL_SUCCESS and ptr not in (0, mine.va)
        assert d2h(ptr, size) == data
        assert acl.rt.ipc_mem_close(key) == ACL_SUCCESS  # the import first
        assert acl.rt.ipc_mem_close(key) == ACL_SUCCESS  # then the export
        # The child's import outlives the export (deliberate in aclvmm) and closes with 0.
        assert child.cmd("read", 0, 4096) == [sha(data[:4096])]
        assert child.cmd("close", key) == [str(ACL_SUCCESS)]
        assert child.finish() == (ACL_SUCCESS, 0)
    mine.release()


def test_export_key_len_and_failed_outputs(mapped):
    get = acl.rt.ipc_mem_get_export_key
    # pyACL's limit: key_len below 1024 (the binding's buffer); 1024 and more never reach the C API.
    assert get(mapped.va, mapped.size, 1024, 0) == ("", ACL_ERROR_INVALID_PARAM)
    assert get(mapped.va, mapped.size, 1 << 40, 0) == ("", ACL_ERROR_INVALID_PARAM)
    assert get(mapped.va, mapped.size, -1, 0) == ("", ACL_ERROR_INVALID_PARAM)  # wraps to 2^64 - 1
    key, ret = get(mapped.va, mapped.size, 1023, 0)
    assert ret == ACL_SUCCESS and len(key) == 64
    assert acl.rt.ipc_mem_close(key) == ACL_SUCCESS
    # The C API's own checks (runtime-extra.md 3.3): the outputs of a failure are "".
    assert get(mapped.va, mapped.size, IPC_KEY_BYTES - 1, 0) == ("", ACL_ERROR_RT_PARAM_INVALID)
    assert get(mapped.va, mapped.size, 0, 0) == ("", ACL_ERROR_RT_PARAM_INVALID)
    assert get(mapped.va, 0, IPC_KEY_BYTES, 0) == ("", ACL_ERROR_RT_PARAM_INVALID)
    assert get(mapped.va, mapped.size, IPC_KEY_BYTES, 2) == ("", ACL_ERROR_RT_PARAM_INVALID)
    assert get(0, mapped.size, IPC_KEY_BYTES, 0) == ("", ACL_ERROR_INVALID_PARAM)
    assert get(mapped.va + 4096, 4096, IPC_KEY_BYTES, 0) == ("", ACL_ERROR_RT_DRV_INTERNAL_ERROR)  # unaligned
    # Each export is a new key; both close.
    keys = [get(mapped.va, mapped.size, IPC_KEY_BYTES, 0) for _ in range(2)]
    assert [ret for _, ret in keys] == [ACL_SUCCESS] * 2 and keys[0][0] != keys[1][0]
    assert [acl.rt.ipc_mem_close(k) for k, _ in keys] == [ACL_SUCCESS] * 2


def test_keys_that_name_nothing(mapped):
    key, ret = acl.rt.ipc_mem_get_export_key(mapped.va, mapped.size, IPC_KEY_BYTES, 0)
    assert ret == ACL_SUCCESS
    nothing = unknown_key()
    assert acl.rt.ipc_mem_import_by_key(nothing, 0) == (0, ACL_ERROR_RT_DRV_INTERNAL_ERROR)
    assert acl.rt.ipc_mem_import_by_key("not a key", 0) == (0, ACL_ERROR_RT_PARAM_INVALID)
    assert acl.rt.ipc_mem_import_by_key("", 0) == (0, ACL_ERROR_RT_PARAM_INVALID)
    assert acl.rt.ipc_mem_import_by_key(key, 2) == (0, ACL_ERROR_RT_PARAM_INVALID)  # flags
    assert acl.rt.ipc_mem_close(nothing) == ACL_ERROR_RT_DRV_INTERNAL_ERROR
    assert acl.rt.ipc_mem_close("") == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.ipc_mem_close("f" * 65) == ACL_ERROR_RT_PARAM_INVALID  # no NUL within 65 bytes
    assert acl.rt.ipc_mem_set_import_pid(nothing, [os.getpid() + 1]) == ACL_ERROR_RT_DRV_INTERNAL_ERROR
    # pid_list: an empty list reaches the C API (num 0); 31 per call at most; the exporter's own
    # pid alone is skipped, leaving nothing to add.
    assert acl.rt.ipc_mem_set_import_pid(key, []) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.ipc_mem_set_import_pid(key, list(range(2, 34))) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.ipc_mem_set_import_pid(key, [own_tgid()]) == ACL_ERROR_RT_DRV_INTERNAL_ERROR
    assert acl.rt.ipc_mem_set_import_pid(key, list(range(2, 33))) == ACL_SUCCESS
    assert acl.rt.ipc_mem_close(key) == ACL_SUCCESS
    assert acl.rt.ipc_mem_close(key) == ACL_ERROR_RT_DRV_INTERNAL_ERROR  # no export under it now


@pytest.mark.parametrize("call, args", [
    ("ipc_mem_get_export_key", (0, 1, 65)),
    ("ipc_mem_get_export_key", ("0", 1, 65, 0)),
    ("ipc_mem_set_import_pid", (b"key", [1])),
    ("ipc_mem_set_import_pid", ("key",)),
    ("ipc_mem_import_by_key", ("key",)),
    ("ipc_mem_import_by_key", (1, 0)),
    ("ipc_mem_import_by_key", ("a\0b", 0)),
    ("ipc_mem_close", (None,)),
    ("ipc_mem_close", ()),
])
def test_argument_conversion_raises_the_pyacl_type_error(call, args):
    with pytest.raises(TypeError, match=rf"^acl\.rt\.{call} args parse failed$"):
        getattr(acl.rt, call)(*args)


@pytest.mark.parametrize("pids", ["123", (1, 2), [1, "2"], [1 << 40], None])
def test_pid_list_must_be_a_list_of_int32(pids):
    with pytest.raises(TypeError, match=r"^acl\.rt\.ipc_mem_set_import_pid: pid_list"):
        acl.rt.ipc_mem_set_import_pid(unknown_key(), pids)
