"""Device queries, device id conversions, malloc_align32 and the aclsys version calls through the
binding (runtime-extra.md 4, 6; behavior.md 13): shapes, values equal to the C API's (ctypes), and
the ASCEND_RT_VISIBLE_DEVICES renumbering seen from a separate process."""
import ast
import ctypes
import os
import subprocess
import sys
import uuid

import pytest

import acl
import acl.rt

from acl_capi import load, mismatches, out_ptr
from acl_constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_HOST, ACL_MEM_MALLOC_HUGE_FIRST, ACL_PKG_NAME_CANN, ACL_PKG_NAME_DRIVER, ACL_SUCCESS,
                           pattern)
from acl_helpers import d2h, h2d

# Each conversion and its code for an id equal to the device count (runtime-extra.md 4: the ids
# converted from user / logical ids are checked by the runtime, those from physical ids by the driver).
CONVERSIONS = {
    "get_logic_dev_id_by_user_dev_id": ACL_ERROR_RT_INVALID_DEVICEID,
    "get_user_dev_id_by_logic_dev_id": ACL_ERROR_RT_INVALID_DEVICEID,
    "get_logic_dev_id_by_phy_dev_id": ACL_ERROR_RT_PARAM_INVALID,
    "get_phy_dev_id_by_logic_dev_id": ACL_ERROR_RT_PARAM_INVALID,
    "get_user_dev_id_by_phy_dev_id": ACL_ERROR_RT_PARAM_INVALID,
    "get_phy_dev_id_by_user_dev_id": ACL_ERROR_RT_PARAM_INVALID,
}


def c_name(name):
    """get_logic_dev_id_by_user_dev_id -> aclrtGetLogicDevIdByUserDevId."""
    return "aclrt" + "".join(w.capitalize() for w in name.split("_"))


@pytest.fixture(scope="module")
def lib():
    return load()


@pytest.fixture(scope="module")
def count():
    n, ret = acl.rt.get_device_count()
    assert ret == ACL_SUCCESS and n >= 2
    return n


def test_run_mode_is_host():
    assert acl.rt.get_run_mode() == (ACL_HOST, ACL_SUCCESS)


def test_uuid_is_16_bytes_per_device_as_in_c(lib, count):
    uuids = []
    for d in range(count):
        u, ret = acl.rt.device_get_uuid(d)
        assert ret == ACL_SUCCESS and isinstance(u, bytes) and len(u) == 16
        c = (ctypes.c_char * 16)()
        assert lib.aclrtDeviceGetUuid(d, c) == ACL_SUCCESS and c.raw == u
        assert acl.rt.device_get_uuid(d) == (u, ACL_SUCCESS)  # stable
        uuids.append(u)
    assert len(set(uuids)) == count
    assert uuid.UUID(bytes=uuids[0]).hex == uuids[0].hex()  # the usual text form is one call away
    assert acl.rt.device_get_uuid(count) == (b"", ACL_ERROR_RT_INVALID_DEVICEID)
    assert acl.rt.device_get_uuid(-1) == (b"", ACL_ERROR_RT_INVALID_DEVICEID)


@pytest.mark.parametrize("name", CONVERSIONS)
def test_conversions_match_the_c_api(lib, count, name):
    call, cfunc = getattr(acl.rt, name), getattr(lib, c_name(name))
    for d in range(count):
        assert call(d) == (d, ACL_SUCCESS)  # no ASCEND_RT_VISIBLE_DEVICES: every numbering agrees
    out = ctypes.c_int32(0)
    cases = {arg: (expected, call(arg), (0, cfunc(arg, ctypes.byref(out))))
             for arg, expected in ((-1, (0, ACL_ERROR_RT_PARAM_INVALID)), (count, (0, CONVERSIONS[name])),
                                   (1000, (0, CONVERSIONS[name])))}
    assert mismatches(cases) == {}, "(expected, binding, C API)"


PROBE = """
import acl, acl.rt
acl.init()
print(*[getattr(acl.rt, n)(i) for n in {names!r} for i in (0, 1, 2)], sep=";")
acl.finalize()
"""


