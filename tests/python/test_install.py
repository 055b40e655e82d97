"""The installed layout: <prefix>/python/site-packages/acl.so finds <prefix>/lib64/libascendcl.so
by itself (its RUNPATH), with nothing but PYTHONPATH set, as CANN's set_env.sh would set it; the type
stubs are installed beside it as <prefix>/python/site-packages/acl-stubs/."""
import os
import subprocess
import sys

import pytest

PROBE = """
import acl, acl.rt
ret = acl.init()
maps = {l.split()[-1] for l in open('/proc/self/maps') if 'libascendcl' in l}
print(acl.__file__)
print(*sorted(maps))
print(ret, acl.rt.set_device(0), acl.rt.reset_device(0), acl.finalize())
"""


def test_installed_module_loads_the_installed_library(tmp_path):
    build, cmake = os.environ.get("ACLVMM_BUILD_DIR"), os.environ.get("ACLVMM_CMAKE")
    if not build or not cmake:
        pytest.skip("needs ACLVMM_BUILD_DIR and ACLVMM_CMAKE (set by ctest)")
    prefix = tmp_path / "root"
    subprocess.run([cmake, "--install", build, "--prefix", str(prefix)], check=True, stdout=subprocess.DEVNULL,
                   timeout=60)
    site = prefix / "python" / "site-packages"
    assert (site / "acl.so").is_file()
    # The stub-only package beside the module (PEP 561), the same files as the source tree's.
    stubs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "acl-stubs")
    assert sorted(p.name for p in (site / "acl-stubs").iterdir()) == ["__init__.pyi", "rt.pyi", "util.pyi"]
    for p in (site / "acl-stubs").iterdir():
        with open(os.path.join(stubs, p.name)) as f:
            assert p.read_text() == f.read()
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    module, libs, codes = out.stdout.splitlines()
    assert module == str(site / "acl.so")
    assert libs == str(prefix / "lib64" / "libascendcl.so")
    assert codes == "0 0 0 0"
