"""Host memory registration through the binding (runtime-extra.md 5; pyACL's host_register family):
page-aligned host memory (an anonymous mmap, as Mooncake registers POSIX shared memory) gets a device
address, copies through that address reach the host pages, and the codes equal the C API's."""
import ctypes
import mmap

import pytest

import acl
import acl.rt
import acl.util

from acl_capi import load, mismatches, out_ptr
from acl_constants import (ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                           ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           ACL_ERROR_RT_PARAM_INVALID, ACL_HOST_REG_MAPPED, ACL_HOST_REG_PINNED,
                           ACL_HOST_REGISTER_IOMEMORY, ACL_HOST_REGISTER_MAPPED, ACL_MEM_LOCATION_TYPE_HOST,
                           ACL_MEM_LOCATION_TYPE_UNREGISTERED, ACL_MEMCPY_DEVICE_TO_HOST, ACL_SUCCESS, pattern)
from acl_helpers import h2d

SIZE = 64 * 1024


@pytest.fixture(scope="module")
def lib():
    return load()


@pytest.fixture
def pages():
    """(address, mmap) of SIZE bytes of page-aligned anonymous memory."""
    m = mmap.mmap(-1, SIZE)
    buf = ctypes.c_char.from_buffer(m)
    yield ctypes.addressof(buf), m
    del buf
    m.close()


def location_type(ptr):
    attrs, ret = acl.rt.pointer_get_attributes(ptr)
    assert ret == ACL_SUCCESS
    return attrs["location"]["type"]


