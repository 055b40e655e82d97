"""The pytest plugin's fixture `npu_emulator` (python/aclvmm/pytest_plugin.py): shapes from the
marker and from indirect parameters, the environment of subprocesses, statistics and failure
injection as Python objects, the leak check at teardown, and the memory-manager scenarios it is
for (a handle shared with another process, sleep and wake of device memory)."""
import os
import subprocess
import sys
import textwrap

import pytest

import acl
import acl.rt

import aclvmm
from npu_scenarios import MIB, allocate_and_map, d2h, h2d, ok, pattern, share_with_child, unmap_and_free

GIB = 1 << 30
ACL_HBM_MEM = 1  # aclrtMemAttr of aclrtGetMemInfo


def start(device=0):
    ok(acl.init(), "init")
    ok(acl.rt.set_device(device), "set_device")


def stop(device=0):
    ok(acl.rt.reset_device(device), "reset_device")
    ok(acl.finalize(), "finalize")


@pytest.mark.npu_emulator(device_count=2, soc="Ascend910B4", device_memory="4G")
def test_marker_shapes_the_npu(npu_emulator):
    start(1)
    assert acl.rt.get_device_count() == (2, 0)
    assert acl.get_soc_name() == "Ascend910B4"
    free, total, ret = acl.rt.get_mem_info(ACL_HBM_MEM)
    assert (total, ret) == (4 * GIB, 0)
    assert acl.rt.set_device(2) == 107001  # ACL_ERROR_RT_INVALID_DEVICEID: only devices 0 and 1
    assert npu_emulator.device_count == 2
    assert [d.id for d in npu_emulator.stats().devices] == [0, 1]
    stop(1)


@pytest.mark.parametrize("npu_emulator,cpu_reads,no_access_ret", [
    ({"host_access": "open", "quirks": "none"}, True, 0),
    ({"host_access": "strict", "quirks": "vendor"}, False, 207000),  # FEATURE_NOT_SUPPORT
], indirect=["npu_emulator"])
def test_host_access_and_quirks(npu_emulator, cpu_reads, no_access_ret):
    # The CPU reading device memory in place: fine with "open", a fault with "strict" (in a child,
    # which the fault kills).
    reader = ("import acl, acl.util, npu_scenarios as s; acl.init(); acl.rt.set_device(0); "
              "h, va = s.allocate_and_map(2 << 20); s.h2d(va, s.pattern(2 << 20, 5)); "
              "print(acl.util.ptr_to_bytes(va, 4096) == s.pattern(2 << 20, 5)[:4096], flush=True)")
    child = npu_emulator.run([sys.executable, "-c", reader], capture_output=True, text=True,
                             timeout=60, cwd=os.path.dirname(__file__))
    if cpu_reads:
        assert (child.returncode, child.stdout) == (0, "True\n"), child.stderr
    else:
        assert child.returncode in (-11, -7) and child.stdout == "", child  # SIGSEGV / SIGBUS
    start()
    handle, va = allocate_and_map(2 * MIB)
    other, ret = acl.rt.reserve_mem_address(2 * MIB, 0, 0, 0)
    ok(ret, "reserve_mem_address")
    assert acl.rt.mem_map_no_access(other, 2 * MIB, 0, handle, 0) == no_access_ret
    if no_access_ret == 0:
        ok(acl.rt.unmap_mem(other), "unmap_mem")
    ok(acl.rt.release_mem_address(other), "release_mem_address")
    unmap_and_free(handle, va)
    stop()


@pytest.mark.parametrize("npu_emulator,count", [({"device_count": 1}, 1), ({"device_count": 3}, 3)],
                         indirect=["npu_emulator"])
