"""pytest plugin of aclvmm (entry point `pytest11: aclvmm`): the fixture `npu_emulator`.

    def test_two_devices(npu_emulator):                      # defaults: the library's (8 devices)
        assert acl.init() == 0 ...

    @pytest.mark.npu_emulator(device_count=2, device_memory="4G", host_access="open")
    def test_shaped(npu_emulator): ...

    @pytest.mark.parametrize("npu_emulator", [{"device_count": 1}, {"device_count": 4}],
                             indirect=True)
    def test_each(npu_emulator): ...

The value is an aclvmm.NpuEmulator: `stats()`, `faults.inject(...)`, `env` / `python(...)` /
`popen(...)` for subprocesses on the same emulated NPU. At teardown the test fails when it left
device memory, handles, mappings, exports or imports live (marker keyword check_leaks=False
turns that off). Keywords of the marker and of the indirect parameter are NpuEmulator's; the
parameter's win over the marker's.
"""

import pytest

from .emulator import NpuEmulator


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "npu_emulator(device_count=None, soc=None, device_memory=None, host_access=None, "
        "quirks=None, interconnect=None, faults=None, env=None, check_leaks=True): the emulated "
        "NPU the npu_emulator fixture gives this test (aclvmm)")


def pytest_report_header(config):
    """Names the `acl` and the library in use, so that a real pyACL is never mistaken for
    aclvmm's (or the other way round) without anyone seeing it."""
    from ._library import AclvmmNotLoaded, acl_module_path, extensions, library_path

    try:
        line = "aclvmm: acl from %s, library %s" % (acl_module_path(), library_path())
        extensions()
    except AclvmmNotLoaded as e:
        return "aclvmm: %s" % e
    except Exception as e:  # noqa: BLE001 - a header line must never end the session
        return "aclvmm: `import acl` fails (%s: %s)" % (type(e).__name__, e)
    return line


@pytest.fixture
def npu_emulator(request):
    options = {}
    for marker in reversed(list(request.node.iter_markers("npu_emulator"))):
        options.update(marker.kwargs)  # the closest marker (the test's) is applied last
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            raise TypeError("npu_emulator's indirect parameter must be a dict of NpuEmulator "
                            "keywords, not %r" % (param,))
        options.update(param)
    emulator = NpuEmulator(**options).start()
    try:
        yield emulator
    finally:
        emulator.close()
