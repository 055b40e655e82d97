// Robustness of the runtime calls (init, devices, contexts, streams, plain memory, copies, peer
// access, versions, sharing, managed memory, aclvmm extensions): null, forged and stale arguments
// give the code of behavior.md and leave no partial state. The VMM rows are in robustness_test.cpp.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // aclrtGetVersion, aclsysGetCANNVersion

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "api/managed_util.h"
#include "api/robustness_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {


aclError dmalloc(size_t size, int policy = ACL_MEM_MALLOC_HUGE_FIRST, bool align32 = false) {
  void* p = nullptr;
  auto pol = static_cast<aclrtMemMallocPolicy>(policy);
  aclError e = align32 ? aclrtMallocAlign32(&p, size, pol) : aclrtMalloc(&p, size, pol);
  if (e == ACL_SUCCESS) (void)aclrtFree(p);
  return e;
}
aclError hmalloc(size_t size) {
  void* p = nullptr;
  aclError e = aclrtMallocHost(&p, size);
  if (e == ACL_SUCCESS) (void)aclrtFreeHost(p);
  return e;
}
// Async call on a fresh stream; a failure of the queued work is reported by the synchronisation.
aclError async_then_sync(const std::function<aclError(aclrtStream)>& fn) {
  aclrtStream s = nullptr;
  if (aclrtCreateStream(&s) != ACL_SUCCESS) return -1;
  aclError e = fn(s);
  aclError sync = aclrtSynchronizeStream(s);
  (void)aclrtDestroyStream(s);
  return e != ACL_SUCCESS ? e : sync;
}
aclError batch(const void* p0, const void* p1, size_t count, size_t* idxs, size_t nlocs,
               aclrtMemManagedLocation loc = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 0), uint64_t flags = 0,
               aclrtStream s = nullptr) {
  const void* ptrs[3] = {p0, p1, p0};
  size_t sizes[3] = {k2M, k2M, k2M};
  aclrtMemManagedLocation locs[3] = {loc, loc, loc};
  return aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, count, locs, idxs, nlocs, flags, s);
}

}  // namespace

