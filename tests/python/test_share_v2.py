"""The V2 sharing calls through the binding: the shareable handle is `bytes` (8 for DEFAULT, 128 for
FABRIC). Two real Python processes share memory with V2 calls only: the parent exports, whitelists
the child's bare tgid with the V2 set-pid call, the child (share_child.py v2, its own interpreter
and runtime) imports from the bytes it was given, maps, and each side checks bytes the other wrote.
The codes of misuse equal the C API's (ctypes)."""
import ctypes
import hashlib
import os

import pytest

import acl
import acl.rt

from acl_capi import array, load, mismatches, out_ptr
from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           ACL_ERROR_RT_INVALID_HANDLE, ACL_ERROR_RT_NO_PERMISSION, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC,
                           ACL_RT_VMM_EXPORT_FLAG_DEFAULT, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, ACL_SUCCESS,
                           MIB, pattern)
from acl_helpers import Child as ChildProcess
from acl_helpers import Mapped, d2h, h2d

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "share_child.py")
DEFAULT = ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT


class Child(ChildProcess):
    """share_child.py importing `shareable` (bytes) with the V2 call; tgid: the bare tgid it reported."""

    def __init__(self, shareable, share_type=DEFAULT):
        super().__init__(CHILD, "v2", share_type, shareable.hex())
        self.tgid = int(self.ready[0])


@pytest.fixture(scope="module")
def lib():
    return load()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def export_filled(size, seed, flags):
    """Mapped memory filled with pattern(size, seed) and exported with the V2 call (DEFAULT)."""
    mine = Mapped(size)
    data = pattern(size, seed)
    assert h2d(mine.va, data) == ACL_SUCCESS
    shareable, ret = acl.rt.mem_export_to_shareable_handle_v2(mine.handle, flags, DEFAULT)
    assert ret == ACL_SUCCESS
    assert isinstance(shareable, bytes) and len(shareable) == 8  # a uint64_t in the V1 format
    token = int.from_bytes(shareable, "little")
    assert token != 0 and token >> 40 == 0  # share id + device, bits 40-63 zero
    return mine, data, shareable


def test_two_processes_share_with_v2_calls_only():
    size = 4 * MIB
    mine, data, shareable = export_filled(size, 41, ACL_RT_VMM_EXPORT_FLAG_DEFAULT)
    # A process cannot import its own export onto the device the memory is on.
    assert acl.rt.mem_import_from_shareable_handle_v2(shareable, DEFAULT, 0) == (0, ACL_ERROR_RT_DRV_INTERNAL_ERROR)
    with Child(shareable) as child:
        assert child.tgid == child.proc.pid  # no pid namespace here: the bare tgid is the pid
        assert child.cmd("import") == [str(ACL_ERROR_RT_DRV_INTERNAL_ERROR)]  # not whitelisted yet
        assert acl.rt.mem_set_pid_to_shareable_handle_v2(shareable, DEFAULT, [child.tgid]) == ACL_SUCCESS
        assert child.cmd("import") == [str(ACL_SUCCESS)]
        assert child.cmd("map", size) == [str(ACL_SUCCESS)]
        assert child.cmd("read", 0, size) == [sha(data)]
        # The child writes across the 2 MiB boundary; the parent sees exactly that change.
        off, n = 2 * MIB - 300, 7000
        assert child.cmd("write", off, n, 43) == [str(ACL_SUCCESS)]
        assert d2h(mine.va, size) == data[:off] + pattern(n, 43) + data[off + n:]
        # And the other way round, after the import.
        assert h2d(mine.va + 3 * MIB, pattern(4096, 44)) == ACL_SUCCESS
        assert child.cmd("read", 3 * MIB, 4096) == [sha(pattern(4096, 44))]
        assert child.finish() == (ACL_SUCCESS, 0)
    mine.release()


def test_v2_default_handle_is_the_v1_token():
    size = 2 * MIB
    mine, data, shareable = export_filled(size, 45, ACL_RT_VMM_EXPORT_FLAG_DEFAULT)
    # The V1 set-pid call accepts the same token as an int ...
    assert acl.rt.mem_set_pid_to_shareable_handle(int.from_bytes(shareable, "little"), [os.getpid() + 1]) == 0
    # ... and the whole 8 bytes are the handle: bytearray and memoryview work as well as bytes.
    assert acl.rt.mem_set_pid_to_shareable_handle_v2(bytearray(shareable), DEFAULT, [os.getpid() + 2]) == 0
    assert acl.rt.mem_set_pid_to_shareable_handle_v2(memoryview(shareable), DEFAULT, [os.getpid() + 3]) == 0
    mine.release()


