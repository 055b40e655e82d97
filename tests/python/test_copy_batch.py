"""Batch copies through the binding (runtime-extra.md 7): lists in, (fail_index, ret) out. The bytes
move, fail_index names the failing entry as the C call's *failIndex does, the codes equal the C
API's (ctypes), and lists of different lengths or of the wrong types raise before any call."""
import ctypes

import pytest

import acl
import acl.rt
import acl.util

from acl_capi import BatchAttr, Location, array, load, mismatches
from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_INVALID_HANDLE, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_MEM_LOCATION_TYPE_DEVICE, ACL_MEM_LOCATION_TYPE_HOST, ACL_MEM_MALLOC_HUGE_FIRST,
                           ACL_SUCCESS, MIB, SIZE_MAX, pattern)
from acl_helpers import d2h, h2d

HOST = {"id": 0, "type": ACL_MEM_LOCATION_TYPE_HOST}
DEV0 = {"id": 0, "type": ACL_MEM_LOCATION_TYPE_DEVICE}
H2D = {"dstLoc": DEV0, "srcLoc": HOST}
D2H = {"dstLoc": HOST, "srcLoc": DEV0}


@pytest.fixture(scope="module")
def lib():
    return load()


@pytest.fixture
def bufs():
    """(device, pinned host) buffers of 1 MiB each."""
    dev, ret = acl.rt.malloc(MIB, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    host, ret = acl.rt.malloc_host(MIB)
    assert ret == ACL_SUCCESS
    yield dev, host
    assert acl.rt.free(dev) == ACL_SUCCESS
    assert acl.rt.free_host(host) == ACL_SUCCESS


def c_batch(lib, dsts, maxs, srcs, sizes, attrs, idx, stream=None):
    """The same batch through ctypes: (fail_index, ret), fail_index starting at SIZE_MAX as in the binding."""
    fail = ctypes.c_size_t(SIZE_MAX)
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    def loc(d):
        return Location(d.get("id", 0), d.get("type", 0))

    c_attrs = array(BatchAttr, [BatchAttr(loc(a.get("dstLoc", {})), loc(a.get("srcLoc", {})),
                                          (ctypes.c_uint8 * 16)(*a.get("rsv", []))) for a in attrs])
    args = [array(vp, dsts), array(sz, maxs), array(vp, srcs), array(sz, sizes), len(sizes), c_attrs, array(sz, idx),
            len(idx), ctypes.byref(fail)]
    ret = lib.aclrtMemcpyBatch(*args) if stream is None else lib.aclrtMemcpyBatchAsync(*args, stream)
    return fail.value, ret


def test_batch_moves_every_entry(bufs):
    dev, host = bufs
    up = pattern(3000, 1)
    # Entry 0: host bytes -> device (attrs[0]); entries 1, 2: device -> pinned host (attrs[1]).
    assert acl.rt.memcpy_batch([dev, host, host + 5000], [MIB, MIB, 100], [acl.util.bytes_to_ptr(up), dev, dev + 10],
                               [3000, 3000, 100], [H2D, D2H], [0, 1]) == (SIZE_MAX, ACL_SUCCESS)
    assert d2h(dev, 3000) == up
    assert acl.util.ptr_to_bytes(host, 3000) == up
    assert acl.util.ptr_to_bytes(host + 5000, 100) == up[10:110]


def test_batch_async_moves_the_bytes_by_the_synchronisation(bufs):
    dev, host = bufs
    s, ret = acl.rt.create_stream()
    assert ret == ACL_SUCCESS
    data = pattern(MIB, 9)
    assert h2d(dev, data) == ACL_SUCCESS
    # vllm-ascend's shape: one attribute at index 0, dest_maxs = sizes.
    halves = [MIB // 2, MIB // 2]
    assert acl.rt.memcpy_batch_async([host, host + MIB // 2], halves, [dev, dev + MIB // 2], halves, [D2H], [0],
                                     s) == (SIZE_MAX, ACL_SUCCESS)
    assert acl.rt.synchronize_stream(s) == ACL_SUCCESS
    assert acl.util.ptr_to_bytes(host, MIB) == data
    assert acl.rt.destroy_stream(s) == ACL_SUCCESS


def test_codes_and_fail_index_match_the_c_api(lib, bufs):
    dev, host = bufs
    s, ret = acl.rt.create_stream()
    assert ret == ACL_SUCCESS
    dead, ret = acl.rt.create_stream()
    assert acl.rt.destroy_stream(dead) == ACL_SUCCESS
    # name: (expected (fail_index, ret), the batch's six lists)
    table = {
        "empty": ((SIZE_MAX, ACL_ERROR_INVALID_PARAM), ([], [], [], [], [], [])),
        "all sizes 0": ((SIZE_MAX, ACL_SUCCESS), ([dev], [64], [host], [0], [H2D], [0])),
        "dest_max < size": ((SIZE_MAX, ACL_ERROR_INVALID_PARAM), ([dev], [32], [host], [64], [H2D], [0])),
        "rsv byte set": ((SIZE_MAX, ACL_ERROR_INVALID_PARAM),
                         ([dev], [64], [host], [64], [dict(H2D, rsv=[0, 1])], [0])),
        "no attrs": ((SIZE_MAX, ACL_ERROR_RT_PARAM_INVALID), ([dev], [64], [host], [64], [], [])),
        "attrs_indexes[0] 1": ((SIZE_MAX, ACL_ERROR_RT_PARAM_INVALID),
                               ([dev, dev], [64, 64], [host, host], [64, 64], [H2D], [1])),
        "more attrs than entries": ((SIZE_MAX, ACL_ERROR_RT_PARAM_INVALID),
                                    ([dev], [64], [host], [64], [H2D, H2D], [0, 1])),
        "entry 1 NULL": ((1, ACL_ERROR_RT_PARAM_INVALID), ([dev, 0], [64, 64], [host, host], [64, 64], [H2D], [0])),
        "entry 1 device to device": ((1, ACL_ERROR_RT_PARAM_INVALID),
                                     ([dev, dev], [64, 64], [host, dev + 64], [64, 64],
                                      [H2D, {"dstLoc": DEV0, "srcLoc": DEV0}], [0, 1])),
        "wrong location": ((0, ACL_ERROR_RT_PARAM_INVALID), ([dev], [64], [host], [64], [D2H], [0])),
    }
    cases = {}
    for name, (expected, lists) in table.items():
        cases[name] = (expected, acl.rt.memcpy_batch(*lists), c_batch(lib, *lists))
        cases[name + " (async)"] = (expected, acl.rt.memcpy_batch_async(*lists, s), c_batch(lib, *lists, stream=s))
    ok = ([dev], [64], [host], [64], [H2D], [0])
    cases["async on a destroyed stream"] = ((SIZE_MAX, ACL_ERROR_RT_INVALID_HANDLE),
                                            acl.rt.memcpy_batch_async(*ok, dead), c_batch(lib, *ok, stream=dead))
    assert mismatches(cases) == {}, "(expected, binding, C API)"
    assert acl.rt.synchronize_stream(s) == ACL_SUCCESS
    assert acl.rt.destroy_stream(s) == ACL_SUCCESS


@pytest.mark.parametrize("lists, error", [
    (([1, 2], [64], [3], [64], [H2D], [0]), ValueError),   # dsts longer than sizes
    (([1], [64, 1], [3], [64], [H2D], [0]), ValueError),   # dest_maxs
    (([1], [64], [], [64], [H2D], [0]), ValueError),       # srcs
    (([1], [64], [3], [64], [H2D], [0, 1]), ValueError),   # attrs_indexes longer than attrs
    (((1,), [64], [3], [64], [H2D], [0]), TypeError),      # a tuple is not a list
    (([1], [64], ["3"], [64], [H2D], [0]), TypeError),     # an item that is not an int
    (([1], [64], [3], [64.0], [H2D], [0]), TypeError),
    (([1], [64], [3], [64], [[0, 1]], [0]), TypeError),    # an attribute that is not a dict
    (([1], [64], [3], [64], H2D, [0]), TypeError),
])
def test_bad_lists_raise_before_any_call(lists, error):
    acl.get_recent_err_msg()
    for call, extra in ((acl.rt.memcpy_batch, ()), (acl.rt.memcpy_batch_async, (0,))):
        with pytest.raises(error) as e:
            call(*lists, *extra)
        assert str(e.value).startswith(f"acl.rt.{call.__name__}: ")
    assert acl.get_recent_err_msg() is None  # the library was not called


def test_attr_dict_keys_missing_or_not_int_stay_zero(bufs):
    dev, host = bufs
    # {} is dstLoc = srcLoc = {id 0, type HOST}: a D2H entry fails the dstLoc check on entry 0 ...
    assert acl.rt.memcpy_batch([host], [64], [dev], [64], [{}], [0]) == (0, ACL_ERROR_RT_PARAM_INVALID)
    # ... and a non-int type is ignored the same way; unknown keys too.
    bad = {"dstLoc": {"id": 0, "type": "1"}, "srcLoc": HOST, "colour": 1}
    assert acl.rt.memcpy_batch([dev], [64], [host], [64], [bad], [0]) == (0, ACL_ERROR_RT_PARAM_INVALID)
    assert acl.rt.memcpy_batch([dev], [64], [host], [64], [dict(H2D, colour=1)], [0]) == (SIZE_MAX, ACL_SUCCESS)