std::vector<Row> runtime_rows(RobustnessBase& t) {
  World& w = t.w;
  std::vector<Row> rows;
  auto no_ctx = [&t](std::function<aclError()> fn) { return [&t, fn] { return t.without_context(fn); }; };
  static unsigned char hbuf[4 * kMiB];  // host side of copies
  static std::vector<int32_t> many_pids(65536, 1);
  static uint64_t forged_token = 0x00000000deadbeefull;

  // §13 aclInit / aclFinalize (initialised here: 100002 counts one more reference).
  std::string api = "aclInit";
  rows.push_back({api, "unreadable config path", [] { return aclInit("/nonexistent/dir/acl.json"); }, 100003});
  rows.push_back({api, "other content than the first init", [] {
    std::string p = temp_file("{\"dump\": {}}");
    aclError e = aclInit(p.c_str());
    if (e == ACL_SUCCESS || e == 100002) (void)aclFinalize();
    std::remove(p.c_str());
    return e;
  }, kParam});
  rows.push_back({api, "repeated init counts a reference", [] {
    aclError e = aclInit(nullptr);
    return aclFinalize() == ACL_SUCCESS ? e : -1;
  }, 100002});
  rows.push_back({"aclFinalize", "balanced extra reference keeps the runtime", [&w] {
    if (aclInit(nullptr) != 100002) return -1;
    aclError e = aclFinalize();
    return aclrtUnmapMem(at(w.va, k2M)) == kDrv ? e : -2;  // the world is still there
  }, ACL_SUCCESS});

  // §13 devices: bad id → 107001; no current context → 107002; NULL → 100000.
  for (int id : {-1, 8, INT_MAX, INT_MIN}) {
    const std::string n = "device id " + std::to_string(id);
    rows.push_back({"aclrtSetDevice", n, [id] { return aclrtSetDevice(id); }, kBadDevice});
    rows.push_back({"aclrtResetDevice", n, [id] { return aclrtResetDevice(id); }, kBadDevice});
    rows.push_back({"aclrtResetDeviceForce", n, [id] { return aclrtResetDeviceForce(id); }, kBadDevice});
    rows.push_back({"aclrtCreateContext", n, [id] { aclrtContext c = nullptr; return aclrtCreateContext(&c, id); }, kBadDevice});
    rows.push_back({"aclrtDeviceGetUuid", n, [id] { aclrtUuid u; return aclrtDeviceGetUuid(id, &u); }, kBadDevice});
    rows.push_back({"aclrtDeviceCanAccessPeer", "peer " + n, [id] { int32_t c; return aclrtDeviceCanAccessPeer(&c, 0, id); }, kBadDevice});
    rows.push_back({"aclrtDeviceCanAccessPeer", n, [id] { int32_t c; return aclrtDeviceCanAccessPeer(&c, id, 0); }, kBadDevice});
    rows.push_back({"aclrtDeviceEnablePeerAccess", n, [id] { return aclrtDeviceEnablePeerAccess(id, 0); }, kBadDevice});
    rows.push_back({"aclrtDeviceDisablePeerAccess", n, [id] { return aclrtDeviceDisablePeerAccess(id); }, kBadDevice});
    rows.push_back({"aclrtMemImportFromShareableHandle", n, [id] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandle(forged_token, id, &h); }, kBadDevice});
  }
  rows.push_back({"aclrtGetDevice", "NULL", [] { return aclrtGetDevice(nullptr); }, kParam});
  rows.push_back({"aclrtGetDevice", "no current context", no_ctx([] { int32_t d; return aclrtGetDevice(&d); }), kNoContext});
  rows.push_back({"aclrtGetDeviceCount", "NULL", [] { return aclrtGetDeviceCount(nullptr); }, kParam});
  // Spec: "forward to rt"; the runtime needs a current device (107002, library behaviour).
  rows.push_back({"aclrtSynchronizeDevice", "no current context", no_ctx([] { return aclrtSynchronizeDevice(); }), kNoContext});
  rows.push_back({"aclrtDeviceCanAccessPeer", "NULL", [] { return aclrtDeviceCanAccessPeer(nullptr, 0, 1); }, kParam});
  rows.push_back({"aclrtDeviceCanAccessPeer", "device == peer", [] { int32_t c; return aclrtDeviceCanAccessPeer(&c, 1, 1); }, kParam});
  rows.push_back({"aclrtDeviceEnablePeerAccess", "flags 1", [] { return aclrtDeviceEnablePeerAccess(1, 1); }, 200006});
  rows.push_back({"aclrtDeviceEnablePeerAccess", "peer is the current device", [] { return aclrtDeviceEnablePeerAccess(0, 0); }, kParam});
  rows.push_back({"aclrtDeviceEnablePeerAccess", "no current context", no_ctx([] { return aclrtDeviceEnablePeerAccess(1, 0); }), kNoContext});
  rows.push_back({"aclrtDeviceDisablePeerAccess", "peer is the current device", [] { return aclrtDeviceDisablePeerAccess(0); }, kParam});
  rows.push_back({"aclrtDeviceDisablePeerAccess", "no current context", no_ctx([] { return aclrtDeviceDisablePeerAccess(1); }), kNoContext});
  api = "aclrtGetMemInfo";
  rows.push_back({api, "free NULL", [] { size_t t; return aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &t); }, kParam});
  rows.push_back({api, "total NULL", [] { size_t f; return aclrtGetMemInfo(ACL_HBM_MEM, &f, nullptr); }, kParam});
  // Spec silent (attr forwarded to rt): the library answers 107000 and 107002.
  rows.push_back({api, "attr 99", [] { size_t f, t; return aclrtGetMemInfo(static_cast<aclrtMemAttr>(99), &f, &t); }, kRtParam});
  rows.push_back({api, "no current context", no_ctx([] { size_t f, t; return aclrtGetMemInfo(ACL_HBM_MEM, &f, &t); }), kNoContext});
  rows.push_back({"aclrtDeviceGetUuid", "uuid NULL", [] { return aclrtDeviceGetUuid(0, nullptr); }, kParam});
  rows.push_back({"aclrtDeviceGetBareTgid", "NULL", [] { return aclrtDeviceGetBareTgid(nullptr); }, kParam});
  rows.push_back({"aclrtGetRunMode", "NULL", [] { return aclrtGetRunMode(nullptr); }, kParam});

  // §13 contexts: NULL → 100000; stale / forged values → 107000 (spec silent on the code; the
  // decisions table's 107000 for stale handles is applied). A failed call keeps the current context.
  auto keeps_ctx = [&w](std::function<aclError()> fn) {
    return [&w, fn] {
      aclError e = fn();
      aclrtContext cur = nullptr;
      return aclrtGetCurrentContext(&cur) == ACL_SUCCESS && cur == w.primary ? e : -1;
    };
  };
  rows.push_back({"aclrtCreateContext", "NULL", [] { return aclrtCreateContext(nullptr, 0); }, kParam});
  rows.push_back({"aclrtDestroyContext", "NULL", [] { return aclrtDestroyContext(nullptr); }, kParam});
  rows.push_back({"aclrtSetCurrentContext", "NULL", [] { return aclrtSetCurrentContext(nullptr); }, kParam});
  rows.push_back({"aclrtGetCurrentContext", "NULL", [] { return aclrtGetCurrentContext(nullptr); }, kParam});
  rows.push_back({"aclrtGetCurrentContext", "no current context", no_ctx([] { aclrtContext c; return aclrtGetCurrentContext(&c); }), kNoContext});
  for (const char* a : {"aclrtDestroyContext", "aclrtSetCurrentContext"}) {
    const bool destroy = a[5] == 'D';
    auto call = [destroy](void* c) { return destroy ? aclrtDestroyContext(c) : aclrtSetCurrentContext(c); };
    t.add_forged(rows, a, "context", kRtParam, [=](void* v) { return keeps_ctx([=] { return call(v); })(); });
    rows.push_back({a, "destroyed context", keeps_ctx([=, &w] { return call(w.dead_ctx); }), kRtParam});
    rows.push_back({a, "stream as context", keeps_ctx([=, &w] { return call(w.stream); }), kRtParam});
    rows.push_back({a, "physical handle as context", keeps_ctx([=, &w] { return call(w.h); }), kRtParam});
  }

  // §13 streams: NULL → 100000 (SynchronizeStream(NULL) = default stream); stale / forged → 107000.
  rows.push_back({"aclrtCreateStream", "NULL", [] { return aclrtCreateStream(nullptr); }, kParam});
  rows.push_back({"aclrtCreateStream", "no current context", no_ctx([] {
    aclrtStream s = nullptr;
    aclError e = aclrtCreateStream(&s);
    if (e == ACL_SUCCESS) (void)aclrtDestroyStream(s);
    return e;
  }), kNoContext});
  rows.push_back({"aclrtSynchronizeStream", "NULL is the default stream", [] { return aclrtSynchronizeStream(nullptr); }, ACL_SUCCESS});
  rows.push_back({"aclrtSynchronizeStream", "default stream without context", no_ctx([] { return aclrtSynchronizeStream(nullptr); }), kNoContext});
  using StreamFn = aclError (*)(aclrtStream);
  const std::pair<const char*, StreamFn> stream_calls[] = {{"aclrtDestroyStream", aclrtDestroyStream},
                                                           {"aclrtDestroyStreamForce", aclrtDestroyStreamForce},
                                                           {"aclrtSynchronizeStream", aclrtSynchronizeStream}};
  for (const auto& [a, fn] : stream_calls) {
    if (fn != aclrtSynchronizeStream) rows.push_back({a, "NULL", [fn = fn] { return fn(nullptr); }, kParam});
    t.add_forged(rows, a, "stream", kRtParam, [fn = fn](void* v) { return fn(v); });
    rows.push_back({a, "destroyed stream", [fn = fn, &w] { return fn(w.dead_stream); }, kRtParam});
    rows.push_back({a, "physical handle as stream", [fn = fn, &w] { return fn(w.h); }, kRtParam});
    rows.push_back({a, "context as stream", [fn = fn, &w] { return fn(w.primary); }, kRtParam});
  }

  // §13 plain memory. Spec silent on sizes that overflow when rounded and on forged frees: the
  // library's 207001 (out of memory) and 107000 are asserted.
  for (bool a32 : {false, true}) {
    api = a32 ? "aclrtMallocAlign32" : "aclrtMalloc";
    rows.push_back({api, "devPtr NULL", [a32] { return a32 ? aclrtMallocAlign32(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST) : aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST); }, kParam});
    rows.push_back({api, "size 0", [a32] { return dmalloc(0, 0, a32); }, kParam});
    // aclrtMallocAlign32 refuses a size whose 32-byte rounding wraps in its ACL layer (§6).
    const aclError wraps = a32 ? kParam : kNoMemory;
    rows.push_back({api, "size SIZE_MAX", [a32] { return dmalloc(kMax, 0, a32); }, wraps});
    rows.push_back({api, "size overflowing 32 B rounding",
                    [a32] { return dmalloc(kMax - 31, 0, a32); }, wraps});
    rows.push_back({api, "size 1 TiB", [a32] { return dmalloc(size_t(1) << 40, 0, a32); }, kNoMemory});
    rows.push_back({api, "HUGE1G policy, size SIZE_MAX",
                    [a32] { return dmalloc(kMax, ACL_MEM_MALLOC_HUGE1G_ONLY, a32); }, wraps});
    rows.push_back({api, "no current context", no_ctx([a32] { return dmalloc(64, 0, a32); }), kNoContext});
  }
  api = "aclrtMallocHost";
  rows.push_back({api, "hostPtr NULL", [] { return aclrtMallocHost(nullptr, 64); }, kParam});
  rows.push_back({api, "size 0", [] { return hmalloc(0); }, kParam});
  rows.push_back({api, "size SIZE_MAX", [] { return hmalloc(kMax); }, kNoMemory});
  rows.push_back({api, "no current context", no_ctx([] { return hmalloc(64); }), kNoContext});
  api = "aclrtFree";
  rows.push_back({api, "NULL", [] { return aclrtFree(nullptr); }, kParam});
  t.add_forged(rows, api, "pointer", kRtParam, [](void* v) { return aclrtFree(v); });
  rows.push_back({api, "freed pointer", [&w] { return aclrtFree(w.freed_dptr); }, kRtParam});
  rows.push_back({api, "interior pointer", [&w] { return aclrtFree(at(w.dptr, 32)); }, kRtParam});
  rows.push_back({api, "aclrtMallocHost pointer", [&w] { return aclrtFree(w.hptr); }, kRtParam});
  rows.push_back({api, "reservation", [&w] { return aclrtFree(w.va2); }, kRtParam});
  rows.push_back({api, "released reservation", [&w] { return aclrtFree(w.released_va); }, kRtParam});
  api = "aclrtFreeHost";
  rows.push_back({api, "NULL", [] { return aclrtFreeHost(nullptr); }, kParam});
  t.add_forged(rows, api, "pointer", kRtParam, [](void* v) { return aclrtFreeHost(v); });
  rows.push_back({api, "freed pointer", [&w] { return aclrtFreeHost(w.freed_hptr); }, kRtParam});
  rows.push_back({api, "interior pointer", [&w] { return aclrtFreeHost(at(w.hptr, 32)); }, kRtParam});
  rows.push_back({api, "aclrtMalloc pointer", [&w] { return aclrtFreeHost(w.dptr); }, kRtParam});

  // §13 + decisions table: copies. count 0 → 0; NULL / kind ∉ 0..5 → 100000; destMax < count →
  // 107000; an address range that is not fully mapped / accessible → 507899 (forged host
  // pointers too: an error code, never a crash). Async failures come back from the sync.
  for (bool async : {false, true}) {
    api = async ? "aclrtMemcpyAsync" : "aclrtMemcpy";
    // The kind stays an int until the call (no enum object holds an out-of-range value).
    auto cp = [async](void* d, size_t max, const void* s, size_t n, int kind) -> aclError {
      if (!async) return aclrtMemcpy(d, max, s, n, static_cast<aclrtMemcpyKind>(kind));
      return async_then_sync([=](aclrtStream st) {
        return aclrtMemcpyAsync(d, max, s, n, static_cast<aclrtMemcpyKind>(kind), st);
      });
    };
    rows.push_back({api, "count 0 ignores NULLs", [cp] { return cp(nullptr, 0, nullptr, 0, 1); }, ACL_SUCCESS});
    rows.push_back({api, "dst NULL", [cp] { return cp(nullptr, 16, hbuf, 16, 0); }, kParam});
    rows.push_back({api, "src NULL", [cp] { return cp(hbuf, 16, nullptr, 16, 0); }, kParam});
    for (int kind : {6, 7, 99, -1}) {
      rows.push_back({api, "kind " + std::to_string(kind), [cp, &w, kind] { return cp(w.va, 16, hbuf, 16, kind); }, kParam});
    }
    rows.push_back({api, "destMax < count", [cp, &w] { return cp(w.va, 8, hbuf, 16, 1); }, kRtParam});
    rows.push_back({api, "dst released reservation", [cp, &w] { return cp(w.released_va, 16, hbuf, 16, 1); }, kDrv});
    rows.push_back({api, "dst never mapped", [cp, &w] { return cp(w.va2, 16, hbuf, 16, 1); }, kDrv});
    rows.push_back({api, "src freed aclrtMalloc", [cp, &w] { return cp(hbuf, 16, w.freed_dptr, 16, 2); }, kDrv});
    rows.push_back({api, "src past the mapping", [cp, &w] { return cp(hbuf, 4 * kMiB, w.va, 4 * kMiB, 2); }, kDrv});
    rows.push_back({api, "src SIZE_MAX bytes", [cp, &w] { return cp(hbuf, kMax, w.va, kMax, 2); }, kDrv});
    rows.push_back({api, "d2d into never mapped", [cp, &w] { return cp(w.va2, 4096, w.va, 4096, 3); }, kDrv});
    t.add_bad_host(rows, api, "h2h dst", kDrv, [cp](void* v) { return cp(v, 16, hbuf, 16, 0); });
    t.add_bad_host(rows, api, "h2h src", kDrv, [cp](void* v) { return cp(hbuf, 16, v, 16, 0); });
    t.add_bad_host(rows, api, "d2h dst", kDrv, [cp, &w](void* v) { return cp(v, 16, w.va, 16, 2); });
    t.add_bad_host(rows, api, "h2d src", kDrv, [cp, &w](void* v) { return cp(w.va, 16, v, 16, 1); });
    t.add_bad_host(rows, api, "DEFAULT kind dst", kDrv, [cp](void* v) { return cp(v, 16, hbuf, 16, 4); });
    rows.push_back({api, "device 1 memory read by device 0", [cp, &w] {
      void* va = nullptr;
      if (aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0) || aclrtMapMem(va, k2M, 0, w.h_dev1, 0)) return -1;
      aclError e = cp(hbuf, 16, va, 16, 2);
      return aclrtUnmapMem(va) == ACL_SUCCESS && aclrtReleaseMemAddress(va) == ACL_SUCCESS ? e : -2;
    }, kDrv});
  }
  rows.push_back({"aclrtMemcpyAsync", "NULL stream is the default stream", [&w] {
    aclError e = aclrtMemcpyAsync(hbuf, 16, w.va, 16, ACL_MEMCPY_DEVICE_TO_HOST, nullptr);
    return e == ACL_SUCCESS ? aclrtSynchronizeStream(nullptr) : e;
  }, ACL_SUCCESS});
  t.add_forged(rows, "aclrtMemcpyAsync", "stream", kRtParam, [&w](void* s) { return aclrtMemcpyAsync(w.va, 16, hbuf, 16, ACL_MEMCPY_HOST_TO_DEVICE, s); });
  rows.push_back({"aclrtMemcpyAsync", "destroyed stream", [&w] { return aclrtMemcpyAsync(w.va, 16, hbuf, 16, ACL_MEMCPY_HOST_TO_DEVICE, w.dead_stream); }, kRtParam});
  rows.push_back({"aclrtMemcpyAsync", "handle as stream", [&w] { return aclrtMemcpyAsync(w.va, 16, hbuf, 16, ACL_MEMCPY_HOST_TO_DEVICE, w.h); }, kRtParam});
  for (bool async : {false, true}) {
    api = async ? "aclrtMemsetAsync" : "aclrtMemset";
    auto ms = [async](void* d, size_t max, size_t n) -> aclError {
      if (!async) return aclrtMemset(d, max, 0x11, n);
      return async_then_sync([=](aclrtStream st) { return aclrtMemsetAsync(d, max, 0x11, n, st); });
    };
    rows.push_back({api, "count 0 ignores NULL", [ms] { return ms(nullptr, 0, 0); }, ACL_SUCCESS});
    rows.push_back({api, "devPtr NULL", [ms] { return ms(nullptr, 16, 16); }, kParam});
    rows.push_back({api, "maxCount < count", [ms, &w] { return ms(w.va, 8, 16); }, kRtParam});
    rows.push_back({api, "released reservation", [ms, &w] { return ms(w.released_va, 16, 16); }, kDrv});
    rows.push_back({api, "never mapped", [ms, &w] { return ms(w.va2, 16, 16); }, kDrv});
    rows.push_back({api, "SIZE_MAX bytes", [ms, &w] { return ms(w.va, kMax, kMax); }, kDrv});
    rows.push_back({api, "freed aclrtMalloc", [ms, &w] { return ms(w.freed_dptr, 16, 16); }, kDrv});
    t.add_bad_host(rows, api, "host pointer", kDrv, [ms](void* v) { return ms(v, 16, 16); });
  }
  t.add_forged(rows, "aclrtMemsetAsync", "stream", kRtParam, [&w](void* s) { return aclrtMemsetAsync(w.va, 16, 0, 16, s); });
  rows.push_back({"aclrtMemsetAsync", "destroyed stream", [&w] { return aclrtMemsetAsync(w.va, 16, 0, 16, w.dead_stream); }, kRtParam});

  // §13 versions and identity. Spec silent on unknown package names: the library's 100000.
  rows.push_back({"aclrtGetVersion", "major NULL", [] { int32_t a, b; return aclrtGetVersion(nullptr, &a, &b); }, kParam});
  rows.push_back({"aclrtGetVersion", "minor NULL", [] { int32_t a, b; return aclrtGetVersion(&a, nullptr, &b); }, kParam});
  rows.push_back({"aclrtGetVersion", "patch NULL", [] { int32_t a, b; return aclrtGetVersion(&a, &b, nullptr); }, kParam});
  static char pkg[] = "runtime", bad_pkg[] = "no-such-package";
  rows.push_back({"aclsysGetVersionStr", "pkgName NULL", [] { char v[128]; return aclsysGetVersionStr(nullptr, v); }, kParam});
  rows.push_back({"aclsysGetVersionStr", "versionStr NULL", [] { return aclsysGetVersionStr(pkg, nullptr); }, kParam});
  rows.push_back({"aclsysGetVersionStr", "unknown package", [] { char v[128]; return aclsysGetVersionStr(bad_pkg, v); }, kParam});
  rows.push_back({"aclsysGetVersionNum", "pkgName NULL", [] { int32_t v; return aclsysGetVersionNum(nullptr, &v); }, kParam});
  rows.push_back({"aclsysGetVersionNum", "versionNum NULL", [] { return aclsysGetVersionNum(pkg, nullptr); }, kParam});
  rows.push_back({"aclsysGetVersionNum", "unknown package", [] { int32_t v; return aclsysGetVersionNum(bad_pkg, &v); }, kParam});
  rows.push_back({"aclsysGetCANNVersion", "version NULL", [] { return aclsysGetCANNVersion(ACL_PKG_NAME_CANN, nullptr); }, kParam});
  rows.push_back({"aclsysGetCANNVersion", "name 99", [] { aclCANNPackageVersion v; return aclsysGetCANNVersion(static_cast<aclCANNPackageName>(99), &v); }, kParam});
  rows.push_back({"aclrtGetSocName", "after failures still the SoC", [] {
    (void)aclrtFree(reinterpret_cast<void*>(0x1234));
    const char* s = aclrtGetSocName();
    return s && std::string(s) == "Ascend910B1" ? ACL_SUCCESS : -1;
  }, ACL_SUCCESS});
  rows.push_back({"aclGetRecentErrMsg", "read twice: text, then NULL", [] {
    (void)aclrtFree(reinterpret_cast<void*>(0x1234));
    const char* first = aclGetRecentErrMsg();
    const char* second = aclGetRecentErrMsg();
    return first && std::string(first).find("107000") != std::string::npos && !second ? ACL_SUCCESS : -1;
  }, ACL_SUCCESS});

  // §7 sharing (not implemented yet): argument checks as specified; an unknown token is 107017
  // once implemented, 207000 is accepted until then.
  api = "aclrtMemExportToShareableHandle";
  rows.push_back({api, "handle NULL", [] { uint64_t s; return aclrtMemExportToShareableHandle(nullptr, ACL_MEM_HANDLE_TYPE_NONE, 0, &s); }, kParam});
  rows.push_back({api, "out NULL", [&w] { return aclrtMemExportToShareableHandle(w.h_spare, ACL_MEM_HANDLE_TYPE_NONE, 0, nullptr); }, kParam});
  rows.push_back({api, "handleType POSIX", [&w] { uint64_t s; return aclrtMemExportToShareableHandle(w.h_spare, ACL_MEM_HANDLE_TYPE_POSIX, 0, &s); }, kParam});
  rows.push_back({api, "flags 2", [&w] { uint64_t s; return aclrtMemExportToShareableHandle(w.h_spare, ACL_MEM_HANDLE_TYPE_NONE, 2, &s); }, kRtParam});
  t.add_forged(rows, api, "handle", kRtParam, [](void* v) { uint64_t s; return aclrtMemExportToShareableHandle(v, ACL_MEM_HANDLE_TYPE_NONE, 0, &s); });
  rows.push_back({api, "freed handle", [&w] { uint64_t s; return aclrtMemExportToShareableHandle(w.freed_h, ACL_MEM_HANDLE_TYPE_NONE, 0, &s); }, kRtParam});
  api = "aclrtMemExportToShareableHandleV2";
  rows.push_back({api, "handle NULL", [] { uint64_t s; return aclrtMemExportToShareableHandleV2(nullptr, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &s); }, kParam});
  rows.push_back({api, "out NULL", [&w] { return aclrtMemExportToShareableHandleV2(w.h_spare, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, nullptr); }, kParam});
  rows.push_back({api, "shareType 0", [&w] { uint64_t s; return aclrtMemExportToShareableHandleV2(w.h_spare, 0, static_cast<aclrtMemSharedHandleType>(0), &s); }, kRtParam});
  rows.push_back({api, "shareType 3", [&w] { uint64_t s; return aclrtMemExportToShareableHandleV2(w.h_spare, 0, static_cast<aclrtMemSharedHandleType>(3), &s); }, kRtParam});
  rows.push_back({api, "flags 2", [&w] { uint64_t s; return aclrtMemExportToShareableHandleV2(w.h_spare, 2, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &s); }, kRtParam});
  rows.push_back({api, "FABRIC on A2", [&w] { aclrtMemFabricHandle f{}; return aclrtMemExportToShareableHandleV2(w.h_spare, 0, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &f); }, kNotSupported});
  t.add_forged(rows, api, "handle", kRtParam, [](void* v) { uint64_t s; return aclrtMemExportToShareableHandleV2(v, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &s); });
  rows.push_back({api, "freed handle", [&w] { uint64_t s; return aclrtMemExportToShareableHandleV2(w.freed_h, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &s); }, kRtParam});
  api = "aclrtMemSetPidToShareableHandle";
  rows.push_back({api, "pid NULL", [] { return aclrtMemSetPidToShareableHandle(forged_token, nullptr, 1); }, kParam});
  rows.push_back({api, "pidNum 0", [] { int32_t p = 1; return aclrtMemSetPidToShareableHandle(forged_token, &p, 0); }, kParam});
  rows.push_back({api, "pidNum 65536", [] { return aclrtMemSetPidToShareableHandle(forged_token, many_pids.data(), 65536); }, kRtParam});
  rows.push_back({api, "unknown token", [] { int32_t p = getpid(); return aclrtMemSetPidToShareableHandle(forged_token, &p, 1); }, kBadHandle});
  rows.push_back({api, "token 0", [] { int32_t p = getpid(); return aclrtMemSetPidToShareableHandle(0, &p, 1); }, kBadHandle});
  api = "aclrtMemSetPidToShareableHandleV2";
  rows.push_back({api, "token NULL", [] { int32_t p = 1; return aclrtMemSetPidToShareableHandleV2(nullptr, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &p, 1); }, kParam});
  rows.push_back({api, "pid NULL", [] { return aclrtMemSetPidToShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, nullptr, 1); }, kParam});
  rows.push_back({api, "pidNum 0", [] { int32_t p = 1; return aclrtMemSetPidToShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &p, 0); }, kParam});
  rows.push_back({api, "shareType 0", [] { int32_t p = 1; return aclrtMemSetPidToShareableHandleV2(&forged_token, static_cast<aclrtMemSharedHandleType>(0), &p, 1); }, kRtParam});
  rows.push_back({api, "FABRIC on A2", [] { aclrtMemFabricHandle f{}; int32_t p = 1; return aclrtMemSetPidToShareableHandleV2(&f, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &p, 1); }, kNotSupported});
  rows.push_back({api, "pidNum 65536", [] { return aclrtMemSetPidToShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, many_pids.data(), 65536); }, kRtParam});
  rows.push_back({api, "unknown token", [] { int32_t p = getpid(); return aclrtMemSetPidToShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &p, 1); }, kBadHandle});
  api = "aclrtMemImportFromShareableHandle";
  rows.push_back({api, "handle NULL", [] { return aclrtMemImportFromShareableHandle(forged_token, 0, nullptr); }, kParam});
  rows.push_back({api, "no current context", no_ctx([] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandle(forged_token, 0, &h); }), kNoContext});
  rows.push_back({api, "unknown token", [] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandle(forged_token, 0, &h); }, kBadHandle});
  api = "aclrtMemImportFromShareableHandleV2";
  rows.push_back({api, "token NULL", [] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandleV2(nullptr, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, &h); }, kParam});
  rows.push_back({api, "handle NULL", [] { return aclrtMemImportFromShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, nullptr); }, kParam});
  rows.push_back({api, "flags 1", [] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 1, &h); }, kParam});
  rows.push_back({api, "shareType 5", [] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandleV2(&forged_token, static_cast<aclrtMemSharedHandleType>(5), 0, &h); }, kRtParam});
  rows.push_back({api, "FABRIC on A2", [] { aclrtMemFabricHandle f{}; aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandleV2(&f, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &h); }, kNotSupported});
  rows.push_back({api, "no current context", no_ctx([] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, &h); }), kNoContext});
  rows.push_back({api, "unknown token", [] { aclrtDrvMemHandle h; return aclrtMemImportFromShareableHandleV2(&forged_token, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, &h); }, kBadHandle});

  // §10 managed memory (not implemented yet): argument checks as specified; for pointers the
  // memory model must judge, 207000 is accepted until it exists.
  const aclrtMemManagedLocation d0 = mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 0);
  void* const fp = reinterpret_cast<void*>(0x1234);
  api = "aclrtMemAllocManaged";
  rows.push_back({api, "ptr NULL", [] { return aclrtMemAllocManaged(nullptr, k2M, ACL_RT_MEM_ATTACH_GLOBAL); }, kParam});
  rows.push_back({api, "flag 0", [] { void* p; return aclrtMemAllocManaged(&p, k2M, 0); }, kParam});
  rows.push_back({api, "flag 2", [] { void* p; return aclrtMemAllocManaged(&p, k2M, 2); }, kParam});
  rows.push_back({api, "size 0", [] { void* p; return aclrtMemAllocManaged(&p, 0, ACL_RT_MEM_ATTACH_GLOBAL); }, kRtParam});
  rows.push_back({api, "no current context", no_ctx([] { void* p; return aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL); }), kNoContext});
  api = "aclrtMemManagedAdvise";
  rows.push_back({api, "ptr NULL", [d0] { return aclrtMemManagedAdvise(nullptr, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, d0); }, kParam});
  rows.push_back({api, "size 0", [=] { return aclrtMemManagedAdvise(fp, 0, ACL_MEM_ADVISE_SET_READ_MOSTLY, d0); }, kParam});
  rows.push_back({api, "advise 6", [=] { return aclrtMemManagedAdvise(fp, k2M, static_cast<aclrtMemManagedAdviseType>(6), d0); }, kRtParam});
  rows.push_back({api, "device id 8", [=] { return aclrtMemManagedAdvise(fp, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8)); }, kRtParam});
  rows.push_back({api, "device id -1", [=] { return aclrtMemManagedAdvise(fp, k2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, -1)); }, kRtParam});
  rows.push_back({api, "no current context", no_ctx([=] { return aclrtMemManagedAdvise(fp, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, d0); }), kNoContext});
  rows.push_back({api, "not managed memory", [=] { return aclrtMemManagedAdvise(fp, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, d0); }, kRtParam});
  api = "aclrtMemManagedGetAttr";
  rows.push_back({api, "ptr NULL", [] { int32_t d; return aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, nullptr, k2M, &d, 4); }, kParam});
  rows.push_back({api, "data NULL", [=] { return aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, fp, k2M, nullptr, 4); }, kParam});
  rows.push_back({api, "size 0", [=] { int32_t d; return aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, fp, 0, &d, 4); }, kParam});
  for (int a : {0, 9, -1}) {
    rows.push_back({api, "attribute " + std::to_string(a), [=] { int32_t d; return aclrtMemManagedGetAttr(static_cast<aclrtMemManagedRangeAttribute>(a), fp, k2M, &d, 4); }, kRtParam});
  }
  rows.push_back({api, "not managed memory", [=] { int32_t d; return aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, fp, k2M, &d, 4); }, kRtParam});
  api = "aclrtMemManagedGetAttrs";
  rows.push_back({api, "attributes NULL", [=] { void* d[1]; size_t s[1] = {4}; return aclrtMemManagedGetAttrs(nullptr, 1, fp, k2M, d, s); }, kParam});
  rows.push_back({api, "ptr NULL", [] { aclrtMemManagedRangeAttribute a = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY; void* d[1]; size_t s[1] = {4}; return aclrtMemManagedGetAttrs(&a, 1, nullptr, k2M, d, s); }, kParam});
  rows.push_back({api, "data NULL", [=] { aclrtMemManagedRangeAttribute a = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY; size_t s[1] = {4}; return aclrtMemManagedGetAttrs(&a, 1, fp, k2M, nullptr, s); }, kParam});
  rows.push_back({api, "dataSizes NULL", [=] { aclrtMemManagedRangeAttribute a = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY; void* d[1]; return aclrtMemManagedGetAttrs(&a, 1, fp, k2M, d, nullptr); }, kParam});
  rows.push_back({api, "size 0", [=] { aclrtMemManagedRangeAttribute a = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY; void* d[1]; size_t s[1] = {4}; return aclrtMemManagedGetAttrs(&a, 1, fp, 0, d, s); }, kParam});
  rows.push_back({api, "second attribute 0", [=] { aclrtMemManagedRangeAttribute a[2] = {ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, static_cast<aclrtMemManagedRangeAttribute>(0)}; int32_t x, y; void* d[2] = {&x, &y}; size_t s[2] = {4, 4}; return aclrtMemManagedGetAttrs(a, 2, fp, k2M, d, s); }, kRtParam});
  rows.push_back({api, "numAttributes 0", [=] { aclrtMemManagedRangeAttribute a = ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY; void* d[1]; size_t s[1] = {4}; return aclrtMemManagedGetAttrs(&a, 0, fp, k2M, d, s); }, kRtParam});
  api = "aclrtMemManagedPrefetchAsync";
  rows.push_back({api, "ptr NULL", [d0] { return aclrtMemManagedPrefetchAsync(nullptr, k2M, d0, 0, nullptr); }, kParam});
  rows.push_back({api, "size 0", [=] { return aclrtMemManagedPrefetchAsync(fp, 0, d0, 0, nullptr); }, kParam});
  rows.push_back({api, "flags 1", [=] { return aclrtMemManagedPrefetchAsync(fp, k2M, d0, 1, nullptr); }, kParam});
  rows.push_back({api, "location INVALID", [=] { return aclrtMemManagedPrefetchAsync(fp, k2M, mloc(ACL_MEM_LOCATIONTYPE_INVALID, 0), 0, nullptr); }, kRtParam});
  rows.push_back({api, "location type 7", [=] { return aclrtMemManagedPrefetchAsync(fp, k2M, mloc(7, 0), 0, nullptr); }, kRtParam});
  rows.push_back({api, "device id 8", [=] { return aclrtMemManagedPrefetchAsync(fp, k2M, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8), 0, nullptr); }, kRtParam});
  // Spec silent on stale streams here; 107000 as for every other stream argument.
  t.add_forged(rows, api, "stream", kRtParam, [=](void* s) { return aclrtMemManagedPrefetchAsync(fp, k2M, d0, 0, s); });
  // Driver-side failures are only logged: the call itself returns 0 (207000 accepted for now).
  rows.push_back({api, "not managed memory", [=] { return aclrtMemManagedPrefetchAsync(fp, k2M, d0, 0, nullptr); }, ACL_SUCCESS});
  api = "aclrtMemManagedPrefetchBatchAsync";
  static size_t idx0[2] = {0, 1}, idx_bad_first[1] = {1}, idx_not_increasing[2] = {0, 0}, idx_past[2] = {0, 3};
  rows.push_back({api, "ptrs NULL", [=] { size_t s = k2M; aclrtMemManagedLocation l = d0; return aclrtMemManagedPrefetchBatchAsync(nullptr, &s, 1, &l, idx0, 1, 0, nullptr); }, kParam});
  rows.push_back({api, "sizes NULL", [=] { const void* p = fp; aclrtMemManagedLocation l = d0; return aclrtMemManagedPrefetchBatchAsync(&p, nullptr, 1, &l, idx0, 1, 0, nullptr); }, kParam});
  rows.push_back({api, "prefetchLocs NULL", [=] { const void* p = fp; size_t s = k2M; return aclrtMemManagedPrefetchBatchAsync(&p, &s, 1, nullptr, idx0, 1, 0, nullptr); }, kParam});
  rows.push_back({api, "prefetchLocIdxs NULL", [=] { const void* p = fp; size_t s = k2M; aclrtMemManagedLocation l = d0; return aclrtMemManagedPrefetchBatchAsync(&p, &s, 1, &l, nullptr, 1, 0, nullptr); }, kParam});
  rows.push_back({api, "count 0", [=] { return batch(fp, fp, 0, idx0, 1); }, kParam});
  rows.push_back({api, "numPrefetchLocs 0", [=] { return batch(fp, fp, 2, idx0, 0); }, kParam});
  rows.push_back({api, "flags 1", [=] { return batch(fp, fp, 2, idx0, 1, d0, 1); }, kParam});
  rows.push_back({api, "count < numPrefetchLocs", [=] { return batch(fp, fp, 1, idx0, 2); }, kParam});
  rows.push_back({api, "prefetchLocIdxs[0] != 0", [=] { return batch(fp, fp, 2, idx_bad_first, 1); }, kRtParam});
  rows.push_back({api, "idxs not increasing", [=] { return batch(fp, fp, 3, idx_not_increasing, 2); }, kRtParam});
  rows.push_back({api, "idx >= count", [=] { return batch(fp, fp, 3, idx_past, 2); }, kRtParam});
  rows.push_back({api, "ptrs[1] NULL", [=] { return batch(fp, nullptr, 2, idx0, 1); }, kRtParam});
  rows.push_back({api, "device id 8", [=] { return batch(fp, fp, 2, idx0, 1, mloc(ACL_MEM_LOCATIONTYPE_DEVICE, 8)); }, kRtParam});

  // Extensions (emulation.md §8).
  rows.push_back({"aclvmmStatsJson", "valid JSON after failures", [] {
    (void)aclrtFree(reinterpret_cast<void*>(0x1234));
    Json j;
    const char* s = aclvmmStatsJson();
    return s && parse_json(s, &j) && j.get("live") ? ACL_SUCCESS : -1;
  }, ACL_SUCCESS});
  rows.push_back({"aclvmmInjectFault", "api NULL", [] { return aclvmmInjectFault(nullptr, 1, kNoMemory); }, kParam});
  // aclvmmFaultRemaining answers a count, not a code: 0 for NULL and for names never armed.
  rows.push_back({"aclvmmFaultRemaining", "api NULL", [] { return aclError(aclvmmFaultRemaining(nullptr)); }, ACL_SUCCESS});
  rows.push_back({"aclvmmFaultRemaining", "never armed", [] { return aclError(aclvmmFaultRemaining("noSuchApi")); }, ACL_SUCCESS});
  rows.push_back({"aclvmmInjectFault", "clearing an unknown api", [] { return aclvmmInjectFault("noSuchApi", 0, 0); }, ACL_SUCCESS});
  // Spec silent: arming code 0 ("fail with success") is refused by the library (100000).
  rows.push_back({"aclvmmInjectFault", "code 0", [] { aclError e = aclvmmInjectFault("aclrtMalloc", 1, 0); (void)aclvmmInjectFault("aclrtMalloc", 0, 0); return e; }, kParam});
  rows.push_back({"aclvmmLaunchKernel", "func NULL", [&w] { return aclvmmLaunchKernel(w.stream, nullptr, nullptr); }, kParam});
  t.add_forged(rows, "aclvmmLaunchKernel", "stream", kRtParam, [](void* s) { return aclvmmLaunchKernel(s, [](aclvmmKernelContext*, void*) {}, nullptr); });
  rows.push_back({"aclvmmLaunchKernel", "destroyed stream", [&w] { return aclvmmLaunchKernel(w.dead_stream, [](aclvmmKernelContext*, void*) {}, nullptr); }, kRtParam});
  rows.push_back({"aclvmmKernelRead", "ctx NULL", [&w] { char b[16]; return aclvmmKernelRead(nullptr, b, w.va, 16); }, kParam});
  rows.push_back({"aclvmmKernelWrite", "ctx NULL", [&w] { char b[16] = {}; return aclvmmKernelWrite(nullptr, w.va, b, 16); }, kParam});
  rows.push_back({"aclvmmKernelDeviceId", "ctx NULL is -1", [] { return aclvmmKernelDeviceId(nullptr) == -1 ? ACL_SUCCESS : -1; }, ACL_SUCCESS});
  return rows;
}