def test_register_gives_a_device_address_copies_reach(mapped, pages):
    addr, m = pages
    assert location_type(addr) == ACL_MEM_LOCATION_TYPE_UNREGISTERED
    dev_ptr, ret = acl.rt.host_register(addr, SIZE, ACL_HOST_REGISTER_MAPPED)
    assert ret == ACL_SUCCESS and dev_ptr == addr  # aclvmm: the device address is the host address
    assert location_type(addr) == ACL_MEM_LOCATION_TYPE_HOST
    assert acl.rt.host_get_device_pointer(addr + 100, 0) == (addr + 100, ACL_SUCCESS)
    data = pattern(SIZE, 81)
    assert h2d(mapped.va, data) == ACL_SUCCESS
    assert acl.rt.memcpy(dev_ptr, SIZE, mapped.va, SIZE, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS
    assert m[:] == data
    assert acl.rt.host_register(addr, SIZE, ACL_HOST_REGISTER_MAPPED) == (0, ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    assert acl.rt.host_unregister(addr) == ACL_SUCCESS
    assert acl.rt.host_unregister(addr) == ACL_ERROR_HOST_MEMORY_NOT_REGISTERED
    assert location_type(addr) == ACL_MEM_LOCATION_TYPE_UNREGISTERED


def test_register_v2_mapped_and_pinned(pages):
    addr, m = pages
    assert acl.rt.host_register_v2(addr, SIZE, ACL_HOST_REG_MAPPED | ACL_HOST_REG_PINNED) == ACL_SUCCESS
    assert acl.rt.host_get_device_pointer(addr + SIZE - 1, 0) == (addr + SIZE - 1, ACL_SUCCESS)
    assert acl.rt.host_unregister(addr) == ACL_SUCCESS
    # PINNED alone has no device mapping, so no device pointer.
    assert acl.rt.host_register_v2(addr, SIZE, ACL_HOST_REG_PINNED) == ACL_SUCCESS
    assert acl.rt.host_get_device_pointer(addr, 0) == (0, ACL_ERROR_RT_PARAM_INVALID)
    assert acl.rt.host_unregister(addr) == ACL_SUCCESS


def test_codes_match_the_c_api(lib, pages):
    addr, _ = pages
    pinned, ret = acl.rt.malloc_host(SIZE)
    assert ret == ACL_SUCCESS
    out = ctypes.byref(out_ptr())
    R, V2 = acl.rt.host_register, acl.rt.host_register_v2
    cases = {
        "register(size 0)": (ACL_ERROR_INVALID_PARAM, R(addr, 0, 0)[1], lib.aclrtHostRegister(addr, 0, 0, out)),
        "register(NULL)": (ACL_ERROR_INVALID_PARAM, R(0, SIZE, 0)[1], lib.aclrtHostRegister(None, SIZE, 0, out)),
        "register(type 1)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT, R(addr, SIZE, 1)[1],
                             lib.aclrtHostRegister(addr, SIZE, 1, out)),
        "register(IOMEMORY)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT, R(addr, SIZE, ACL_HOST_REGISTER_IOMEMORY)[1],
                               lib.aclrtHostRegister(addr, SIZE, ACL_HOST_REGISTER_IOMEMORY, out)),
        "register(unaligned)": (ACL_ERROR_RT_DRV_INTERNAL_ERROR, R(addr + 8, 4096, 0)[1],
                                lib.aclrtHostRegister(addr + 8, 4096, 0, out)),
        "register_v2(flag 0)": (ACL_ERROR_RT_PARAM_INVALID, V2(addr, SIZE, 0), lib.aclrtHostRegisterV2(addr, SIZE, 0)),
        "register_v2(flag 1)": (ACL_ERROR_RT_PARAM_INVALID, V2(addr, SIZE, 1), lib.aclrtHostRegisterV2(addr, SIZE, 1)),
        "register_v2(PINNED on pinned)": (ACL_ERROR_RT_PARAM_INVALID, V2(pinned, SIZE, ACL_HOST_REG_PINNED),
                                          lib.aclrtHostRegisterV2(pinned, SIZE, ACL_HOST_REG_PINNED)),
        "get_device_pointer(flag 1)": (ACL_ERROR_INVALID_PARAM, acl.rt.host_get_device_pointer(addr, 1)[1],
                                       lib.aclrtHostGetDevicePointer(addr, out, 1)),
        "get_device_pointer(unregistered)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.host_get_device_pointer(addr, 0)[1],
                                             lib.aclrtHostGetDevicePointer(addr, out, 0)),
        "unregister(NULL)": (ACL_ERROR_INVALID_PARAM, acl.rt.host_unregister(0), lib.aclrtHostUnregister(None)),
        "unregister(never registered)": (ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, acl.rt.host_unregister(addr),
                                         lib.aclrtHostUnregister(addr)),
    }
    assert mismatches(cases) == {}, "(expected, binding, C API)"
    assert acl.rt.free_host(pinned) == ACL_SUCCESS


def test_a_pinned_block_registers_mapped_and_its_free_drops_the_registration():
    # The zero-copy sample's path: aclrtMallocHost memory, MAPPED, then freed while registered.
    host, ret = acl.rt.malloc_host(SIZE)
    assert ret == ACL_SUCCESS
    assert acl.rt.host_register_v2(host, SIZE, ACL_HOST_REG_MAPPED) == ACL_SUCCESS
    assert acl.rt.host_get_device_pointer(host, 0) == (host, ACL_SUCCESS)
    assert location_type(host) == ACL_MEM_LOCATION_TYPE_HOST
    assert acl.rt.free_host(host) == ACL_SUCCESS
    assert acl.rt.host_unregister(host) == ACL_ERROR_HOST_MEMORY_NOT_REGISTERED


@pytest.mark.parametrize("call, args", [
    (acl.rt.host_register, (1, 2)),
    (acl.rt.host_register, (1, 2, "0")),
    (acl.rt.host_unregister, (None,)),
    (acl.rt.host_register_v2, (1, 2, 3, 4)),
    (acl.rt.host_get_device_pointer, (1.0, 0)),
])
def test_argument_conversion_raises_type_error(call, args):
    with pytest.raises(TypeError) as e:
        call(*args)
    assert str(e.value) == f"acl.rt.{call.__name__} args parse failed"