def test_indirect_parameter_and_subprocess_environment(npu_emulator, count):
    start()
    assert acl.rt.get_device_count() == (count, 0)
    stop()
    child = npu_emulator.run([sys.executable, "-c", "import acl, acl.rt; acl.init(); "
                              "print(acl.rt.get_device_count()[0], acl.get_soc_name())"],
                             capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split()[0] == str(count)
    assert npu_emulator.env["ACLVMM_DEVICE_COUNT"] == str(count)


@pytest.mark.npu_emulator(device_count=2)
@pytest.mark.parametrize("npu_emulator", [{"device_count": 4}], indirect=True)
def test_indirect_parameter_wins_over_marker(npu_emulator):
    start()
    assert acl.rt.get_device_count() == (4, 0)
    stop()


def test_environment_restored_and_runtime_restarted():
    before = os.environ.get("ACLVMM_DEVICE_COUNT")
    with aclvmm.NpuEmulator(device_count=5) as npu:
        start()
        assert acl.rt.get_device_count() == (5, 0)
        assert os.environ["ACLVMM_DEVICE_COUNT"] == "5"
        # Left running on purpose: closing stops the runtime, so the next start reads again.
        ok(acl.rt.reset_device(0), "reset_device")
    assert os.environ.get("ACLVMM_DEVICE_COUNT") == before
    with aclvmm.NpuEmulator(device_count=2):
        start()
        assert acl.rt.get_device_count() == (2, 0)
        stop()


def test_statistics_count_exact_objects_and_bytes(npu_emulator):
    start()
    before = npu_emulator.stats()
    handle, va = allocate_and_map(6 * MIB)
    now = npu_emulator.stats()
    assert now.live.physical_handles == before.live.physical_handles + 1
    assert now.live.mappings == before.live.mappings + 1
    assert now.live.reservations == before.live.reservations + 1
    assert now.devices[0].memory_used == before.devices[0].memory_used + 6 * MIB
    assert now["live"]["mappings"] == now.live.mappings and "managed" in now
    assert npu_emulator.leaks() == {"physical_handles": 1, "reservations": 1, "mappings": 1,
                                    "device0.memory_used": 6 * MIB}
    unmap_and_free(handle, va)
    assert npu_emulator.stats().live == before.live
    with pytest.raises(AttributeError):
        now.live.mappings = 0
    stop()


@pytest.mark.npu_emulator(faults="aclrtMalloc:2:207001")
def test_faults_from_the_marker(npu_emulator):
    start()
    first, ret = acl.rt.malloc(MIB, 0)
    assert ret == 0
    assert acl.rt.malloc(MIB, 0) == (0, 207001)  # the second call fails, once
    third, ret = acl.rt.malloc(MIB, 0)
    assert ret == 0
    ok(acl.rt.free(first), "free")
    ok(acl.rt.free(third), "free")
    stop()


def test_faults_injected_from_python_are_cleared_at_close():
    with aclvmm.NpuEmulator() as npu:
        start()
        assert npu.faults.inject("aclrtMallocPhysical", nth=2, code=207001) == 0
        assert npu.faults.remaining("aclrtMallocPhysical") == 2
        handle, va = allocate_and_map(2 * MIB)
        assert npu.faults.remaining("aclrtMallocPhysical") == 1
        assert acl.rt.malloc_physical(2 * MIB, {"memAttr": 4, "location": {"id": 0, "type": 1}},
                                      0) == (0, 207001)
        assert npu.faults.fired("aclrtMallocPhysical")
        unmap_and_free(handle, va)
        assert npu.faults.inject("aclrtMapMem", nth=3, code=507899) == 0
        stop()
    assert aclvmm.NpuEmulator().faults.remaining("aclrtMapMem") == 0  # cleared by close()


def test_subprocess_imports_a_shared_handle(npu_emulator):
    start()
    assert share_with_child(npu_emulator) == npu_emulator.device_count  # the child sees the same NPU
    stop()


@pytest.mark.npu_emulator(device_count=2, device_memory="64M")
def test_sleep_and_wake_at_the_same_addresses(npu_emulator):
    """vLLM's sleep mode on the VMM calls: back the weights up to the host, unmap and free the
    device memory (the device's memory is free again), then allocate, map at the same addresses
    and restore."""
    start()
    size = 48 * MIB
    handle, va = allocate_and_map(size)
    weights = pattern(size, 3)
    h2d(va, weights)
    backup = d2h(va, size)
    unmap_and_free(handle, va, release=False)
    asleep = npu_emulator.stats()
    assert asleep.devices[0].memory_used == 0 and asleep.live.physical_handles == 0
    assert asleep.live.reservations == 1  # the addresses are kept
    # 48 + 48 MiB would not fit a 64 MiB device: the freed memory really was given back.
    handle, again = allocate_and_map(size, va=va)
    assert again == va
    assert d2h(va, size) == bytes(size)  # fresh memory reads as zeros, never the old bytes
    h2d(va, backup)
    assert d2h(va, size) == weights
    unmap_and_free(handle, va)
    stop()


INNER = textwrap.dedent("""
    import acl, acl.rt, pytest
    PROP = {"memAttr": 4, "location": {"id": 0, "type": 1}}

    def test_leaks_a_handle(npu_emulator):
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        handle, ret = acl.rt.malloc_physical(2 << 20, PROP, 0)
        assert ret == 0

    @pytest.mark.npu_emulator(check_leaks=False)
    def test_leak_allowed(npu_emulator):
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        assert acl.rt.malloc_physical(2 << 20, PROP, 0)[1] == 0

    def test_clean(npu_emulator):
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        handle, ret = acl.rt.malloc_physical(2 << 20, PROP, 0)
        assert acl.rt.free_physical(handle) == 0
        assert acl.rt.reset_device(0) == 0 and acl.finalize() == 0

    def test_after_the_leak_the_npu_is_fresh(npu_emulator):
        assert npu_emulator.leaks() == {}
""")


def test_teardown_reports_leaks(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "aclvmm.pytest_plugin", "-p", "no:cacheprovider",
                                           "-v")
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_leaks_a_handle*",
                                 "*LeakError: the test left live objects on the emulated NPU: "
                                 "device0.memory_used=2097152, physical_handles=1*"])
    result.stdout.fnmatch_lines(["aclvmm: acl from *acl*, library */libascendcl.so"])


def test_marker_is_registered(pytester):
    pytester.makepyfile(test_inner="""
        import pytest
        @pytest.mark.npu_emulator(device_count=1)
        def test_x(npu_emulator):
            assert npu_emulator.settings == {"ACLVMM_DEVICE_COUNT": "1"}
        @pytest.mark.parametrize("npu_emulator", [3], indirect=True)
        def test_bad_param(npu_emulator):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "aclvmm.pytest_plugin", "-p", "no:cacheprovider",
                                           "--strict-markers")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*TypeError: npu_emulator's indirect parameter must be a dict*"])


def test_which_acl_is_reported():
    out = subprocess.run([sys.executable, "-m", "aclvmm"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["acl: " + aclvmm.acl_module_path(),
                                       "library: " + aclvmm.library_path(), "aclvmm: yes"]


def test_readme_example_runs(pytester):
    """README's "Python / pytest" example, as printed there."""
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## Python / pytest"):]
    example = section[section.index("```python\n") + 10:section.index("```\n", section.index("```python"))]
    pytester.makepyfile(test_readme=example)
    result = pytester.runpytest_subprocess("-p", "aclvmm.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
