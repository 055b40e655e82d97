"""Struct results as dicts: pointer attributes, granularity, handle properties, address ranges."""
import acl
import acl.rt
import acl.util

from acl_constants import (ACL_ERROR_RT_INVALID_HANDLE, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_HUGE1G,
                           ACL_MEM_LOCATION_TYPE_DEVICE, ACL_MEM_LOCATION_TYPE_HOST,
                           ACL_MEM_LOCATION_TYPE_UNREGISTERED, ACL_MEM_MALLOC_HUGE_FIRST,
                           ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                           ACL_SUCCESS, GIB, MIB, device_prop)


def attrs_of(ptr):
    attrs, ret = acl.rt.pointer_get_attributes(ptr)
    assert set(attrs) == {"location", "page_size", "rsv"} and set(attrs["location"]) == {"id", "type"}
    return attrs, ret


def test_pointer_attributes_of_mapped_device_memory(mapped):
    for ptr in (mapped.va, mapped.va + mapped.size - 1):
        attrs, ret = attrs_of(ptr)
        assert ret == ACL_SUCCESS
        assert attrs == {"location": {"id": 0, "type": ACL_MEM_LOCATION_TYPE_DEVICE}, "page_size": 2 * MIB,
                         "rsv": [0, 0, 0, 0]}


def test_pointer_attributes_of_host_memory():
    host, ret = acl.rt.malloc_host(4096)
    assert ret == ACL_SUCCESS
    attrs, ret = attrs_of(host)
    assert ret == ACL_SUCCESS
    assert attrs["location"] == {"id": 0, "type": ACL_MEM_LOCATION_TYPE_HOST} and attrs["page_size"] == 4096
    assert acl.rt.free_host(host) == ACL_SUCCESS
    # Memory the runtime never saw (a Python bytes buffer) is UNREGISTERED.
    data = b"x" * 100
    attrs, ret = attrs_of(acl.util.bytes_to_ptr(data))
    assert ret == ACL_SUCCESS and attrs["location"]["type"] == ACL_MEM_LOCATION_TYPE_UNREGISTERED


def test_pointer_attributes_of_reserved_unmapped_range():
    va, ret = acl.rt.reserve_mem_address(2 * MIB, 0, 0, 0)
    assert ret == ACL_SUCCESS
    attrs, ret = attrs_of(va)
    assert ret == ACL_ERROR_RT_INVALID_HANDLE
    assert attrs == {"location": {"id": 0, "type": 0}, "page_size": 0, "rsv": [0, 0, 0, 0]}
    assert acl.rt.release_mem_address(va) == ACL_SUCCESS


def test_allocation_granularity():
    for option in (ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED):
        assert acl.rt.mem_get_allocation_granularity(device_prop(), option) == (2 * MIB, ACL_SUCCESS)
        assert acl.rt.mem_get_allocation_granularity(device_prop(mem_attr=ACL_HBM_MEM_HUGE1G), option) == \
            (GIB, ACL_SUCCESS)


def test_properties_retain_and_address_range(mapped):
    prop, ret = acl.rt.mem_get_allocation_properties_from_handle(mapped.handle)
    assert ret == ACL_SUCCESS
    assert prop == device_prop(0, ACL_HBM_MEM_HUGE)  # same keys, same values as were passed in
    handle, ret = acl.rt.mem_retain_allocation_handle(mapped.va)
    assert (handle, ret) == (mapped.handle, ACL_SUCCESS)
    assert acl.rt.free_physical(handle) == ACL_SUCCESS  # balances the retain
    assert acl.rt.mem_get_address_range(mapped.va + 12345) == (mapped.va, mapped.size, ACL_SUCCESS)
    dev, ret = acl.rt.malloc(100, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    base, size, ret = acl.rt.mem_get_address_range(dev + 10)
    assert (base, ret) == (dev, ACL_SUCCESS) and size >= 100
    assert acl.rt.free(dev) == ACL_SUCCESS
