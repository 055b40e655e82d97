"""The calls only A3 (Ascend910_93xx) parts have, through the binding. Not collected by ctest on its
own (no test_ prefix): test_a3.py runs this file with pytest in a separate process whose ACLVMM_SOC
names an A3 part, because the SoC is fixed when the runtime starts.

FABRIC V2 handles (128 bytes) exported, whitelisted and imported onto another device with bytes
read back; the no-UC reservation; links set on a handle and selected for a mapping, counted by the
statistics; the IPC key attribute and the inter-server whitelist, with a real importing process."""
import hashlib
import os
import struct

import pytest

import acl
import acl.rt

from acl_capi import load, stats
from acl_constants import (A3_SOC, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                           ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE,
                           ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK,
                           ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_HCCS, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_ONE_PORT_PATH,
                           ACL_RT_MEM_ACCESS_LINK_HCCS, ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH, ACL_RT_MEM_LINK_IDX_0,
                           ACL_SUCCESS, FABRIC_HANDLE_BYTES, GIB, IPC_KEY_BYTES, MIB, device_prop, pattern)
from acl_helpers import Child, Mapped, d2h, h2d

FABRIC = ACL_MEM_SHARE_HANDLE_TYPE_FABRIC
IPC_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ipc_child.py")


@pytest.fixture(scope="module", autouse=True)
def a3():
    assert acl.get_soc_name() == os.environ.get("ACLVMM_SOC") == A3_SOC


@pytest.fixture(scope="module")
def lib():
    return load()


@pytest.fixture(scope="module")
def contexts():
    """(device 0's context, device 1's context); device 1 is reset at the end."""
    ctx0, ret = acl.rt.get_context()
    assert ret == ACL_SUCCESS and acl.rt.set_device(1) == ACL_SUCCESS
    ctx1, ret = acl.rt.get_context()
    assert ret == ACL_SUCCESS and acl.rt.set_context(ctx0) == ACL_SUCCESS
    yield ctx0, ctx1
    assert acl.rt.set_context(ctx0) == ACL_SUCCESS
    assert acl.rt.reset_device(1) == ACL_SUCCESS


def test_fabric_handle_imports_onto_another_device(contexts):
    ctx0, ctx1 = contexts
    size = 2 * MIB
    mine = Mapped(size)
    data = pattern(size, 91)
    assert h2d(mine.va, data) == ACL_SUCCESS
    shareable, ret = acl.rt.mem_export_to_shareable_handle_v2(mine.handle, 0, FABRIC)
    assert ret == ACL_SUCCESS and isinstance(shareable, bytes) and len(shareable) == FABRIC_HANDLE_BYTES
    # The driver's first 20 bytes: handle type 1, SDID, logical and physical device, share id.
    kind, _sdid, logical, physical, share_id = struct.unpack_from("<5I", shareable)
    assert (kind, logical, physical) == (1, 0, 0) and share_id != 0
    assert acl.rt.mem_set_pid_to_shareable_handle_v2(shareable, FABRIC, [os.getpid()]) == ACL_SUCCESS
    # Not onto the exporting device in the exporting process; onto device 1 it works.
    assert acl.rt.mem_import_from_shareable_handle_v2(shareable, FABRIC, 0) == (0, ACL_ERROR_RT_DRV_INTERNAL_ERROR)
    assert acl.rt.set_context(ctx1) == ACL_SUCCESS
    try:
        handle, ret = acl.rt.mem_import_from_shareable_handle_v2(bytearray(shareable), FABRIC, 0)
        assert ret == ACL_SUCCESS and handle != 0
        prop, ret = acl.rt.mem_get_allocation_properties_from_handle(handle)
        assert ret == ACL_SUCCESS and prop["location"]["id"] == 0  # the exporter's device
        va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
        assert ret == ACL_SUCCESS and acl.rt.map_mem(va, size, 0, handle, 0) == ACL_SUCCESS
        assert d2h(va, size) == data
        assert h2d(va + MIB, pattern(4096, 92)) == ACL_SUCCESS
        assert acl.rt.unmap_mem(va) == ACL_SUCCESS and acl.rt.release_mem_address(va) == ACL_SUCCESS
        assert acl.rt.free_physical(handle) == ACL_SUCCESS
        # An all-zero handle names no export.
        assert acl.rt.mem_import_from_shareable_handle_v2(bytes(FABRIC_HANDLE_BYTES), FABRIC, 0) == \
            (0, ACL_ERROR_RT_INVALID_HANDLE)
    finally:
        assert acl.rt.set_context(ctx0) == ACL_SUCCESS
    assert d2h(mine.va + MIB, 4096) == pattern(4096, 92)
    mine.release()


