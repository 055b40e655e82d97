"""Failures: every call returns the C API's own code as `ret` (checked against the same call made
through ctypes on the same libascendcl.so), and only argument conversion raises."""
import ctypes
import os

import pytest

import acl
import acl.rt
import acl.util

from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_INVALID_HANDLE, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_HBM_MEM, ACL_HBM_MEM_HUGE, ACL_MEM_HANDLE_TYPE_POSIX, ACL_MEM_LOCATION_TYPE_HOST,
                           ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, ACL_SUCCESS, MIB, device_prop)

FORGED_HANDLE = 0x7A11_0000_0012_3456  # physical-handle tag, a slot that was never handed out
UNKNOWN_TOKEN = 0x0000_0000_1234_5678  # well-formed shareable handle nobody exports


class Location(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("type", ctypes.c_int)]


class Prop(ctypes.Structure):  # aclrtPhysicalMemProp, 32 bytes
    _fields_ = [("handleType", ctypes.c_int), ("allocationType", ctypes.c_int), ("memAttr", ctypes.c_int),
                ("location", Location), ("reserve", ctypes.c_uint64)]


def c_prop(d):
    loc = d.get("location", {})
    return Prop(d.get("handleType", 0), d.get("allocationType", 0), d.get("memAttr", 0),
                Location(loc.get("id", 0), loc.get("type", 0)), d.get("reserve", 0))


@pytest.fixture(scope="module")
def lib():
    """The C API, from the same file the extension loaded (so one runtime state for both)."""
    lib = ctypes.CDLL(os.environ["ACLVMM_LIBASCENDCL"])
    with open("/proc/self/maps") as f:
        loaded = {line.split()[-1] for line in f if "libascendcl" in line}
    assert loaded == {os.path.realpath(os.environ["ACLVMM_LIBASCENDCL"])}
    vp, u64, sz, i32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int32
    sigs = {
        "aclrtFreePhysical": [vp], "aclrtUnmapMem": [vp], "aclrtReleaseMemAddress": [vp],
        "aclrtReserveMemAddress": [ctypes.POINTER(vp), sz, sz, vp, u64],
        "aclrtMapMem": [vp, sz, sz, vp, u64],
        "aclrtMallocPhysical": [ctypes.POINTER(vp), sz, ctypes.POINTER(Prop), u64],
        "aclrtMemGetAllocationGranularity": [ctypes.POINTER(Prop), ctypes.c_int, ctypes.POINTER(sz)],
        "aclrtMemExportToShareableHandle": [vp, ctypes.c_int, u64, ctypes.POINTER(u64)],
        "aclrtMemSetPidToShareableHandle": [u64, ctypes.POINTER(i32), sz],
        "aclrtMemImportFromShareableHandle": [u64, i32, ctypes.POINTER(vp)],
        "aclrtSetDevice": [i32], "aclrtPointerGetAttributes": [vp, ctypes.c_char * 28],
    }
    for name, args in sigs.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    return lib


@pytest.fixture
def reserved():
    va, ret = acl.rt.reserve_mem_address(4 * MIB, 0, 0, 0)
    assert ret == ACL_SUCCESS
    yield va
    assert acl.rt.release_mem_address(va) == ACL_SUCCESS


def out():
    return ctypes.c_void_p(0)


