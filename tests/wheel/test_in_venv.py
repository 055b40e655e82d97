"""Runs in a fresh virtual environment with only the installed wheel (tests/wheel/run_wheel_test.sh),
from a directory outside the checkout: the plugin is loaded by its pytest11 entry point, `acl` and
the library come from the venv's site-packages."""
import ctypes
import os
import sys

import pytest

import acl
import acl.rt

import aclvmm
from npu_scenarios import share_with_child

VENV = os.environ["ACLVMM_TEST_VENV"]


def test_everything_comes_from_the_venv():
    site = os.path.realpath(VENV)
    for path in (acl.__file__, aclvmm.__file__, aclvmm.library_path()):
        assert os.path.realpath(path).startswith(site + os.sep), path
    assert aclvmm.library_path() == os.path.join(aclvmm.package_library_dir(), "libascendcl.so")


@pytest.mark.parametrize("npu_emulator,count", [({"device_count": 2}, 2), ({"device_count": 4}, 4)],
                         indirect=["npu_emulator"])
def test_device_counts_and_a_shared_handle(npu_emulator, count):
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    assert acl.rt.get_device_count() == (count, 0)
    # The importer is another interpreter started with the fixture's environment.
    assert share_with_child(npu_emulator) == count
    assert acl.rt.reset_device(0) == 0 and acl.finalize() == 0


@pytest.mark.npu_emulator(device_count=3)
def test_libacl_rt_is_the_same_runtime(npu_emulator):
    assert acl.init() == 0
    rt = ctypes.CDLL(os.path.join(aclvmm.package_library_dir(), "libacl_rt.so"))
    count = ctypes.c_uint32(0)
    assert rt.aclrtGetDeviceCount(ctypes.byref(count)) == 0 and count.value == 3
    # Already initialised through `acl`: the same runtime answers (ACL_ERROR_REPEAT_INITIALIZE).
    assert rt.aclInit(None) == 100002
    assert acl.finalize() == 0
    # A C program of the subprocess finds libacl_rt.so by the fixture's LD_LIBRARY_PATH.
    code = ("import ctypes; l = ctypes.CDLL('libacl_rt.so'); n = ctypes.c_uint32(); "
            "print(l.aclrtGetDeviceCount(ctypes.byref(n)), n.value)")
    out = npu_emulator.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["0", "3"], out.stderr
