"""Helpers of the acl binding tests: mapped device memory and byte copies through acl.rt.memcpy."""
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
