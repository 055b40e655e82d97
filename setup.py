"""Builds the aclvmm wheel from the CMake project (docs/python.md §5).

setuptools only packages: CMake builds libascendcl.so, the `acl` extension, aclvmm-smi and the
wheel's libacl_rt.so, `cmake --install` lays them out with their install RPATHs, and this file
copies them into the wheel's layout:

    acl.so                      the pyACL-style module (top level, imported as `acl`)
    acl-stubs/                  its type stubs (PEP 561)
    aclvmm/                     the Python package: library lookup, NpuEmulator, the pytest plugin
    aclvmm/lib/libascendcl.so   the library; acl.so's RUNPATH is rewritten to $ORIGIN/aclvmm/lib
    aclvmm/lib/libacl_rt.so     a shim whose only content is DT_NEEDED libascendcl.so
    aclvmm/bin/aclvmm-smi       run by the `aclvmm-smi` console script

Environment:
    ACLVMM_CMAKE_BUILD_DIR  an existing, configured build tree to use (tests/run.sh passes its
                            own, so the wheel costs no second compilation); it must have been
                            configured for this interpreter. Unset: a Release tree without
                            tests, examples or benchmarks under the setuptools build directory.
    ACLVMM_WHEEL_BUILD_BASE where setuptools and the CMake install stage work (default:
                            build-wheel/ in the checkout; ./build is the CMake tree)
    ACLVMM_CMAKE            the cmake executable (default: cmake on PATH)
    ACLVMM_JOBS             parallel build jobs (default: the number of CPUs)
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
# setuptools' default build directory is ./build, which is the CMake tree of README's commands.
BUILD_BASE = os.path.abspath(os.environ.get("ACLVMM_WHEEL_BUILD_BASE")
                             or os.path.join(HERE, "build-wheel"))


def project_version():
    with open(os.path.join(HERE, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(aclvmm\s+VERSION\s+([0-9.]+)", f.read())
    if m is None:
        raise RuntimeError("CMakeLists.txt has no project(aclvmm VERSION x.y.z)")
    return m.group(1)


def run(cmd):
    print("setup.py: " + " ".join(cmd), flush=True)
    subprocess.check_call(cmd)


def cache_value(tree, name):
    """The value of `name` in <tree>/CMakeCache.txt, or None."""
    try:
        with open(os.path.join(tree, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def same_interpreter(configured):
    """Whether the tree's Python3_EXECUTABLE is the interpreter running this build (the module
    only loads into the version it was compiled for)."""
    if not configured:
        return False
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        theirs = subprocess.check_output([configured, "-c", probe], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return False
    return theirs == "%d.%d" % sys.version_info[:2]


class CMakeBuildPy(build_py):
    """build_py that first builds and installs the CMake project, then copies its files in."""

    def run(self):
        super().run()
        cmake = os.environ.get("ACLVMM_CMAKE", "cmake")
        jobs = os.environ.get("ACLVMM_JOBS", str(os.cpu_count() or 1))
        tree = os.environ.get("ACLVMM_CMAKE_BUILD_DIR")
        if tree:
            tree = os.path.abspath(tree)
            # FindPython's record of the interpreter it found (CMakeLists.txt sets the variable
            # Python3_EXECUTABLE without caching it unless the user passed one).
            configured = (cache_value(tree, "Python3_EXECUTABLE")
                          or cache_value(tree, "_Python3_EXECUTABLE"))
            if not same_interpreter(configured):
                raise RuntimeError(
                    "ACLVMM_CMAKE_BUILD_DIR=%s was configured for %s, not for Python %d.%d (%s)"
                    % (tree, configured, sys.version_info[0], sys.version_info[1], sys.executable))
        else:
            tree = os.path.join(BUILD_BASE, "cmake")
            run([cmake, "-S", HERE, "-B", tree, "-DCMAKE_BUILD_TYPE=Release",
                 "-DPython3_EXECUTABLE=" + sys.executable, "-DACLVMM_BUILD_PYTHON=ON",
                 "-DACLVMM_BUILD_TESTS=OFF", "-DACLVMM_BUILD_EXAMPLES=OFF",
                 "-DACLVMM_BUILD_BENCH=OFF"])
        if cache_value(tree, "ACLVMM_BUILD_PYTHON") not in ("ON", "TRUE", "1"):
            raise RuntimeError("the CMake tree %s was configured without ACLVMM_BUILD_PYTHON "
                               "(python3-dev missing?)" % tree)
        # Everything the tree builds by default: `cmake --install` below installs all of it (the
        # fake driver library too), although the wheel takes only its part. In the suite's tree
        # this is a no-op; a tree of setup.py's own has no tests, examples or benchmarks.
        run([cmake, "--build", tree, "-j", jobs])
        stage = os.path.join(BUILD_BASE, "stage")
        shutil.rmtree(stage, ignore_errors=True)
        run([cmake, "--install", tree, "--prefix", stage])
        run([cmake, "--install", tree, "--prefix", stage, "--component", "wheel"])
        self.copy_from_stage(cmake, stage)

    def copy_from_stage(self, cmake, stage):
        out = self.build_lib
        lib = os.path.join(out, "aclvmm", "lib")
        bindir = os.path.join(out, "aclvmm", "bin")
        os.makedirs(lib, exist_ok=True)
        os.makedirs(bindir, exist_ok=True)
        # copy2 follows symlinks: lib64/libascendcl.so is a file, nothing else is taken from lib64.
        shutil.copy2(os.path.join(stage, "lib64", "libascendcl.so"), lib)
        shutil.copy2(os.path.join(stage, "wheel", "lib", "libacl_rt.so"), lib)
        shutil.copy2(os.path.join(stage, "bin", "aclvmm-smi"), bindir)
        site = os.path.join(stage, "python", "site-packages")
        module = os.path.join(out, "acl.so")
        shutil.copy2(os.path.join(site, "acl.so"), module)
        # The root's RUNPATH ($ORIGIN/../../lib64) names no directory of a site-packages; the new
        # one is shorter, which is what an in-place ELF edit allows.
        script = os.path.join(BUILD_BASE, "rpath.cmake")
        with open(script, "w", encoding="utf-8") as f:
            f.write('file(RPATH_CHANGE FILE "${FILE}" OLD_RPATH "$ORIGIN/../../lib64" '
                    'NEW_RPATH "$ORIGIN/aclvmm/lib")\n')
        run([cmake, "-DFILE=" + module, "-P", script])
        # A development tree carries debug information (libascendcl.so: ~30 MB of it); the wheel
        # is for running, so it ships the code only.
        strip = shutil.which("strip")
        if strip:
            run([strip, "--strip-debug", module, os.path.join(lib, "libascendcl.so"),
                 os.path.join(lib, "libacl_rt.so"), os.path.join(bindir, "aclvmm-smi")])
        stubs = os.path.join(site, "acl-stubs")
        if os.path.isdir(stubs):
            shutil.copytree(stubs, os.path.join(out, "acl-stubs"), dirs_exist_ok=True)


class BinaryDistribution(Distribution):
    """The wheel holds compiled code: platform and interpreter tags, not py3-none-any."""

    def has_ext_modules(self):
        return True


os.makedirs(BUILD_BASE, exist_ok=True)
setup(
    version=project_version(),
    packages=["aclvmm"],
    package_dir={"aclvmm": "python/aclvmm"},
    cmdclass={"build_py": CMakeBuildPy},
    distclass=BinaryDistribution,
    zip_safe=False,
    options={
        "build": {"build_base": BUILD_BASE},
        "egg_info": {"egg_base": BUILD_BASE},
        # A CPython extension for this interpreter's ABI on Linux.
        "bdist_wheel": {"plat_name": sysconfig.get_platform().replace("-", "_").replace(".", "_")},
    },
)
