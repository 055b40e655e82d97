"""Streams through the binding: asynchronous copies and memsets whose bytes are there once the stream
is synchronised, stream value write / wait, timed synchronisation, abort, forced destruction, and
every misuse's code compared with the same C call made through ctypes."""
import ctypes

import pytest

import acl
import acl.rt
import acl.util

from acl_capi import load, mismatches, out_ptr
from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE,
                           ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_MEM_MALLOC_HUGE_FIRST,
                           ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
                           ACL_STREAM_DEVICE_USE_ONLY, ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_SYNC,
                           ACL_STREAM_PERSISTENT, ACL_STREAM_WAIT_VALUE_EQ, ACL_SUCCESS, MIB, pattern)
from acl_helpers import d2h, h2d


@pytest.fixture(scope="module")
def lib():
    return load()


def new_stream(flags=None):
    if flags is None:
        s, ret = acl.rt.create_stream()
    else:
        s, ret = acl.rt.create_stream_with_config(0, flags)
    assert ret == ACL_SUCCESS and s != 0
    return s


@pytest.fixture
def stream():
    s = new_stream()
    yield s
    assert acl.rt.destroy_stream(s) == ACL_SUCCESS


@pytest.fixture
def dev():
    """1 MiB of aclrtMalloc memory, zeroed."""
    ptr, ret = acl.rt.malloc(MIB, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    assert acl.rt.memset(ptr, MIB, 0, MIB) == ACL_SUCCESS
    yield ptr
    assert acl.rt.free(ptr) == ACL_SUCCESS


def test_async_copies_move_the_bytes_by_the_synchronisation(stream, mapped):
    size = mapped.size
    data = pattern(size, 31)  # kept alive until the stream is synchronised: the copy reads it late
    host, ret = acl.rt.malloc_host(size)
    assert ret == ACL_SUCCESS
    assert acl.rt.memcpy_async(mapped.va, size, acl.util.bytes_to_ptr(data), size, ACL_MEMCPY_HOST_TO_DEVICE,
                               stream) == ACL_SUCCESS
    assert acl.rt.memcpy_async(host, size, mapped.va, size, ACL_MEMCPY_DEVICE_TO_HOST, stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    assert acl.util.ptr_to_bytes(host, size) == data
    assert acl.rt.free_host(host) == ACL_SUCCESS


def test_memset_async_and_device_to_device_in_stream_order(stream, mapped, dev):
    data = pattern(mapped.size, 7)
    assert h2d(mapped.va, data) == ACL_SUCCESS
    # Queued in order: fill 1 MiB of dev, copy it over the middle of the mapping, refill dev.
    assert acl.rt.memset_async(dev, MIB, 0xA5, MIB, stream) == ACL_SUCCESS
    assert acl.rt.memcpy_async(mapped.va + 4096, MIB, dev, 10000, ACL_MEMCPY_DEVICE_TO_DEVICE,
                               stream) == ACL_SUCCESS
    assert acl.rt.memset_async(dev, MIB, 0x11, 100, stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    assert d2h(mapped.va, mapped.size) == data[:4096] + b"\xa5" * 10000 + data[4096 + 10000:]
    assert d2h(dev, 200) == b"\x11" * 100 + b"\xa5" * 100


def test_default_stream_is_0(dev):
    assert acl.rt.memset_async(dev, MIB, 0x5C, 64, 0) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(0) == ACL_SUCCESS
    assert d2h(dev, 65) == b"\x5c" * 64 + b"\x00"


def test_value_wait_blocks_the_stream_until_value_write(stream, dev):
    waiter = new_stream()
    # The waiter's memset runs only once the word at dev is 42.
    assert acl.rt.value_wait(dev, 42, ACL_STREAM_WAIT_VALUE_EQ, waiter) == ACL_SUCCESS
    assert acl.rt.memset_async(dev + 8, 8, 0x33, 8, waiter) == ACL_SUCCESS
    assert acl.rt.synchronize_stream_with_timeout(waiter, 100) == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    assert d2h(dev, 16) == bytes(16)
    assert acl.rt.value_write(dev, 42, 0, stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream_with_timeout(waiter, -1) == ACL_SUCCESS
    assert d2h(dev, 16) == (42).to_bytes(8, "little") + b"\x33" * 8
    assert acl.rt.destroy_stream(waiter) == ACL_SUCCESS


def test_abort_discards_a_blocked_stream(dev):
    s = new_stream()
    assert acl.rt.value_wait(dev, 7, ACL_STREAM_WAIT_VALUE_EQ, s) == ACL_SUCCESS  # never true
    assert acl.rt.memset_async(dev, MIB, 0x77, 64, s) == ACL_SUCCESS
    # The device's synchronisation waits for the blocked stream too.
    assert acl.rt.synchronize_device_with_timeout(100) == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    assert acl.rt.stream_abort(s) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(s) == ACL_SUCCESS
    assert acl.rt.synchronize_device_with_timeout(-1) == ACL_SUCCESS  # -1: no timeout
    assert d2h(dev, 64) == bytes(64)  # the memset behind the wait was discarded
    # The stream is empty and usable again.
    assert acl.rt.memset_async(dev, MIB, 0x78, 64, s) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(s) == ACL_SUCCESS
    assert d2h(dev, 64) == b"\x78" * 64
    assert acl.rt.destroy_stream(s) == ACL_SUCCESS


def test_destroy_force_discards_the_queue_and_the_stream(dev):
    s = new_stream()
    assert acl.rt.value_wait(dev, 9, ACL_STREAM_WAIT_VALUE_EQ, s) == ACL_SUCCESS
    assert acl.rt.memset_async(dev, MIB, 0x99, 64, s) == ACL_SUCCESS
    assert acl.rt.destroy_stream_force(s) == ACL_SUCCESS
    assert d2h(dev, 64) == bytes(64)
    assert acl.rt.synchronize_stream(s) == ACL_ERROR_RT_PARAM_INVALID  # a destroyed stream


@pytest.mark.parametrize("flags", [0, ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC])
def test_stream_with_config_works_like_a_plain_one(flags, dev):
    s = new_stream(flags)
    assert acl.rt.memset_async(dev, MIB, 0x42, 32, s) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(s) == ACL_SUCCESS
    assert d2h(dev, 32) == b"\x42" * 32
    assert acl.rt.destroy_stream(s) == ACL_SUCCESS


def test_codes_match_the_c_api(lib, dev):
    dead = new_stream()
    assert acl.rt.destroy_stream(dead) == ACL_SUCCESS  # a token that no longer names a stream
    live = new_stream()
    src = bytes(64)
    sp = acl.util.bytes_to_ptr(src)
    out = ctypes.byref(out_ptr())
    cases = {
        "destroy_stream(0)": (ACL_ERROR_INVALID_PARAM, acl.rt.destroy_stream(0), lib.aclrtDestroyStream(None)),
        "destroy_stream(destroyed)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.destroy_stream(dead),
                                      lib.aclrtDestroyStream(dead)),
        "destroy_stream_force(0)": (ACL_ERROR_INVALID_PARAM, acl.rt.destroy_stream_force(0),
                                    lib.aclrtDestroyStreamForce(None)),
        "synchronize_stream(destroyed)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.synchronize_stream(dead),
                                          lib.aclrtSynchronizeStream(dead)),
        "synchronize_stream_with_timeout(0 ms)": (ACL_ERROR_RT_PARAM_INVALID,
                                                  acl.rt.synchronize_stream_with_timeout(live, 0),
                                                  lib.aclrtSynchronizeStreamWithTimeout(live, 0)),
        "synchronize_stream_with_timeout(-2 ms)": (ACL_ERROR_RT_PARAM_INVALID,
                                                   acl.rt.synchronize_stream_with_timeout(live, -2),
                                                   lib.aclrtSynchronizeStreamWithTimeout(live, -2)),
        "synchronize_device_with_timeout(0 ms)": (ACL_ERROR_RT_PARAM_INVALID,
                                                  acl.rt.synchronize_device_with_timeout(0),
                                                  lib.aclrtSynchronizeDeviceWithTimeout(0)),
        "stream_abort(destroyed)": (ACL_ERROR_RT_INVALID_HANDLE, acl.rt.stream_abort(dead),
                                    lib.aclrtStreamAbort(dead)),
        "create_stream_with_config(PERSISTENT)": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                                                  acl.rt.create_stream_with_config(0, ACL_STREAM_PERSISTENT)[1],
                                                  lib.aclrtCreateStreamWithConfig(out, 0, ACL_STREAM_PERSISTENT)),
        "create_stream_with_config(DEVICE_USE_ONLY|FAST_LAUNCH)": (
            ACL_ERROR_RT_PARAM_INVALID,
            acl.rt.create_stream_with_config(0, ACL_STREAM_DEVICE_USE_ONLY | ACL_STREAM_FAST_LAUNCH)[1],
            lib.aclrtCreateStreamWithConfig(out, 0, ACL_STREAM_DEVICE_USE_ONLY | ACL_STREAM_FAST_LAUNCH)),
        "memcpy_async(destroyed stream)": (ACL_ERROR_RT_PARAM_INVALID,
                                           acl.rt.memcpy_async(dev, 64, sp, 64, ACL_MEMCPY_HOST_TO_DEVICE, dead),
                                           lib.aclrtMemcpyAsync(dev, 64, sp, 64, ACL_MEMCPY_HOST_TO_DEVICE, dead)),
        "memcpy_async(count > dest_max)": (ACL_ERROR_RT_PARAM_INVALID,
                                           acl.rt.memcpy_async(dev, 16, sp, 64, ACL_MEMCPY_HOST_TO_DEVICE, live),
                                           lib.aclrtMemcpyAsync(dev, 16, sp, 64, ACL_MEMCPY_HOST_TO_DEVICE, live)),
        "memcpy_async(kind 7)": (ACL_ERROR_INVALID_PARAM, acl.rt.memcpy_async(dev, 64, sp, 64, 7, live),
                                 lib.aclrtMemcpyAsync(dev, 64, sp, 64, 7, live)),
        "memset_async(NULL)": (ACL_ERROR_INVALID_PARAM, acl.rt.memset_async(0, 64, 1, 64, live),
                               lib.aclrtMemsetAsync(None, 64, 1, 64, live)),
        "memset_async(destroyed stream)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.memset_async(dev, 64, 1, 64, dead),
                                           lib.aclrtMemsetAsync(dev, 64, 1, 64, dead)),
        "value_write(NULL)": (ACL_ERROR_INVALID_PARAM, acl.rt.value_write(0, 1, 0, live),
                              lib.aclrtValueWrite(None, 1, 0, live)),
        "value_write(unaligned)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.value_write(dev + 4, 1, 0, live),
                                   lib.aclrtValueWrite(dev + 4, 1, 0, live)),
        "value_write(flag 1)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.value_write(dev, 1, 1, live),
                                lib.aclrtValueWrite(dev, 1, 1, live)),
        "value_write(host memory)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.value_write(sp, 1, 0, live),
                                     lib.aclrtValueWrite(sp, 1, 0, live)),
        "value_write(destroyed stream)": (ACL_ERROR_RT_INVALID_HANDLE, acl.rt.value_write(dev, 1, 0, dead),
                                          lib.aclrtValueWrite(dev, 1, 0, dead)),
        "value_wait(flag 4)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.value_wait(dev, 1, 4, live),
                               lib.aclrtValueWait(dev, 1, 4, live)),
    }
    assert mismatches(cases) == {}, "(expected, binding, C API)"
    assert acl.rt.synchronize_stream(live) == ACL_SUCCESS  # nothing failed was queued
    assert d2h(dev, 64) == bytes(64)
    assert acl.rt.destroy_stream(live) == ACL_SUCCESS


def test_failed_create_returns_0():
    assert acl.rt.create_stream_with_config(0, ACL_STREAM_PERSISTENT) == (0, ACL_ERROR_RT_FEATURE_NOT_SUPPORT)


@pytest.mark.parametrize("call, args", [
    (acl.rt.create_stream, (0,)),
    (acl.rt.create_stream_with_config, (0,)),
    (acl.rt.destroy_stream, ("1",)),
    (acl.rt.synchronize_stream, (None,)),
    (acl.rt.synchronize_stream_with_timeout, (0, 1.5)),
    (acl.rt.stream_abort, ()),
    (acl.rt.memcpy_async, (1, 1, 1, 1, 1)),
    (acl.rt.memset_async, (1, 1, "x", 1, 0)),
    (acl.rt.value_write, (1, 1, 0)),
    (acl.rt.value_wait, (1, 1, 0, [0])),
    (acl.rt.synchronize_device_with_timeout, ("1",)),
])
def test_argument_conversion_raises_type_error(call, args):
    with pytest.raises(TypeError) as e:
        call(*args)
    assert str(e.value) == f"acl.rt.{call.__name__} args parse failed"