def test_conversions_follow_ascend_rt_visible_devices():
    # User ids 0, 1 are devices 2, 5 (physical = logical in aclvmm): runtime-extra.md 4.
    env = dict(os.environ, ASCEND_RT_VISIBLE_DEVICES="2,5")
    out = subprocess.run([sys.executable, "-c", PROBE.format(names=list(CONVERSIONS))], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    got = [ast.literal_eval(t) for t in out.stdout.strip().split(";")]  # the tuples the child printed
    by_name = {n: got[3 * i:3 * i + 3] for i, n in enumerate(CONVERSIONS)}
    assert by_name["get_logic_dev_id_by_user_dev_id"] == [(2, 0), (5, 0), (0, ACL_ERROR_RT_INVALID_DEVICEID)]
    assert by_name["get_phy_dev_id_by_user_dev_id"] == [(2, 0), (5, 0), (0, ACL_ERROR_RT_INVALID_DEVICEID)]
    # The vendor's "logic <-> phy" calls take and return user ids too.
    assert by_name["get_phy_dev_id_by_logic_dev_id"] == by_name["get_phy_dev_id_by_user_dev_id"]
    assert by_name["get_user_dev_id_by_logic_dev_id"] == [(0, ACL_ERROR_RT_INVALID_DEVICEID)] * 2 + [(0, 0)]
    assert by_name["get_user_dev_id_by_phy_dev_id"] == by_name["get_logic_dev_id_by_phy_dev_id"]


def test_malloc_align32_round_trips_bytes(lib):
    for size in (1, 32, 33, 4096, 1 << 20):
        ptr, ret = acl.rt.malloc_align32(size, ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == ACL_SUCCESS and ptr != 0 and ptr % 32 == 0
        data = pattern(size, size % 251)
        assert h2d(ptr, data) == ACL_SUCCESS and d2h(ptr, size) == data
        assert acl.rt.free(ptr) == ACL_SUCCESS
    assert acl.rt.malloc_align32(0, 0) == (0, ACL_ERROR_INVALID_PARAM)
    assert lib.aclrtMallocAlign32(ctypes.byref(out_ptr()), 0, 0) == ACL_ERROR_INVALID_PARAM


def test_version_calls_match_the_c_api(lib):
    buf = ctypes.create_string_buffer(128)
    assert lib.aclsysGetVersionStr(b"runtime", buf) == ACL_SUCCESS
    assert acl.sys_get_version_str("runtime") == (buf.value.decode(), ACL_SUCCESS)
    num = ctypes.c_int32(0)
    assert lib.aclsysGetVersionNum(b"cann", ctypes.byref(num)) == ACL_SUCCESS
    assert acl.sys_get_version_num("cann") == (num.value, ACL_SUCCESS)
    version, ret = acl.sys_get_cann_version(ACL_PKG_NAME_CANN)
    assert ret == ACL_SUCCESS
    assert set(version) == {"version", "majorVersion", "minorVersion", "releaseVersion", "patchVersion", "reserved"}
    assert version["version"] == buf.value.decode()
    assert version["version"].startswith(f"{version['majorVersion']}.{version['minorVersion']}.")
    # Failures: "" and 0, as in C (unknown package, NULL name, a name past the enum).
    assert acl.sys_get_version_str("nonsense") == ("", ACL_ERROR_INVALID_PARAM)
    assert acl.sys_get_version_str(None) == ("", ACL_ERROR_INVALID_PARAM)
    assert lib.aclsysGetVersionStr(None, buf) == ACL_ERROR_INVALID_PARAM
    assert acl.sys_get_version_num("nonsense") == (0, ACL_ERROR_INVALID_PARAM)
    version, ret = acl.sys_get_cann_version(ACL_PKG_NAME_DRIVER + 1)
    assert ret == ACL_ERROR_INVALID_PARAM and set(version.values()) == {""}


@pytest.mark.parametrize("call, args", [
    (acl.rt.get_run_mode, (0,)),
    (acl.rt.device_get_uuid, ()),
    (acl.rt.get_logic_dev_id_by_user_dev_id, ("0",)),
    (acl.rt.malloc_align32, (32,)),
    (acl.sys_get_version_str, (b"cann",)),
    (acl.sys_get_version_num, ()),
    (acl.sys_get_cann_version, ("cann",)),
])
def test_argument_conversion_raises_type_error(call, args):
    with pytest.raises(TypeError) as e:
        call(*args)
    assert str(e.value) == f"{call.__module__ or 'acl'}.{call.__name__} args parse failed"
