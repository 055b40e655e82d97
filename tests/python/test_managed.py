"""Managed memory through the binding (behavior.md 10, docs/managed-memory.md): allocation, advice,
attributes as lists of int32, prefetches whose migrations the library's statistics count exactly
(read with ctypes aclvmmStatsJson()), and every misuse's code compared with the C API's."""
import ctypes

import pytest

import acl
import acl.rt
import acl.util

from acl_capi import ManagedLocation, array, load, mismatches, out_ptr, stats
from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID, ACL_MEM_ADVISE_SET_ACCESSED_BY,
                           ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, ACL_MEM_ADVISE_SET_READ_MOSTLY,
                           ACL_MEM_LOCATION_TYPE_MANAGED, ACL_MEM_LOCATIONTYPE_DEVICE, ACL_MEM_LOCATIONTYPE_HOST,
                           ACL_MEM_LOCATIONTYPE_INVALID, ACL_MEM_MALLOC_HUGE_FIRST,
                           ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
                           ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
                           ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                           ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
                           ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                           ACL_RT_MEM_ATTACH_GLOBAL, ACL_SUCCESS, MIB, pattern)

PAGE = 2 * MIB  # managed memory migrates in 2 MiB pages
DEVICE0 = {"type": ACL_MEM_LOCATIONTYPE_DEVICE, "id": 0}
DEVICE1 = {"type": ACL_MEM_LOCATIONTYPE_DEVICE, "id": 1}
HOST = {"type": ACL_MEM_LOCATIONTYPE_HOST, "id": 0}
NOT_SET = -2  # an attribute's value when the pages disagree or nothing was set


@pytest.fixture(scope="module")
def lib():
    return load()


@pytest.fixture
def stream():
    s, ret = acl.rt.create_stream()
    assert ret == ACL_SUCCESS
    yield s
    assert acl.rt.destroy_stream(s) == ACL_SUCCESS


@pytest.fixture
def managed():
    """Three pages of managed memory."""
    ptr, ret = acl.rt.mem_alloc_managed(3 * PAGE, ACL_RT_MEM_ATTACH_GLOBAL)
    assert ret == ACL_SUCCESS and ptr != 0
    yield ptr
    assert acl.rt.free(ptr) == ACL_SUCCESS


def cpu_write(ptr, data):
    """A plain CPU store (no copy call, so no device operation touches the pages)."""
    ctypes.memmove(ptr, data, len(data))


# How the fault thread read the faults (batches and their sizes): asserted apart, through
# cpu_faults, which counts every fault it read.
BATCH_KEYS = {"fault_batches", "fault_batch_max", "fault_batches_of_1", "fault_batches_of_2_3",
              "fault_batches_of_4_7", "fault_batches_of_8_15", "fault_batches_of_16_plus"}


def delta(before, after):
    return {k: after[k] - before[k] for k in before
            if not isinstance(before[k], bool) and k not in BATCH_KEYS}


def counters(lib):
    s = stats(lib)
    return s["managed"], s["devices"][0]["memory_used"]