def test_codes_match_the_c_api(lib, mapped, reserved):
    vp, u64, sz = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
    bad_reserve = dict(device_prop(), reserve=1)
    bad_attr = device_prop(mem_attr=ACL_HBM_MEM)
    pids = (ctypes.c_int32 * 1)(1)
    # (expected, binding's ret, C API's return), each pair from identical arguments.
    cases = {
        "free_physical(0)": (ACL_ERROR_INVALID_PARAM, acl.rt.free_physical(0), lib.aclrtFreePhysical(None)),
        "free_physical(forged)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.free_physical(FORGED_HANDLE),
                                  lib.aclrtFreePhysical(FORGED_HANDLE)),
        "unmap_mem(reserved, unmapped)": (ACL_ERROR_RT_DRV_INTERNAL_ERROR, acl.rt.unmap_mem(reserved),
                                          lib.aclrtUnmapMem(reserved)),
        "release_mem_address(interior)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.release_mem_address(reserved + 2 * MIB),
                                          lib.aclrtReleaseMemAddress(reserved + 2 * MIB)),
        "release_mem_address(mapped)": (ACL_ERROR_RT_DRV_INTERNAL_ERROR, acl.rt.release_mem_address(mapped.va),
                                        lib.aclrtReleaseMemAddress(mapped.va)),
        "reserve_mem_address(alignment 4096)": (ACL_ERROR_RT_PARAM_INVALID,
                                                acl.rt.reserve_mem_address(2 * MIB, 4096, 0, 0)[1],
                                                lib.aclrtReserveMemAddress(ctypes.byref(out()), 2 * MIB, 4096, None, 0)),
        "map_mem(offset 2 MiB)": (ACL_ERROR_RT_PARAM_INVALID,
                                  acl.rt.map_mem(reserved, 2 * MIB, 2 * MIB, mapped.handle, 0),
                                  lib.aclrtMapMem(reserved, 2 * MIB, 2 * MIB, mapped.handle, 0)),
        "malloc_physical(size 0)": (ACL_ERROR_INVALID_PARAM, acl.rt.malloc_physical(0, device_prop(), 0)[1],
                                    lib.aclrtMallocPhysical(ctypes.byref(out()), 0, c_prop(device_prop()), 0)),
        "malloc_physical(reserve 1)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.malloc_physical(2 * MIB, bad_reserve, 0)[1],
                                       lib.aclrtMallocPhysical(ctypes.byref(out()), 2 * MIB, c_prop(bad_reserve), 0)),
        "malloc_physical(ACL_HBM_MEM)": (ACL_ERROR_INVALID_PARAM, acl.rt.malloc_physical(2 * MIB, bad_attr, 0)[1],
                                         lib.aclrtMallocPhysical(ctypes.byref(out()), 2 * MIB, c_prop(bad_attr), 0)),
        "granularity(UNDEF)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                               acl.rt.mem_get_allocation_granularity(device_prop(), ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF)[1],
                               lib.aclrtMemGetAllocationGranularity(c_prop(device_prop()),
                                                                    ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF,
                                                                    ctypes.byref(sz(0)))),
        "export(POSIX)": (ACL_ERROR_INVALID_PARAM,
                          acl.rt.mem_export_to_shareable_handle(mapped.handle, ACL_MEM_HANDLE_TYPE_POSIX, 0)[1],
                          lib.aclrtMemExportToShareableHandle(mapped.handle, ACL_MEM_HANDLE_TYPE_POSIX, 0,
                                                              ctypes.byref(u64(0)))),
        "export(flags 2)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.mem_export_to_shareable_handle(mapped.handle, 0, 2)[1],
                            lib.aclrtMemExportToShareableHandle(mapped.handle, 0, 2, ctypes.byref(u64(0)))),
        "set_pid(unknown token)": (ACL_ERROR_RT_INVALID_HANDLE,
                                   acl.rt.mem_set_pid_to_shareable_handle(UNKNOWN_TOKEN, [1]),
                                   lib.aclrtMemSetPidToShareableHandle(UNKNOWN_TOKEN, pids, 1)),
        "set_pid(empty list)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_set_pid_to_shareable_handle(UNKNOWN_TOKEN, []),
                                lib.aclrtMemSetPidToShareableHandle(UNKNOWN_TOKEN, pids, 0)),
        "import(unknown token)": (ACL_ERROR_RT_INVALID_HANDLE,
                                  acl.rt.mem_import_from_shareable_handle(UNKNOWN_TOKEN, 0)[1],
                                  lib.aclrtMemImportFromShareableHandle(UNKNOWN_TOKEN, 0, ctypes.byref(out()))),
        "import(bits 40-63 set)": (ACL_ERROR_RT_INVALID_HANDLE,
                                   acl.rt.mem_import_from_shareable_handle(1 << 40 | 5, 0)[1],
                                   lib.aclrtMemImportFromShareableHandle(1 << 40 | 5, 0, ctypes.byref(out()))),
        "set_device(99)": (ACL_ERROR_RT_INVALID_DEVICEID, acl.rt.set_device(99), lib.aclrtSetDevice(99)),
        "pointer_get_attributes(reserved)": (ACL_ERROR_RT_INVALID_HANDLE, acl.rt.pointer_get_attributes(reserved)[1],
                                             lib.aclrtPointerGetAttributes(reserved, (ctypes.c_char * 28)())),
    }
    wrong = {name: c for name, c in cases.items() if not (c[0] == c[1] == c[2])}
    assert wrong == {}, "(expected, binding, C API)"


