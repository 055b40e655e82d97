"""The VMM lifecycle through the binding: reserve, physical memory, map, bytes both ways, teardown."""
import acl
import acl.rt
import acl.util

from acl_constants import (ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                           ACL_SUCCESS, MIB, device_prop, pattern)
from acl_helpers import d2h, h2d


def test_full_lifecycle_round_trips_bytes():
    size = 4 * MIB
    handle, ret = acl.rt.malloc_physical(size, device_prop(), 0)
    assert (ret, handle != 0) == (ACL_SUCCESS, True)
    va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
    assert ret == ACL_SUCCESS
    assert va % (2 * MIB) == 0 and va != 0
    assert acl.rt.map_mem(va, size, 0, handle, 0) == ACL_SUCCESS

    data = pattern(size, 11)
    assert h2d(va, data) == ACL_SUCCESS
    assert d2h(va, size) == data
    # A write that straddles the 2 MiB page boundary changes exactly those bytes.
    patch = pattern(10000, 99)
    assert h2d(va + 2 * MIB - 5000, patch) == ACL_SUCCESS
    expected = data[:2 * MIB - 5000] + patch + data[2 * MIB + 5000:]
    assert d2h(va, size) == expected

    assert acl.rt.unmap_mem(va) == ACL_SUCCESS
    assert acl.rt.unmap_mem(va) != ACL_SUCCESS  # nothing mapped any more
    assert acl.rt.release_mem_address(va) == ACL_SUCCESS
    assert acl.rt.free_physical(handle) == ACL_SUCCESS
    assert acl.rt.free_physical(handle) == ACL_ERROR_RT_PARAM_INVALID  # double free


def test_remap_keeps_the_physical_bytes():
    # The same handle mapped at a second reservation shows the bytes written through the first.
    size = 2 * MIB
    handle, ret = acl.rt.malloc_physical(size, device_prop(), 0)
    assert ret == ACL_SUCCESS
    va1, ret1 = acl.rt.reserve_mem_address(size, 0, 0, 0)
    va2, ret2 = acl.rt.reserve_mem_address(size, 0, 0, 0)
    assert (ret1, ret2) == (ACL_SUCCESS, ACL_SUCCESS) and va1 != va2
    assert acl.rt.map_mem(va1, size, 0, handle, 0) == ACL_SUCCESS
    assert acl.rt.map_mem(va2, size, 0, handle, 0) == ACL_SUCCESS
    data = pattern(size, 3)
    assert h2d(va1, data) == ACL_SUCCESS
    assert d2h(va2, size) == data
    for va in (va1, va2):
        assert acl.rt.unmap_mem(va) == ACL_SUCCESS
        assert acl.rt.release_mem_address(va) == ACL_SUCCESS
    assert acl.rt.free_physical(handle) == ACL_SUCCESS


def test_malloc_memset_and_device_to_device_copy(mapped):
    dev, ret = acl.rt.malloc(1 * MIB, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS and dev != 0
    assert acl.rt.memset(dev, 1 * MIB, 0x5A, 1 * MIB) == ACL_SUCCESS
    assert acl.rt.memcpy(mapped.va, mapped.size, dev, 1 * MIB, ACL_MEMCPY_DEVICE_TO_DEVICE) == ACL_SUCCESS
    assert d2h(mapped.va, 1 * MIB) == b"\x5a" * MIB
    # count larger than dest_max is refused (the C API's 107000) before anything is copied.
    assert acl.rt.memset(dev, 1 * MIB, 0x11, 64) == ACL_SUCCESS
    assert acl.rt.memcpy(mapped.va, 16, dev, 17, ACL_MEMCPY_DEVICE_TO_DEVICE) == ACL_ERROR_RT_PARAM_INVALID
    assert d2h(mapped.va, 64) == b"\x5a" * 64
    assert acl.rt.free(dev) == ACL_SUCCESS


def test_host_buffer_round_trip():
    host, ret = acl.rt.malloc_host(8192)
    assert ret == ACL_SUCCESS and host != 0
    dev, ret = acl.rt.malloc(8192, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    data = pattern(8192, 42)
    assert h2d(dev, data) == ACL_SUCCESS
    assert acl.rt.memcpy(host, 8192, dev, 8192, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS
    assert acl.util.ptr_to_bytes(host, 8192) == data
    assert acl.rt.free(dev) == ACL_SUCCESS
    assert acl.rt.free_host(host) == ACL_SUCCESS


def test_init_is_reference_counted():
    # The session fixture holds one reference; a second init counts another, finalize drops it.
    assert acl.init() == ACL_ERROR_REPEAT_INITIALIZE
    assert acl.finalize() == ACL_SUCCESS
    h, ret = acl.rt.malloc_physical(2 * MIB, device_prop(), 0)  # still initialised
    assert ret == ACL_SUCCESS
    assert acl.rt.free_physical(h) == ACL_SUCCESS


def test_device_and_context_queries():
    assert acl.rt.get_device() == (0, ACL_SUCCESS)
    count, ret = acl.rt.get_device_count()
    assert ret == ACL_SUCCESS and count >= 1
    ctx, ret = acl.rt.get_context()
    assert ret == ACL_SUCCESS and ctx != 0
    mine, ret = acl.rt.create_context(0)
    assert ret == ACL_SUCCESS and mine not in (0, ctx)
    assert acl.rt.get_context() == (mine, ACL_SUCCESS)  # creating makes it current
    assert acl.rt.set_context(ctx) == ACL_SUCCESS
    assert acl.rt.destroy_context(mine) == ACL_SUCCESS
    assert acl.rt.get_context() == (ctx, ACL_SUCCESS)
    assert acl.rt.synchronize_device() == ACL_SUCCESS
    free, total, ret = acl.rt.get_mem_info(1)  # ACL_HBM_MEM
    assert ret == ACL_SUCCESS and 0 < free <= total


def test_version_and_soc_name():
    assert acl.get_version() == (1, 17, 0, ACL_SUCCESS)  # include/acl/acl_base.h
    name = acl.get_soc_name()
    assert isinstance(name, str) and name.startswith("Ascend")