def test_prefetch_to_a_device_and_back_moves_the_pages_the_statistics_count(lib, managed, stream):
    size = 3 * PAGE
    data = pattern(size, 61)
    cpu_write(managed, data)  # host-resident pages, written by the CPU: nothing migrates
    attrs, ret = acl.rt.pointer_get_attributes(managed)
    assert ret == ACL_SUCCESS and attrs["location"]["type"] == ACL_MEM_LOCATION_TYPE_MANAGED

    before, used_before = counters(lib)
    # Without CPU fault tracking (a seccomp filter forbidding userfaultfd) nothing migrates and
    # every counter stays 0 (docs/managed-memory.md section 2): nothing to count then.
    if not before["fault_tracking"]:
        pytest.skip("no CPU fault tracking here (userfaultfd refused): pages never migrate")
    moved = size
    assert acl.rt.mem_managed_prefetch_async(managed, size, DEVICE0, 0, stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    there, used_there = counters(lib)
    assert delta(before, there) == {"host_faults": 0, "device_faults": 0, "bytes_to_device": moved,
                                    "bytes_to_host": 0, "evictions": 0, "prefetch_bytes": moved,
                                    "read_copy_invalidations": 0, "cpu_faults": 0}
    assert used_there - used_before == moved  # resident pages are charged to device 0
    values, ret = acl.rt.mem_managed_get_attrs(
        [ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
         ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID], managed, size, [4, 4, 4])
    assert (values, ret) == ([[0], [ACL_MEM_LOCATIONTYPE_DEVICE], [0]], ACL_SUCCESS)

    assert acl.rt.mem_managed_prefetch_async(managed, size, HOST, 0, stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    back, used_back = counters(lib)
    assert delta(there, back) == {"host_faults": 0, "device_faults": 0, "bytes_to_device": 0,
                                  "bytes_to_host": moved, "evictions": 0, "prefetch_bytes": moved,
                                  "read_copy_invalidations": 0, "cpu_faults": 0}
    assert used_back == used_before
    # The CPU reads the bytes it wrote, the pages being on the host again: no fault.
    assert acl.util.ptr_to_bytes(managed, size) == data
    assert delta(back, counters(lib)[0])["host_faults"] == 0
    assert acl.rt.mem_managed_get_attr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, managed, size,
                                       4) == ([ACL_MEM_LOCATIONTYPE_HOST], ACL_SUCCESS)


def test_batch_prefetch_places_each_group(lib, managed, stream):
    data = pattern(3 * PAGE, 62)
    cpu_write(managed, data)
    before, _ = counters(lib)
    if not before["fault_tracking"]:
        pytest.skip("no CPU fault tracking here (userfaultfd refused): pages never migrate")
    moved = PAGE
    pages = [managed, managed + PAGE, managed + 2 * PAGE]
    # Pages 0 and 1 to device 0 (prefetch_locs[0] from index 0), page 2 to device 1 (from index 2).
    assert acl.rt.mem_managed_prefetch_batch_async(pages, [PAGE] * 3, [DEVICE0, DEVICE1], [0, 2], 0,
                                                   stream) == ACL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    after, _ = counters(lib)
    assert delta(before, after)["bytes_to_device"] == 3 * moved
    assert delta(before, after)["prefetch_bytes"] == 3 * moved
    last = ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION
    assert [acl.rt.mem_managed_get_attr(last, p, PAGE, 4) for p in pages] == [([0], 0), ([0], 0), ([1], 0)]
    assert acl.rt.mem_managed_get_attr(last, managed, 3 * PAGE, 4) == ([NOT_SET], ACL_SUCCESS)  # they differ
    # A CPU read brings every page back, one host fault each.
    assert acl.util.ptr_to_bytes(managed, 3 * PAGE) == data
    assert delta(after, counters(lib)[0])["host_faults"] == 3 * (1 if before["fault_tracking"] else 0)


def test_advice_reads_back_through_the_attributes(managed):
    size = 3 * PAGE
    get = acl.rt.mem_managed_get_attr
    assert get(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed, size, 4) == ([0], ACL_SUCCESS)
    assert get(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed, size, 4) == ([NOT_SET], ACL_SUCCESS)
    assert acl.rt.mem_managed_advise(managed, size, ACL_MEM_ADVISE_SET_READ_MOSTLY, HOST) == ACL_SUCCESS
    assert acl.rt.mem_managed_advise(managed, PAGE, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, DEVICE1) == ACL_SUCCESS
    assert acl.rt.mem_managed_advise(managed, size, ACL_MEM_ADVISE_SET_ACCESSED_BY, DEVICE1) == ACL_SUCCESS
    assert acl.rt.mem_managed_advise(managed, size, ACL_MEM_ADVISE_SET_ACCESSED_BY, DEVICE0) == ACL_SUCCESS
    values, ret = acl.rt.mem_managed_get_attrs(
        [ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
         ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY],
        managed, PAGE, [4, 4, 4, 16])
    assert ret == ACL_SUCCESS
    assert values[:3] == [[1], [1], [ACL_MEM_LOCATIONTYPE_DEVICE]]
    assert sorted(values[3][:2]) == [0, 1] and values[3][2:] == [NOT_SET, NOT_SET]  # 16 bytes: 4 slots
    # The preference covers the first page only; the whole range disagrees.
    assert get(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed, size, 4) == ([NOT_SET], ACL_SUCCESS)


def test_result_shapes():
    assert acl.rt.mem_alloc_managed(0, ACL_RT_MEM_ATTACH_GLOBAL) == (0, ACL_ERROR_RT_PARAM_INVALID)
    # Failed attribute calls give an empty list (the binding's "" for lists), never stale values.
    read_mostly = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY
    assert acl.rt.mem_managed_get_attr(read_mostly, 0, PAGE, 4) == ([], ACL_ERROR_INVALID_PARAM)
    assert acl.rt.mem_managed_get_attrs([1, 2], 0, PAGE, [4, 4]) == ([], ACL_ERROR_INVALID_PARAM)


def test_data_size_beyond_the_binding_buffer_is_refused_without_a_call(managed):
    acl.get_recent_err_msg()
    attr = ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY
    assert acl.rt.mem_managed_get_attr(attr, managed, PAGE, 4096)[1] == ACL_SUCCESS  # the limit itself
    assert acl.rt.mem_managed_get_attr(attr, managed, PAGE, 4100) == ([], ACL_ERROR_INVALID_PARAM)
    assert acl.rt.mem_managed_get_attrs([attr, attr], managed, PAGE, [4, 4100]) == ([], ACL_ERROR_INVALID_PARAM)
    assert acl.get_recent_err_msg() is None


def test_codes_match_the_c_api(lib, managed, stream):
    dev, ret = acl.rt.malloc(PAGE, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    size = 3 * PAGE
    loc = ManagedLocation
    d0, d1, host = loc(1, 0), loc(1, 1), loc(2, 0)
    sz, vp = ctypes.c_size_t, ctypes.c_void_p

    def c_get(attr, ptr, n, data_size):
        return lib.aclrtMemManagedGetAttr(attr, ptr, n, ctypes.create_string_buffer(max(data_size, 4)), data_size)

    def c_get_all(attrs, ptr, n, sizes):
        bufs = [ctypes.create_string_buffer(max(s, 4)) for s in sizes]
        data = array(vp, [ctypes.addressof(b) for b in bufs])
        return lib.aclrtMemManagedGetAttrs(array(ctypes.c_int, attrs), len(attrs), ptr, n, data, array(sz, sizes))

    def c_batch(ptrs, sizes, locs, idx, flags):
        return lib.aclrtMemManagedPrefetchBatchAsync(array(vp, ptrs), array(sz, sizes), len(ptrs),
                                                     array(ManagedLocation, locs), array(sz, idx), len(locs),
                                                     flags, stream)

    P, A = acl.rt.mem_managed_prefetch_async, acl.rt.mem_managed_advise
    B = acl.rt.mem_managed_prefetch_batch_async
    out = ctypes.byref(out_ptr())
    cases = {
        "alloc(flag 0)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_alloc_managed(PAGE, 0)[1],
                          lib.aclrtMemAllocManaged(out, PAGE, 0)),
        "alloc(size 0)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.mem_alloc_managed(0, 1)[1],
                          lib.aclrtMemAllocManaged(out, 0, 1)),
        "advise(size 0)": (ACL_ERROR_INVALID_PARAM, A(managed, 0, 0, DEVICE0),
                           lib.aclrtMemManagedAdvise(managed, 0, 0, d0)),
        "advise(advice 6)": (ACL_ERROR_RT_PARAM_INVALID, A(managed, size, 6, DEVICE0),
                             lib.aclrtMemManagedAdvise(managed, size, 6, d0)),
        "advise(device 99)": (ACL_ERROR_RT_PARAM_INVALID, A(managed, size, 2, {"type": 1, "id": 99}),
                              lib.aclrtMemManagedAdvise(managed, size, 2, loc(1, 99))),
        "advise(not managed)": (ACL_ERROR_RT_PARAM_INVALID, A(dev, PAGE, 2, DEVICE0),
                                lib.aclrtMemManagedAdvise(dev, PAGE, 2, d0)),
        "get_attr(attribute 0)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.mem_managed_get_attr(0, managed, size, 4)[1],
                                  c_get(0, managed, size, 4)),
        "get_attr(data_size 6)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.mem_managed_get_attr(1, managed, size, 6)[1],
                                  c_get(1, managed, size, 6)),
        "get_attr(ACCESSED_BY, 6)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.mem_managed_get_attr(3, managed, size, 6)[1],
                                     c_get(3, managed, size, 6)),
        "get_attr(size 0)": (ACL_ERROR_INVALID_PARAM, acl.rt.mem_managed_get_attr(1, managed, 0, 4)[1],
                             c_get(1, managed, 0, 4)),
        "get_attrs(none)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.mem_managed_get_attrs([], managed, size, [])[1],
                            c_get_all([], managed, size, [])),
        "get_attrs(attribute 9)": (ACL_ERROR_RT_PARAM_INVALID,
                                   acl.rt.mem_managed_get_attrs([1, 9], managed, size, [4, 4])[1],
                                   c_get_all([1, 9], managed, size, [4, 4])),
        "prefetch(flags 1)": (ACL_ERROR_INVALID_PARAM, P(managed, size, DEVICE0, 1, stream),
                              lib.aclrtMemManagedPrefetchAsync(managed, size, d0, 1, stream)),
        "prefetch(INVALID location)": (ACL_ERROR_RT_PARAM_INVALID,
                                       P(managed, size, {"type": ACL_MEM_LOCATIONTYPE_INVALID}, 0, stream),
                                       lib.aclrtMemManagedPrefetchAsync(managed, size, loc(0, 0), 0, stream)),
        "prefetch(device 99)": (ACL_ERROR_RT_PARAM_INVALID, P(managed, size, {"type": 1, "id": 99}, 0, stream),
                                lib.aclrtMemManagedPrefetchAsync(managed, size, loc(1, 99), 0, stream)),
        "batch(empty)": (ACL_ERROR_INVALID_PARAM, B([], [], [], [], 0, stream), c_batch([], [], [], [], 0)),
        "batch(flags 1)": (ACL_ERROR_INVALID_PARAM, B([managed], [PAGE], [DEVICE0], [0], 1, stream),
                           c_batch([managed], [PAGE], [d0], [0], 1)),
        "batch(fewer ranges than locations)": (ACL_ERROR_INVALID_PARAM,
                                               B([managed], [PAGE], [DEVICE0, HOST], [0, 1], 0, stream),
                                               c_batch([managed], [PAGE], [d0, host], [0, 1], 0)),
        "batch(prefetch_loc_idxs[0] 1)": (ACL_ERROR_RT_PARAM_INVALID,
                                          B([managed, managed], [PAGE, PAGE], [DEVICE1], [1], 0, stream),
                                          c_batch([managed, managed], [PAGE, PAGE], [d1], [1], 0)),
        "batch(NULL range)": (ACL_ERROR_RT_PARAM_INVALID, B([managed, 0], [PAGE, PAGE], [DEVICE0], [0], 0, stream),
                              c_batch([managed, 0], [PAGE, PAGE], [d0], [0], 0)),
    }
    assert mismatches(cases) == {}, "(expected, binding, C API)"
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    assert acl.rt.free(dev) == ACL_SUCCESS