def test_failed_calls_return_zero_outputs_and_the_message():
    acl.get_recent_err_msg()  # start from an empty queue
    handle, ret = acl.rt.malloc_physical(0, device_prop(), 0)
    assert (handle, ret) == (0, ACL_ERROR_INVALID_PARAM)
    msg = acl.get_recent_err_msg()
    assert isinstance(msg, str) and "aclrtMallocPhysical" in msg and "100000" in msg
    assert acl.get_recent_err_msg() is None  # reading cleared the queue


def test_prop_dict_missing_or_non_int_keys_stay_zero():
    # Only memAttr given: handleType/allocationType/location/reserve are 0, i.e. pinned HOST memory.
    handle, ret = acl.rt.malloc_physical(2 * MIB, {"memAttr": ACL_HBM_MEM_HUGE}, 0)
    assert ret == ACL_SUCCESS
    prop, ret = acl.rt.mem_get_allocation_properties_from_handle(handle)
    assert ret == ACL_SUCCESS
    assert prop["location"] == {"id": 0, "type": ACL_MEM_LOCATION_TYPE_HOST} and prop["reserve"] == 0
    assert acl.rt.free_physical(handle) == ACL_SUCCESS
    # A value that is not an int is ignored: memAttr stays 0 (ACL_DDR_MEM), which a device refuses.
    handle, ret = acl.rt.malloc_physical(2 * MIB, dict(device_prop(), memAttr="4"), 0)
    assert (handle, ret) == (0, ACL_ERROR_INVALID_PARAM)
    # Unknown keys are ignored too.
    handle, ret = acl.rt.malloc_physical(2 * MIB, dict(device_prop(), colour=3), 0)
    assert ret == ACL_SUCCESS
    assert acl.rt.free_physical(handle) == ACL_SUCCESS


@pytest.mark.parametrize("call, args", [
    (acl.init, (5,)),
    (acl.finalize, (1,)),
    (acl.rt.set_device, ("0",)),
    (acl.rt.map_mem, (1, 2, 3)),
    (acl.rt.memcpy, (1.5, 1, 1, 1, 1)),
    (acl.rt.malloc_physical, (2 * MIB, [0, 0, 4], 0)),
    (acl.rt.mem_get_allocation_granularity, (None, 0)),
    (acl.rt.reserve_mem_address, (2 * MIB, 0, None, 0)),
    (acl.util.ptr_to_bytes, ("0", 1)),
])
def test_argument_conversion_raises_type_error(call, args):
    with pytest.raises(TypeError) as e:
        call(*args)
    assert str(e.value) == f"{call.__module__ or 'acl'}.{call.__name__} args parse failed"


@pytest.mark.parametrize("pids", [(1, 2), {1}, 7, [1, "2"], [1.0], [1 << 40]])
def test_pid_list_must_be_a_list_of_int32(pids):
    with pytest.raises(TypeError):
        acl.rt.mem_set_pid_to_shareable_handle(UNKNOWN_TOKEN, pids)
