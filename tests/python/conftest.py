"""Fixtures of the acl binding tests: one initialised runtime per test process, device 0 set."""
import os

import pytest

import acl
import acl.rt

from acl_constants import ACL_SUCCESS
from acl_helpers import Mapped


@pytest.fixture(scope="session", autouse=True)
def runtime():
    # Under ctest the module must come from this build tree, never from an installed copy.
    build = os.environ.get("ACLVMM_BUILD_DIR")
    if build:
        assert os.path.realpath(acl.__file__).startswith(os.path.realpath(build) + os.sep), acl.__file__
    assert acl.init() == ACL_SUCCESS
    assert acl.rt.set_device(0) == ACL_SUCCESS
    yield
    assert acl.rt.reset_device(0) == ACL_SUCCESS
    assert acl.finalize() == ACL_SUCCESS


@pytest.fixture
def mapped():
    m = Mapped()
    yield m
    m.release()