@pytest.mark.parametrize("call, args, error", [
    (acl.rt.mem_alloc_managed, (PAGE,), TypeError),
    (acl.rt.mem_managed_advise, (1, PAGE, 0, [1, 0]), TypeError),          # location is a dict
    (acl.rt.mem_managed_prefetch_async, (1, PAGE, DEVICE0, 0), TypeError),  # no stream
    (acl.rt.mem_managed_get_attr, (1, 1, PAGE), TypeError),
    (acl.rt.mem_managed_get_attrs, ((1,), 1, PAGE, [4]), TypeError),
    (acl.rt.mem_managed_get_attrs, ([1, 2], 1, PAGE, [4]), ValueError),
    (acl.rt.mem_managed_get_attrs, ([1 << 40], 1, PAGE, [4]), TypeError),
    (acl.rt.mem_managed_prefetch_batch_async, ([1, 2], [PAGE], [DEVICE0], [0], 0, 0), ValueError),
    (acl.rt.mem_managed_prefetch_batch_async, ([1], [PAGE], [DEVICE0], [0, 1], 0, 0), ValueError),
    (acl.rt.mem_managed_prefetch_batch_async, ([1], [PAGE], [1], [0], 0, 0), TypeError),
    (acl.rt.mem_managed_prefetch_batch_async, ([1], [PAGE], DEVICE0, [0], 0, 0), TypeError),
])
def test_argument_conversion_errors(call, args, error):
    with pytest.raises(error) as e:
        call(*args)
    assert str(e.value).startswith(f"acl.rt.{call.__name__}")
