"""The A3-only calls: refused with 207000 here (this process emulates the default A2 part, as the C
API does, checked through ctypes), and working in an A3 process: a3_cases.py run by pytest in a
separate interpreter with ACLVMM_SOC set to an A3 part (the SoC is fixed when the runtime starts)."""
import ctypes
import os
import re
import subprocess
import sys

import pytest

import acl
import acl.rt

from acl_capi import ServerPid, array, load, mismatches
from acl_constants import (A3_SOC, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_RT_IPC_MEM_ATTR_ACCESS_LINK)

HERE = os.path.dirname(os.path.abspath(__file__))
A3_CASES = 9  # the tests a3_cases.py holds: 4 functions and 5 parameter sets of the fifth


@pytest.fixture(scope="module")
def lib():
    return load()


def test_a2_refuses_the_a3_ipc_calls_as_the_c_api_does(lib):
    key = "0" * 64
    pids = array(ctypes.c_int32, [1])
    entry = array(ServerPid, [ServerPid(0, pids, 1)])
    link = ACL_RT_IPC_MEM_ATTR_ACCESS_LINK
    cases = {
        "ipc_mem_set_attr": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT, acl.rt.ipc_mem_set_attr(key, link, 0),
                             lib.aclrtIpcMemSetAttr(key.encode(), link, 0)),
        "ipc_mem_set_attr(type 1)": (ACL_ERROR_RT_PARAM_INVALID, acl.rt.ipc_mem_set_attr(key, 1, 0),
                                     lib.aclrtIpcMemSetAttr(key.encode(), 1, 0)),
        "ipc_mem_import_pid_inter_server": (ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                                            acl.rt.ipc_mem_import_pid_inter_server(key, [{"sdid": 0, "pid": [1]}]),
                                            lib.aclrtIpcMemImportPidInterServer(key.encode(), entry, 1)),
        "ipc_mem_import_pid_inter_server(empty)": (ACL_ERROR_RT_PARAM_INVALID,
                                                   acl.rt.ipc_mem_import_pid_inter_server(key, []),
                                                   lib.aclrtIpcMemImportPidInterServer(key.encode(), entry, 0)),
    }
    assert mismatches(cases) == {}, "(expected, binding, C API)"


def test_a3_calls_work_in_an_a3_process():
    env = dict(os.environ, ACLVMM_SOC=A3_SOC)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "a3_cases.py"], cwd=HERE,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    summary = out.stdout.strip().splitlines()[-1]
    # Every case ran and passed: none skipped, deselected or failed.
    assert re.fullmatch(rf"{A3_CASES} passed in [0-9.]+s", summary), summary


@pytest.mark.parametrize("call, args", [
    (acl.rt.ipc_mem_set_attr, ("k", 0)),
    (acl.rt.ipc_mem_set_attr, (b"k", 0, 0)),
    (acl.rt.ipc_mem_import_pid_inter_server, ("k",)),
])
def test_argument_conversion_raises_type_error(call, args):
    with pytest.raises(TypeError) as e:
        call(*args)
    assert str(e.value) == f"acl.rt.{call.__name__} args parse failed"


def test_this_process_is_not_a3():
    assert acl.get_soc_name() == "Ascend910B1"  # the default ACLVMM_SOC
