"""Access rights, the mapping without access, the no-UC reservation, links and the P2P map through the
binding (behavior.md 2, 3, 8, 10, 11): access descriptors are a list of dicts, the rights decide
which copies succeed and whether the CPU reads the bytes in place, and the codes equal the C API's
(ctypes). The A3-only successes are in test_a3.py."""
import ctypes

import pytest

import acl
import acl.rt
import acl.util

from acl_capi import AccessDesc, Location, array, load, mismatches, out_ptr
from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_PARAM_INVALID, ACL_MEM_LOCATION_TYPE_DEVICE,
                           ACL_MEM_LOCATION_TYPE_HOST, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
                           ACL_RT_MEM_ACCESS_FLAGS_NONE, ACL_RT_MEM_ACCESS_FLAGS_READ,
                           ACL_RT_MEM_ACCESS_FLAGS_READWRITE, ACL_RT_MEM_ACCESS_LINK_HCCS, ACL_RT_MEM_LINK_IDX_0,
                           ACL_SUCCESS, GIB, MIB, device_prop, pattern)
from acl_helpers import d2h, h2d

HOST = {"id": 0, "type": ACL_MEM_LOCATION_TYPE_HOST}
DEV0 = {"id": 0, "type": ACL_MEM_LOCATION_TYPE_DEVICE}
DEV1 = {"id": 1, "type": ACL_MEM_LOCATION_TYPE_DEVICE}


@pytest.fixture(scope="module")
def lib():
    return load()


class NoAccess:
    """size bytes of device 0 memory mapped with mem_map_no_access."""

    def __init__(self, size=2 * MIB):
        self.size = size
        self.handle, ret = acl.rt.malloc_physical(size, device_prop(0), 0)
        assert ret == ACL_SUCCESS
        self.va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
        assert ret == ACL_SUCCESS
        assert acl.rt.mem_map_no_access(self.va, size, 0, self.handle, 0) == ACL_SUCCESS

    def release(self):
        assert acl.rt.unmap_mem(self.va) == ACL_SUCCESS
        assert acl.rt.release_mem_address(self.va) == ACL_SUCCESS
        assert acl.rt.free_physical(self.handle) == ACL_SUCCESS


@pytest.fixture
def no_access():
    m = NoAccess()
    yield m
    m.release()


def access(va, location):
    flags, ret = acl.rt.mem_get_access(va, location)
    assert ret == ACL_SUCCESS
    return flags


def test_no_access_mapping_until_granted(no_access):
    va, size = no_access.va, no_access.size
    data = pattern(size, 71)
    assert [access(va, loc) for loc in (DEV0, DEV1, HOST)] == [0, 0, 0]
    # Device 0 may not write the range yet: the copy fails and changes nothing.
    assert h2d(va, data) == ACL_ERROR_RT_DRV_INTERNAL_ERROR
    # One call, two descriptors (count = len): device 0 READWRITE, the host READ.
    assert acl.rt.mem_set_access(va, size, [{"flags": ACL_RT_MEM_ACCESS_FLAGS_READWRITE, "location": DEV0},
                                            {"flags": ACL_RT_MEM_ACCESS_FLAGS_READ, "location": HOST}]) == 0
    assert [access(va, loc) for loc in (DEV0, DEV1, HOST)] == [ACL_RT_MEM_ACCESS_FLAGS_READWRITE, 0,
                                                               ACL_RT_MEM_ACCESS_FLAGS_READ]
    assert h2d(va, data) == ACL_SUCCESS
    assert d2h(va, size) == data
    # With READ the CPU reads the device memory in place, at its device address.
    assert acl.util.ptr_to_bytes(va, size) == data
    # Downgrade device 0 to READ: reads still work, writes fail.
    assert acl.rt.mem_set_access(va, size, [{"flags": ACL_RT_MEM_ACCESS_FLAGS_READ, "location": DEV0}]) == 0
    assert h2d(va, pattern(64, 72)) == ACL_ERROR_RT_DRV_INTERNAL_ERROR
    assert d2h(va, 64) == data[:64]
    # Revoke the host (never touch the address with the CPU after this).
    assert acl.rt.mem_set_access(va, size, [{"flags": ACL_RT_MEM_ACCESS_FLAGS_NONE, "location": HOST}]) == 0
    assert access(va, HOST) == 0