namespace {

class RobustnessRuntimeTest : public RobustnessBase {};

TEST_F(RobustnessRuntimeTest, RuntimeCallsRejectBadInputWithoutSideEffects) {
  int on_stack = 0;
  stack_forged(&on_stack);
  const std::vector<Row> rows = runtime_rows(*this);
  EXPECT_GE(rows.size(), 350u);
  run_rows(rows);
  int32_t d = -1;
  EXPECT_EQ(aclrtGetDevice(&d), ACL_SUCCESS);
  EXPECT_EQ(d, 0);
}

// Inside an emulated kernel: NULL buffers → 100000; a bad device address → 507899, after which
// every access keeps failing, and the stream's synchronisation reports the failure.
struct KernelProbe {
  void* dev;
  void* bad;
  aclError codes[7];
  int32_t device;
};
void probe_kernel(aclvmmKernelContext* ctx, void* arg) {
  auto* k = static_cast<KernelProbe*>(arg);
  char b[16] = {};
  k->codes[0] = aclvmmKernelRead(ctx, nullptr, k->dev, 16);
  k->codes[1] = aclvmmKernelRead(ctx, b, nullptr, 16);
  k->codes[2] = aclvmmKernelWrite(ctx, nullptr, b, 16);
  k->codes[3] = aclvmmKernelWrite(ctx, k->dev, nullptr, 16);
  k->codes[4] = aclvmmKernelRead(ctx, b, k->dev, 16);
  k->codes[5] = aclvmmKernelRead(ctx, b, k->bad, 16);
  k->codes[6] = aclvmmKernelWrite(ctx, k->dev, b, 16);
  k->device = aclvmmKernelDeviceId(ctx);
}

TEST_F(RobustnessRuntimeTest, KernelAccessorsRejectBadArguments) {
  const LiveCounts before = live_counts();
  KernelProbe k{w.va, w.released_va, {}, -1};
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclvmmLaunchKernel(s, probe_kernel, &k), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), kDrv);
  const aclError want[7] = {kParam, kParam, kParam, kParam, ACL_SUCCESS, kDrv, kDrv};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(k.codes[i], want[i]) << "access " << i;
  EXPECT_EQ(k.device, 0);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // the failure was reported once
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(live_counts(), before);
}

// aclFinalize without a matching aclInit → 100037 (§13), and the runtime comes back afterwards.
class RobustnessLifecycleTest : public AclTest {};

TEST_F(RobustnessLifecycleTest, FinalizeWithoutInitIsRefused) {
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), 100037);
  EXPECT_EQ(aclFinalize(), 100037);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(stat_int(stats(), "live.physical_handles"), 0);
}

}  // namespace
}  // namespace aclvmm_test
