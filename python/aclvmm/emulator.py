"""The emulated NPU of one test, as a Python object (the value of the `npu_emulator` fixture).

aclvmm reads its configuration from the environment when the runtime starts, and starts it
again, reading the environment again, after the last aclFinalize (docs/configuration.md). An
NpuEmulator therefore (1) stops whatever runtime the process has, (2) sets the ACLVMM_*
variables it was given, so the test's own acl.init() (or first call) starts an NPU of that shape,
and so do the subprocesses it starts with `env`, (3) at the end reads the statistics the library
keeps and fails when objects are still live, then stops the runtime and restores the
environment.
"""

import json
import os
import subprocess
import sys

from ._library import acl_module_path, extensions, library_path

# Keyword -> the variable the runtime reads (docs/configuration.md).
_SETTINGS = {
    "device_count": "ACLVMM_DEVICE_COUNT",
    "soc": "ACLVMM_SOC",
    "device_memory": "ACLVMM_DEVICE_MEMORY",
    "host_access": "ACLVMM_HOST_ACCESS",
    "quirks": "ACLVMM_QUIRKS",
    "interconnect": "ACLVMM_INTERCONNECT",
    "faults": "ACLVMM_FAULTS",
}


class LeakError(AssertionError):
    """Objects a test left live: device memory, handles, mappings, exports, ..."""


class Stats:
    """A read-only view of aclvmmStatsJson: attributes and items for objects (`s.live.mappings`,
    `s["live"]["mappings"]`), lists for arrays (`s.devices[0].memory_used`); `raw` is the dict."""

    __slots__ = ("raw",)

    def __init__(self, raw):
        object.__setattr__(self, "raw", raw)

    @staticmethod
    def _wrap(value):
        if isinstance(value, dict):
            return Stats(value)
        if isinstance(value, list):
            return [Stats._wrap(v) for v in value]
        return value

    def __getattr__(self, name):
        try:
            return Stats._wrap(self.raw[name])
        except KeyError:
            raise AttributeError("statistics have no %r (keys: %s)"
                                 % (name, ", ".join(self.raw))) from None

    def __getitem__(self, name):
        return Stats._wrap(self.raw[name])

    def __contains__(self, name):
        return name in self.raw

    def __setattr__(self, name, value):
        raise AttributeError("Stats is read-only")

    def __eq__(self, other):
        return isinstance(other, Stats) and self.raw == other.raw

    def __repr__(self):
        return "Stats(%s)" % json.dumps(self.raw)


class Faults:
    """Failure injection (aclvmmInjectFault): `inject("aclrtMapMem", nth=1, code=207001)` makes the
    nth following call fail; a backend step name ("emu.cpu.map") fails inside a call with an
    errno. Rules armed here are cleared when the emulator closes."""

    def __init__(self):
        self._armed = set()

    def inject(self, api, nth=1, code=207001):
        ret = extensions().aclvmmInjectFault(api.encode(), nth, code)
        if ret == 0:
            self._armed.add(api)
        return ret

    def remaining(self, api):
        """Calls of `api` left until its rule fires (0: none armed or it fired)."""
        return extensions().aclvmmFaultRemaining(api.encode())

    def fired(self, api):
        return self.remaining(api) == 0

    def clear(self):
        for api in sorted(self._armed):
            extensions().aclvmmInjectFault(api.encode(), 0, 0)
        self._armed.clear()


_NOT_INITIALIZED = 100037  # ACL_ERROR_REPEAT_FINALIZE: aclFinalize without a matching aclInit
_REPEAT_INITIALIZE = 100002
_FINALIZE_BOUND = 1 << 16


def _finalize_all(acl):
    """aclFinalize until the runtime says nothing is initialised (an armed aclFinalize rule fails
    one call; a program may have called aclInit many times)."""
    for _ in range(_FINALIZE_BOUND):
        if acl.finalize() == _NOT_INITIALIZED:
            return
    raise RuntimeError("aclFinalize never answered %d in %d calls" % (_NOT_INITIALIZED, _FINALIZE_BOUND))


def _stop_runtime(acl):
    """Stops the process's runtime, however it was started, so that the next start reads the
    environment again. A runtime an ACL call started without aclInit outlives aclFinalize; an
    aclInit joins it, and finalizing that ends it."""
    _finalize_all(acl)
    if acl.init() in (0, _REPEAT_INITIALIZE):
        _finalize_all(acl)