def test_no_uc_reservation_needs_a_fixed_address():
    assert acl.rt.reserve_mem_address_no_uc_memory(GIB, 0, 0, 0) == (0, ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
    fixed = 0x2000_0000_0000  # 1 GiB-aligned, in the dynamic window (behavior.md 4)
    assert acl.rt.reserve_mem_address_no_uc_memory(GIB, 0, fixed + 2 * MIB, 0) == (0, ACL_ERROR_RT_PARAM_INVALID)
    va, ret = acl.rt.reserve_mem_address_no_uc_memory(GIB, 0, fixed, 0)
    assert (va, ret) == (fixed, ACL_SUCCESS)
    assert acl.rt.release_mem_address(va) == ACL_SUCCESS


def test_links_of_mappings_are_counted(lib):
    size = 2 * MIB
    handle, ret = acl.rt.malloc_physical(size, device_prop(0), 0)
    assert ret == ACL_SUCCESS
    assert acl.rt.mem_map_set_link(handle, ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH) == ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED
    assert acl.rt.mem_map_set_link(handle, 4) == ACL_ERROR_RT_PARAM_INVALID
    before = stats(lib)["links"]
    assert acl.rt.mem_map_set_link(handle, ACL_RT_MEM_ACCESS_LINK_HCCS) == ACL_SUCCESS
    va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
    assert ret == ACL_SUCCESS and acl.rt.map_mem(va, size, 0, handle, 0) == ACL_SUCCESS
    data = pattern(size, 93)
    assert h2d(va, data) == ACL_SUCCESS
    # The same memory again at va2, over the SIO link: the bytes are the same.
    va2, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
    assert ret == ACL_SUCCESS
    assert acl.rt.mem_map_selected_link(va2, size, va, 2) == ACL_ERROR_INVALID_PARAM
    assert acl.rt.mem_map_selected_link(va2, size, va, ACL_RT_MEM_LINK_IDX_0) == ACL_SUCCESS
    assert d2h(va2, size) == data
    after = stats(lib)["links"]
    assert {k: after[k] - before[k] for k in before} == {"sio": 1, "hccs": 1, "ub_one_port": 0, "ub_multi_port": 0}
    for v in (va2, va):
        assert acl.rt.unmap_mem(v) == ACL_SUCCESS and acl.rt.release_mem_address(v) == ACL_SUCCESS
    assert acl.rt.free_physical(handle) == ACL_SUCCESS


def test_ipc_key_attribute_and_inter_server_whitelist():
    size = 2 * MIB
    dev, ret = acl.rt.malloc(size, 0)
    assert ret == ACL_SUCCESS
    data = pattern(size, 94)
    assert h2d(dev, data) == ACL_SUCCESS
    key, ret = acl.rt.ipc_mem_get_export_key(dev, size, IPC_KEY_BYTES, 0)
    assert ret == ACL_SUCCESS
    link = ACL_RT_IPC_MEM_ATTR_ACCESS_LINK
    assert acl.rt.ipc_mem_set_attr(key, link, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_HCCS) == ACL_SUCCESS
    assert acl.rt.ipc_mem_set_attr(key, link, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_ONE_PORT_PATH) == \
        ACL_ERROR_RT_DRV_INTERNAL_ERROR  # UB paths: A5 only
    assert acl.rt.ipc_mem_set_attr(key, 1, 0) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.ipc_mem_set_attr(key, link, 4) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.ipc_mem_set_attr("0" * 64, link, 0) == ACL_ERROR_RT_DRV_INTERNAL_ERROR  # no such export
    # Entries without pids: the C API's 107000 (a missing "pid" is NULL, an empty one num 0).
    server_pids = acl.rt.ipc_mem_import_pid_inter_server
    assert server_pids(key, []) == ACL_ERROR_RT_PARAM_INVALID
    assert server_pids(key, [{"sdid": 0}]) == ACL_ERROR_RT_PARAM_INVALID
    assert server_pids(key, [{"sdid": 0, "pid": None}]) == ACL_ERROR_RT_PARAM_INVALID
    assert server_pids(key, [{"sdid": 0, "pid": []}]) == ACL_ERROR_RT_PARAM_INVALID
    assert server_pids(key, [{"pid": list(range(1, 33))}]) == ACL_ERROR_RT_PARAM_INVALID  # at most 31
    with Child(IPC_CHILD) as child:
        tgid = int(child.ready[0])
        assert child.cmd("import", key, 0) == [str(ACL_ERROR_RT_DRV_INTERNAL_ERROR), "0"]  # not whitelisted
        # Two entries (servers); aclvmm is one server, so each entry whitelists its pids here.
        assert server_pids(key, [{"sdid": 7, "pid": [tgid + 100000]}, {"sdid": 0, "pid": [tgid]}]) == ACL_SUCCESS
        ret, ptr = child.cmd("import", key, 0)
        assert ret == str(ACL_SUCCESS) and int(ptr) != 0
        assert child.cmd("read", 0, size) == [hashlib.sha256(data).hexdigest()]
        assert child.cmd("close", key) == [str(ACL_SUCCESS)]
        assert child.finish() == (ACL_SUCCESS, 0)
    assert acl.rt.ipc_mem_close(key) == ACL_SUCCESS
    assert acl.rt.free(dev) == ACL_SUCCESS


@pytest.mark.parametrize("server_pids", [({"pid": [1]},), [[1]], [{"pid": (1,)}], [{"pid": [1 << 40]}], [{"pid": 1}]])
def test_server_pids_must_be_a_list_of_dicts_with_int32_pid_lists(server_pids):
    with pytest.raises(TypeError) as e:
        acl.rt.ipc_mem_import_pid_inter_server("0" * 64, server_pids)
    assert str(e.value).startswith("acl.rt.ipc_mem_import_pid_inter_server: ")