def test_export_without_pid_validation_needs_no_whitelist():
    size = 2 * MIB
    mine, data, shareable = export_filled(size, 46, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
    assert acl.rt.mem_set_pid_to_shareable_handle_v2(shareable, DEFAULT, [1]) == ACL_ERROR_RT_NO_PERMISSION
    with Child(shareable) as child:
        assert child.cmd("import") == [str(ACL_SUCCESS)]
        assert child.cmd("map", size) == [str(ACL_SUCCESS)]
        assert child.cmd("read", 0, size) == [sha(data)]
        assert child.finish() == (ACL_SUCCESS, 0)
    mine.release()


def test_failures_return_empty_bytes_and_0():
    assert acl.rt.mem_export_to_shareable_handle_v2(0, 0, DEFAULT) == (b"", ACL_ERROR_INVALID_PARAM)
    assert acl.rt.mem_import_from_shareable_handle_v2(bytes(8), DEFAULT, 0) == (0, ACL_ERROR_RT_INVALID_HANDLE)


def test_codes_match_the_c_api(lib, mapped):
    buf = ctypes.create_string_buffer(128)
    unknown = (0x1234_5678).to_bytes(8, "little")  # well-formed, nobody exports it
    pid = array(ctypes.c_int32, [1])
    out = ctypes.byref(out_ptr())
    E, S, I = (acl.rt.mem_export_to_shareable_handle_v2, acl.rt.mem_set_pid_to_shareable_handle_v2,
               acl.rt.mem_import_from_shareable_handle_v2)
    cases = {
        "export(type 3)": (ACL_ERROR_RT_PARAM_INVALID, E(mapped.handle, 0, 3)[1],
                           lib.aclrtMemExportToShareableHandleV2(mapped.handle, 0, 3, buf)),
        "export(FABRIC on A2)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                                 E(mapped.handle, 0, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC)[1],
                                 lib.aclrtMemExportToShareableHandleV2(mapped.handle, 0,
                                                                       ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, buf)),
        "export(flags 2)": (ACL_ERROR_RT_PARAM_INVALID, E(mapped.handle, 2, DEFAULT)[1],
                            lib.aclrtMemExportToShareableHandleV2(mapped.handle, 2, DEFAULT, buf)),
        "export(NULL handle)": (ACL_ERROR_INVALID_PARAM, E(0, 0, DEFAULT)[1],
                                lib.aclrtMemExportToShareableHandleV2(None, 0, DEFAULT, buf)),
        "set_pid(unknown)": (ACL_ERROR_RT_INVALID_HANDLE, S(unknown, DEFAULT, [1]),
                             lib.aclrtMemSetPidToShareableHandleV2(unknown, DEFAULT, pid, 1)),
        "set_pid(empty list)": (ACL_ERROR_INVALID_PARAM, S(unknown, DEFAULT, []),
                                lib.aclrtMemSetPidToShareableHandleV2(unknown, DEFAULT, pid, 0)),
        "set_pid(type 0)": (ACL_ERROR_RT_PARAM_INVALID, S(unknown, 0, [1]),
                            lib.aclrtMemSetPidToShareableHandleV2(unknown, 0, pid, 1)),
        "import(unknown)": (ACL_ERROR_RT_INVALID_HANDLE, I(unknown, DEFAULT, 0)[1],
                            lib.aclrtMemImportFromShareableHandleV2(unknown, DEFAULT, 0, out)),
        "import(flags 1)": (ACL_ERROR_INVALID_PARAM, I(unknown, DEFAULT, 1)[1],
                            lib.aclrtMemImportFromShareableHandleV2(unknown, DEFAULT, 1, out)),
        "import(FABRIC on A2)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                                 I(bytes(128), ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0)[1],
                                 lib.aclrtMemImportFromShareableHandleV2(bytes(128), ACL_MEM_SHARE_HANDLE_TYPE_FABRIC,
                                                                         0, out)),
    }
    assert mismatches(cases) == {}, "(expected, binding, C API)"


@pytest.mark.parametrize("call, args, error", [
    (acl.rt.mem_export_to_shareable_handle_v2, (1, 0), TypeError),
    (acl.rt.mem_set_pid_to_shareable_handle_v2, (0x1234, DEFAULT, [1]), TypeError),   # an int is not bytes
    (acl.rt.mem_set_pid_to_shareable_handle_v2, ("00" * 8, DEFAULT, [1]), TypeError),  # nor is a str
    (acl.rt.mem_set_pid_to_shareable_handle_v2, (bytes(8), DEFAULT, (1,)), TypeError),
    (acl.rt.mem_set_pid_to_shareable_handle_v2, (bytes(8), DEFAULT, [1 << 40]), TypeError),
    (acl.rt.mem_set_pid_to_shareable_handle_v2, (bytes(129), DEFAULT, [1]), ValueError),
    (acl.rt.mem_import_from_shareable_handle_v2, (bytes(129), DEFAULT, 0), ValueError),
    (acl.rt.mem_import_from_shareable_handle_v2, (None, DEFAULT, 0), TypeError),
    (acl.rt.mem_import_from_shareable_handle_v2, (bytes(8), DEFAULT), TypeError),
])
def test_argument_conversion_errors(call, args, error):
    acl.get_recent_err_msg()
    with pytest.raises(error) as e:
        call(*args)
    assert str(e.value).startswith(f"acl.rt.{call.__name__}")
    assert acl.get_recent_err_msg() is None  # the library was not called