class NpuEmulator:
    """An emulated NPU for this process and the subprocesses it starts.

    Keywords: device_count, soc, device_memory (bytes or "16G"), host_access ("strict"/"open"),
    quirks ("none"/"vendor"), interconnect ("hccs"/"pcie"), faults ("api:nth:code,..." or a list
    of (api, nth, code)), env (more variables), check_leaks (default True). A setting not given
    keeps the value the process's environment has (a CI job may set ACLVMM_DEVICE_COUNT for all
    tests), else the library's default."""

    def __init__(self, device_count=None, soc=None, device_memory=None, host_access=None,
                 quirks=None, interconnect=None, faults=None, env=None, check_leaks=True):
        values = dict(device_count=device_count, soc=soc, device_memory=device_memory,
                      host_access=host_access, quirks=quirks, interconnect=interconnect,
                      faults=faults)
        self.settings = {}
        for key, value in values.items():
            if value is None:
                continue
            if key == "faults" and not isinstance(value, str):
                value = ",".join("%s:%d:%d" % tuple(rule) for rule in value)
            self.settings[_SETTINGS[key]] = str(value)
        for name, value in (env or {}).items():
            self.settings[name] = str(value)
        self.check_leaks = check_leaks
        self.faults = Faults()
        self._saved = None
        self._acl = None

    # -- lifetime -------------------------------------------------------------------------
    def start(self):
        import acl

        self._acl = acl
        extensions()  # fails here, clearly, when `acl` is not aclvmm's
        _stop_runtime(acl)
        self._saved = {name: os.environ.get(name) for name in self.settings}
        os.environ.update(self.settings)
        return self

    def close(self):
        """Checks for leaks (when asked), clears the fault rules, restores the environment and
        stops the runtime, in that order (the stop starts a runtime for a moment: it must read
        the outer environment, not the test's faults). Raises LeakError after cleaning up."""
        if self._saved is None:
            return
        leaks = {}
        try:
            if self.check_leaks:
                leaks = self.leaks()
        finally:
            try:
                self.faults.clear()
            finally:
                for name, value in self._saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
                self._saved = None
                _stop_runtime(self._acl)
        if leaks:
            raise LeakError("the test left live objects on the emulated NPU: " + ", ".join(
                "%s=%s" % item for item in sorted(leaks.items())))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    # -- what the library keeps -----------------------------------------------------------
    def stats(self):
        """The library's statistics now (aclvmmStatsJson) as a Stats object."""
        text = extensions().aclvmmStatsJson()
        if text is None:
            raise RuntimeError("aclvmmStatsJson failed: %s" % extensions().aclGetRecentErrMsg())
        return Stats(json.loads(text.decode()))

    def leaks(self):
        """{counter: value} of everything still live: the "live" counters and each device's
        memory_used ("device<i>.memory_used")."""
        s = self.stats().raw
        found = {name: n for name, n in s.get("live", {}).items() if n}
        for device in s.get("devices", []):
            if device.get("memory_used"):
                found["device%d.memory_used" % device["id"]] = device["memory_used"]
        return found

    @property
    def device_count(self):
        """The number of emulated devices this emulator's runtime has."""
        count, ret = self._acl.rt.get_device_count()
        if ret != 0:
            raise RuntimeError("aclrtGetDeviceCount returned %d" % ret)
        return count

    # -- subprocesses ---------------------------------------------------------------------
    @property
    def env(self):
        """The environment for a subprocess on the same emulated NPU: this one's variables, the
        `acl` module and the aclvmm package first on PYTHONPATH, the library's directory first
        on LD_LIBRARY_PATH (for C programs linked to libascendcl.so or libacl_rt.so)."""
        env = dict(os.environ)
        env.update(self.settings)
        paths = [os.path.dirname(acl_module_path()),
                 os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        libs = [os.path.dirname(library_path())]
        shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
        if os.path.isdir(shim) and shim not in libs:
            libs.append(shim)
        for name, first in (("PYTHONPATH", paths), ("LD_LIBRARY_PATH", libs)):
            rest = [p for p in env.get(name, "").split(os.pathsep) if p and p not in first]
            env[name] = os.pathsep.join(first + rest)
        return env

    def popen(self, args, **kwargs):
        """subprocess.Popen with this emulator's environment."""
        kwargs.setdefault("env", self.env)
        return subprocess.Popen(args, **kwargs)

    def run(self, args, **kwargs):
        """subprocess.run with this emulator's environment."""
        kwargs.setdefault("env", self.env)
        return subprocess.run(args, **kwargs)

    def python(self, *args, **kwargs):
        """Popen of this interpreter (`sys.executable`) with `args` and this environment."""
        return self.popen([sys.executable] + list(args), **kwargs)

    def __repr__(self):
        return "NpuEmulator(%s)" % ", ".join("%s=%s" % kv for kv in sorted(self.settings.items()))