def test_access_on_a_plain_mapping(mapped):
    # map_mem gives the owning device READWRITE; a peer gets what it is granted.
    assert access(mapped.va, DEV0) == ACL_RT_MEM_ACCESS_FLAGS_READWRITE
    assert access(mapped.va + mapped.size - 1, DEV1) == 0
    assert acl.rt.mem_set_access(mapped.va, mapped.size,
                                 [{"flags": ACL_RT_MEM_ACCESS_FLAGS_READ, "location": DEV1, "rsv": [0] * 12}]) == 0
    assert access(mapped.va, DEV1) == ACL_RT_MEM_ACCESS_FLAGS_READ


def test_failures_return_0_flags():
    assert acl.rt.mem_get_access(0, DEV0) == (0, ACL_ERROR_INVALID_PARAM)
    assert acl.rt.reserve_mem_address_no_uc_memory(GIB, 0, 0, 0) == (0, ACL_ERROR_RT_FEATURE_NOT_SUPPORT)


def test_p2p_map_gives_the_peer_device_access():
    dev, ret = acl.rt.malloc(2 * MIB, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    data = pattern(4096, 73)
    assert h2d(dev, data) == ACL_SUCCESS
    host, ret = acl.rt.malloc_host(4096)
    assert ret == ACL_SUCCESS

    # Contexts switch devices without taking more device references than the one reset below.
    ctx0, ret = acl.rt.get_context()
    assert ret == ACL_SUCCESS and acl.rt.set_device(1) == ACL_SUCCESS
    ctx1, ret = acl.rt.get_context()
    assert ret == ACL_SUCCESS and acl.rt.set_context(ctx0) == ACL_SUCCESS

    def read_on_device_1():
        """A D2H copy of device 0's memory made by device 1 (the current device copies)."""
        assert acl.rt.set_context(ctx1) == ACL_SUCCESS
        try:
            return acl.rt.memcpy(host, 4096, dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST)
        finally:
            assert acl.rt.set_context(ctx0) == ACL_SUCCESS

    assert read_on_device_1() == ACL_ERROR_RT_DRV_INTERNAL_ERROR
    assert acl.rt.mem_p2p_map(dev, 2 * MIB, 1, 0) == ACL_SUCCESS
    assert read_on_device_1() == ACL_SUCCESS
    assert acl.util.ptr_to_bytes(host, 4096) == data
    assert acl.rt.reset_device(1) == ACL_SUCCESS
    assert acl.rt.free_host(host) == ACL_SUCCESS
    assert acl.rt.free(dev) == ACL_SUCCESS


def test_codes_match_the_c_api(lib, mapped, no_access):
    va, size = no_access.va, no_access.size

    def descs(*pairs):
        return array(AccessDesc, [AccessDesc(f, Location(i, t)) for f, i, t in pairs])

    def c_get(ptr, loc_id, loc_type):
        return lib.aclrtMemGetAccess(ptr, ctypes.byref(Location(loc_id, loc_type)), ctypes.byref(ctypes.c_uint64()))

    rw = ACL_RT_MEM_ACCESS_FLAGS_READWRITE
    dev, ret = acl.rt.malloc(2 * MIB, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    out = ctypes.byref(out_ptr())
    S, G = acl.rt.mem_set_access, acl.rt.mem_get_access
    cases = {
        "set_access(empty list)": (ACL_ERROR_RT_PARAM_INVALID, S(va, size, []),
                                   lib.aclrtMemSetAccess(va, size, descs(), 0)),
        "set_access(NULL)": (ACL_ERROR_RT_PARAM_INVALID, S(0, size, [{"flags": rw, "location": DEV0}]),
                             lib.aclrtMemSetAccess(None, size, descs((rw, 0, 1)), 1)),
        "set_access(flags 2)": (ACL_ERROR_RT_PARAM_INVALID, S(va, size, [{"flags": 2, "location": DEV0}]),
                                lib.aclrtMemSetAccess(va, size, descs((2, 0, 1)), 1)),
        "set_access(host id 1)": (ACL_ERROR_RT_PARAM_INVALID, S(va, size, [{"flags": rw, "location": {"id": 1}}]),
                                  lib.aclrtMemSetAccess(va, size, descs((rw, 1, 0)), 1)),
        "set_access(second bad)": (ACL_ERROR_RT_PARAM_INVALID,
                                   S(va, size, [{"flags": rw, "location": DEV0}, {"flags": 7, "location": DEV1}]),
                                   lib.aclrtMemSetAccess(va, size, descs((rw, 0, 1), (7, 1, 1)), 2)),
        "set_access(not a mapping)": (ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                                      S(va + MIB, MIB, [{"flags": rw, "location": DEV1}]),
                                      lib.aclrtMemSetAccess(va + MIB, MIB, descs((rw, 1, 1)), 1)),
        "get_access(NULL)": (ACL_ERROR_INVALID_PARAM, G(0, DEV0)[1], c_get(None, 0, 1)),
        "get_access(type 5)": (ACL_ERROR_RT_PARAM_INVALID, G(va, {"id": 0, "type": 5})[1], c_get(va, 0, 5)),
        "get_access(device 64)": (ACL_ERROR_RT_PARAM_INVALID, G(va, {"id": 64, "type": 1})[1], c_get(va, 64, 1)),
        "map_no_access(flags 1)": (ACL_ERROR_INVALID_PARAM,
                                   acl.rt.mem_map_no_access(va, size, 0, no_access.handle, 1),
                                   lib.aclrtMemMapNoAccess(va, size, 0, no_access.handle, 1)),
        "map_no_access(mapped)": (ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                                  acl.rt.mem_map_no_access(va, size, 0, no_access.handle, 0),
                                  lib.aclrtMemMapNoAccess(va, size, 0, no_access.handle, 0)),
        "no_uc(A2)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT, acl.rt.reserve_mem_address_no_uc_memory(GIB, 0, 0, 0)[1],
                      lib.aclrtReserveMemAddressNoUCMemory(out, GIB, 0, None, 0)),
        "no_uc(size 0)": (ACL_ERROR_INVALID_PARAM, acl.rt.reserve_mem_address_no_uc_memory(0, 0, 0, 0)[1],
                          lib.aclrtReserveMemAddressNoUCMemory(out, 0, 0, None, 0)),
        "set_link(A2)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                         acl.rt.mem_map_set_link(mapped.handle, ACL_RT_MEM_ACCESS_LINK_HCCS),
                         lib.aclrtMemMapSetLink(mapped.handle, ACL_RT_MEM_ACCESS_LINK_HCCS)),
        "set_link(NULL)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_map_set_link(0, 0), lib.aclrtMemMapSetLink(None, 0)),
        "selected_link(A2)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                              acl.rt.mem_map_selected_link(va, size, mapped.va, ACL_RT_MEM_LINK_IDX_0),
                              lib.aclrtMemMapSelectedLink(va, size, mapped.va, ACL_RT_MEM_LINK_IDX_0)),
        "selected_link(idx 2)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_map_selected_link(va, size, mapped.va, 2),
                                 lib.aclrtMemMapSelectedLink(va, size, mapped.va, 2)),
        "p2p_map(device 99)": (ACL_ERROR_RT_INVALID_DEVICEID, acl.rt.mem_p2p_map(dev, 4096, 99, 0),
                               lib.aclrtMemP2PMap(dev, 4096, 99, 0)),
        "p2p_map(size 0)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_p2p_map(dev, 0, 1, 0),
                            lib.aclrtMemP2PMap(dev, 0, 1, 0)),
        "p2p_map(flags 1)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_p2p_map(dev, 4096, 1, 1),
                             lib.aclrtMemP2PMap(dev, 4096, 1, 1)),
    }
    assert mismatches(cases) == {}, "(expected, binding, C API)"
    assert acl.rt.free(dev) == ACL_SUCCESS


@pytest.mark.parametrize("call, args", [
    (acl.rt.mem_set_access, (1, 2, ({"flags": 3},))),   # a tuple is not a list
    (acl.rt.mem_set_access, (1, 2, [3])),               # an item that is not a dict
    (acl.rt.mem_set_access, (1, 2, {"flags": 3})),
    (acl.rt.mem_get_access, (1, [0, 1])),
    (acl.rt.mem_map_no_access, (1, 2, 3, 4)),
    (acl.rt.reserve_mem_address_no_uc_memory, (GIB, 0, None, 0)),
    (acl.rt.mem_map_set_link, (1,)),
    (acl.rt.mem_map_selected_link, (1, 2, 3, "0")),
    (acl.rt.mem_p2p_map, (1, 2, 3)),
])
def test_argument_conversion_raises_type_error(call, args):
    acl.get_recent_err_msg()
    with pytest.raises(TypeError) as e:
        call(*args)
    assert str(e.value).startswith(f"acl.rt.{call.__name__}")
    assert acl.get_recent_err_msg() is None
