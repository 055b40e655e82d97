"""acl.util: bytes_to_ptr hands out the bytes object's own buffer, ptr_to_bytes copies."""
import pytest

import acl
import acl.rt
import acl.util

from acl_constants import ACL_MEMCPY_HOST_TO_HOST, ACL_SUCCESS, pattern


def test_round_trip_without_copy():
    data = pattern(100000, 5)
    ptr = acl.util.bytes_to_ptr(data)
    assert ptr != 0 and acl.util.bytes_to_ptr(data) == ptr  # the same buffer every time
    assert acl.util.ptr_to_bytes(ptr, len(data)) == data
    assert acl.util.ptr_to_bytes(ptr + 1000, 10) == data[1000:1010]
    assert acl.util.ptr_to_bytes(ptr, 0) == b""
    assert acl.util.ptr_to_bytes(0, 0) == b""


def test_ptr_to_bytes_is_a_snapshot():
    host, ret = acl.rt.malloc_host(64)
    assert ret == ACL_SUCCESS
    first = pattern(64, 1)
    assert acl.rt.memcpy(host, 64, acl.util.bytes_to_ptr(first), 64, ACL_MEMCPY_HOST_TO_HOST) == ACL_SUCCESS
    snapshot = acl.util.ptr_to_bytes(host, 64)
    second = pattern(64, 2)
    assert acl.rt.memcpy(host, 64, acl.util.bytes_to_ptr(second), 64, ACL_MEMCPY_HOST_TO_HOST) == ACL_SUCCESS
    assert snapshot == first and acl.util.ptr_to_bytes(host, 64) == second
    assert acl.rt.free_host(host) == ACL_SUCCESS


@pytest.mark.parametrize("value", [bytearray(b"ab"), memoryview(b"ab"), "ab", 5])
def test_bytes_to_ptr_accepts_only_bytes(value):
    with pytest.raises(ValueError):
        acl.util.bytes_to_ptr(value)


def test_ptr_to_bytes_refuses_null_with_a_size():
    with pytest.raises(ValueError):
        acl.util.ptr_to_bytes(0, 1)
