// aclvmm_fuzz_api: a libFuzzer harness for the public API with a reference model (tests/fuzz/README.md).
//
// Input format. An input is a sequence of steps (at most kMaxSteps); a step is one opcode byte
// (taken modulo the number of operations, table kOps below) followed by that operation's argument
// bytes. Reading past the end of the input yields zero bytes, so every input decodes. Arguments:
//   size      1 byte c: c<0x40 -> (c+1)*2 MiB; <0x80 -> 1+(c&63)*64 KiB (odd); <0xA0 -> 0;
//             <0xC0 -> ((c&31)+1)*512 MiB; <0xE0 -> 2^(32+(c&31)); else 8 more bytes: the size
//   int(N)    1 byte b: b<0xF0 -> b%N (N runs a little past the valid values); else 4 bytes raw
//   flags     1 byte b: b<0xE0 -> 0; <0xF0 -> b-0xE0; else 8 bytes raw
//   handle    1 byte s: s<0xC0 -> live handle s%n; <0xE0 -> a released one; <0xF0 -> NULL;
//             else forged: 1 class byte + 8 bytes (raw, generation flipped, another table's token)
//   stream    as handle, but <0xF0 -> NULL means the default stream; token: as handle, for
//             exported share tokens
//   address   1 byte s: s<0xA0 -> object of the kind the operation wants; <0xC0 -> any object;
//             <0xE0 -> a released address; <0xF0 -> NULL; else forged (1 class byte + 8 bytes:
//             low page, non-canonical, or inside a window; never the harness's own memory).
//             Then 1 byte w (objects only): w<0x40 base; <0x78 +(w-0x40)*2 MiB; <0x80 the object's
//             end +(w-0x7C)*2 MiB; <0xC0 +(w&63)*4 KiB; else +(w&63)*37+1 (misaligned)
//   data      1 byte object selector (host buffers, aclrtMalloc blocks, pinned, managed, mappings;
//             0xC0.. stale, 0xE0.. NULL, 0xF0.. forged), u16 offset o (o>=0xFF00: o&0xff bytes
//             before the end; else o*5 modulo the tracked bytes), u16 length l (l<0xF000 ->
//             l%16384; else (l&0xff)*64 KiB)
// Each operation's own bytes are read in the order its op_* function reads them (ops_*.cpp);
// a `misc` byte's bits select NULL outputs and out-of-range fields.
//
// After each step: the code returned must be one the model allows for the call (success exactly
// when the model says the call is valid, except resource failures where capacity is not modelled
// exactly); a failure the model predicts must leave aclvmmStatsJson unchanged; the live counts of
// aclvmmStatsJson must equal the model's and each device's memory_used its charges; bytes read
// back through any mapping or copy must be the bytes the model wrote. At the end of each input
// everything it created is released and the counts must be back at the baseline.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "harness.h"

namespace fuzz {

const char* g_step = nullptr;
int g_step_index = -1;

namespace {

constexpr int kMaxSteps = 48;

struct Op {
  const char* name;
  void (*run)(Input&);
};

// Opcode = index (modulo the count). Append only: the seed corpus encodes these numbers.
const Op kOps[] = {
    {"aclrtMallocPhysical", op_malloc_physical},       // 0
    {"aclrtFreePhysical", op_free_physical},           // 1
    {"aclrtReserveMemAddress", op_reserve},            // 2
    {"aclrtReserveMemAddressNoUCMemory", op_reserve_no_uc},  // 3
    {"aclrtReleaseMemAddress", op_release},            // 4
    {"aclrtMapMem/MemMapNoAccess", op_map},            // 5
    {"aclrtUnmapMem", op_unmap},                       // 6
    {"aclrtMemSetAccess", op_set_access},              // 7
    {"aclrtMemGetAccess", op_get_access},              // 8
    {"aclrtMemRetainAllocationHandle", op_retain},     // 9
    {"aclrtMemGetAllocationPropertiesFromHandle", op_properties},  // 10
    {"aclrtMemGetAddressRange", op_address_range},     // 11
    {"aclrtPointerGetAttributes", op_pointer_attributes},  // 12
    {"aclrtMalloc", op_malloc},                        // 13
    {"aclrtFree", op_free},                            // 14
    {"aclrtMallocHost", op_malloc_host},               // 15
    {"aclrtFreeHost", op_free_host},                   // 16
    {"aclrtMemcpy", op_memcpy},                        // 17
    {"aclrtMemset", op_memset},                        // 18
    {"aclrtMemcpy (read back)", op_read_check},        // 19
    {"aclrtMemAllocManaged", op_alloc_managed},        // 20
    {"aclrtMemManagedAdvise", op_managed_advise},      // 21
    {"aclrtMemManagedPrefetchAsync", op_managed_prefetch},  // 22
    {"aclrtMemManagedGetAttr", op_managed_get_attr},   // 23
    {"aclrtCreateStream", op_create_stream},           // 24
    {"aclrtDestroyStream[Force]", op_destroy_stream},  // 25
    {"aclrtSynchronizeStream", op_synchronize_stream}, // 26
    {"aclrtMemExportToShareableHandle[V2]", op_export},  // 27
    {"aclrtMemSetPidToShareableHandle[V2]", op_set_pid},  // 28
    {"aclrtMemImportFromShareableHandle[V2]", op_import},  // 29
    {"aclrtSetDevice", op_set_device},                 // 30
    {"aclrtDevice{Enable,Disable}PeerAccess", op_peer_access},  // 31
};
constexpr int kOpCount = sizeof kOps / sizeof kOps[0];

Snapshot g_baseline;
// The harness's own host memory: a copy source with known bytes and a read-back target.
alignas(64) uint8_t g_host_buffers[2][kShadow];

#define MUST(call)                                                          \
  do {                                                                      \
    int rc_ = (call);                                                       \
    FUZZ_CHECK(rc_ == 0, "%s returned %d: %s", #call, rc_,                  \
               aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");           \
  } while (0)

void configure_environment() {
  // The model assumes exactly this emulated machine (emulation.md §7).
  setenv("ACLVMM_SOC", "Ascend910B1", 1);
  setenv("ACLVMM_DEVICE_COUNT", "2", 1);
  setenv("ACLVMM_DEVICE_MEMORY", "128M", 1);
  setenv("ACLVMM_HOST_ACCESS", "strict", 1);
  setenv("ACLVMM_QUIRKS", "none", 1);
  setenv("ACLVMM_INTERCONNECT", "hccs", 1);
  setenv("ACLVMM_DRIVER", "emu", 1);
  for (const char* v : {"ACLVMM_FAULTS", "ACLVMM_STATS_FILE", "ACLVMM_TRACE_FILE", "ACLVMM_HOST_NUMA",
                        "ASCEND_RT_VISIBLE_DEVICES"}) {
    unsetenv(v);
  }
  // Failing calls are the common case here: logging each would cost more than the call.
  if (!getenv("ACLVMM_FUZZ_LOG")) setenv("ASCEND_GLOBAL_LOG_LEVEL", "4", 1);
}

// The windows move under sanitizers (emulation.md §3): learn them from the first allocation of
// each (first fit in a fresh window), and confirm the geometry the model assumes.
void learn_windows(Model& m) {
  void* p = nullptr;
  MUST(aclrtReserveMemAddress(&p, kChunk, 0, nullptr, 0));
  MUST(aclrtReleaseMemAddress(p));
  m.svm_general = reinterpret_cast<uint64_t>(p);
  m.svm_begin = m.svm_general - 0x2C000000000ull;  // general part: 0x12C000000000 - 0x100000000000
  m.svm_end = m.svm_begin + 8 * kTiB;
  MUST(aclrtReserveMemAddress(&p, kChunk, 0, reinterpret_cast<void*>(m.svm_end - kChunk), 0));
  MUST(aclrtReleaseMemAddress(p));
  FUZZ_CHECK(aclrtReserveMemAddress(&p, kChunk, 0, reinterpret_cast<void*>(m.svm_end), 0) == kRtParam &&
                 aclrtReserveMemAddress(&p, kChunk, 0, reinterpret_cast<void*>(m.svm_begin), 0) == kDrv,
             "the device window is not 8 TiB with its general part at 0x%llx",
             static_cast<unsigned long long>(m.svm_general));
  MUST(aclrtMallocHost(&p, 1));
  MUST(aclrtFreeHost(p));
  m.host_begin = reinterpret_cast<uint64_t>(p);
  m.host_end = m.host_begin + kTiB;
  MUST(aclrtMemAllocManaged(&p, 1, ACL_RT_MEM_ATTACH_GLOBAL));
  MUST(aclrtFree(p));
  m.uvm_begin = reinterpret_cast<uint64_t>(p);
  m.uvm_end = m.uvm_begin + 3 * kTiB;
  aclrtPtrAttributes attr;
  FUZZ_CHECK(aclrtPointerGetAttributes(reinterpret_cast<void*>(m.host_end - kChunk), &attr) == kDrv &&
                 aclrtPointerGetAttributes(reinterpret_cast<void*>(m.uvm_end - kChunk), &attr) == kDrv,
             "the host or managed window is smaller than the model assumes");
}

int count_numa_nodes() {
  aclrtPhysicalMemProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.memAttr = ACL_MEM_HUGE;
  prop.location.type = ACL_MEM_LOCATION_TYPE_HOST_NUMA;
  int nodes = 0;
  for (; nodes < 8; ++nodes) {
    prop.location.id = static_cast<uint32_t>(nodes);
    aclrtDrvMemHandle h = nullptr;
    if (aclrtMallocPhysical(&h, kChunk, &prop, 0) != 0) break;
    MUST(aclrtFreePhysical(h));
  }
  return nodes;
}

void check_model(const Snapshot& s) {
  Model& m = model();
  const long long want[Snapshot::kLive] = {
      static_cast<long long>(m.handles.size()), static_cast<long long>(m.count(Kind::kReservation)),
      static_cast<long long>(m.mapping_count()), static_cast<long long>(m.exports.size()),
      static_cast<long long>(m.imports.size()), static_cast<long long>(m.count(Kind::kManaged)),
      static_cast<long long>(m.count(Kind::kMalloc)), static_cast<long long>(m.count(Kind::kPinned))};
  for (int i = 0; i < Snapshot::kLive; ++i) {
    FUZZ_CHECK(s.live[i] == want[i], "live.%s is %lld, the model says %lld (%s)", Snapshot::kLiveKeys[i],
               s.live[i], want[i], s.describe().c_str());
  }
  const long long managed = static_cast<long long>(m.managed_bytes());
  for (int d = 0; d < kDevices; ++d) {
    const long long fixed = static_cast<long long>(m.device_fixed_used(d));
    // Managed pages resident on a device are charged to it too (emulation.md §6).
    FUZZ_CHECK(s.used[d] >= fixed && s.used[d] <= fixed + managed &&
                   s.used[d] <= static_cast<long long>(kDeviceMemory),
               "device %d memory_used is %lld; the model charges %lld (+ up to %lld of managed pages)", d,
               s.used[d], fixed, managed);
  }
}

// Releases everything the input created, through the API, in the order the model allows.
void release_all(Model& m) {
  g_step = "cleanup";
  MUST(aclrtSetDevice(0));
  for (uint64_t s : m.streams) MUST(aclrtDestroyStream(reinterpret_cast<void*>(s)));
  for (auto& [base, r] : m.regions) {
    for (auto& [va, mp] : r.maps) {
      MUST(aclrtUnmapMem(reinterpret_cast<void*>(va)));
      Handle* h = m.handle(mp.handle);
      FUZZ_CHECK(h != nullptr, "model: a mapping outlived its handle");
      --h->map_ref;
      if (--h->ref == 0) m.drop_handle(mp.handle);
    }
    r.maps.clear();
  }
  while (!m.handles.empty()) {
    Handle& h = m.handles.front();
    const uint64_t token = h.token;
    MUST(aclrtFreePhysical(reinterpret_cast<void*>(token)));
    if (--h.ref == 0) m.drop_handle(token);
  }
  for (auto& [base, r] : m.regions) {
    void* p = reinterpret_cast<void*>(base);
    if (r.kind == Kind::kReservation) MUST(aclrtReleaseMemAddress(p));
    if (r.kind == Kind::kMalloc || r.kind == Kind::kManaged) MUST(aclrtFree(p));
    if (r.kind == Kind::kPinned) MUST(aclrtFreeHost(p));
  }
  m.reset_objects();
  // The per-thread error queue keeps every failure until read: reading it leaves nothing behind
  // (and keeps libFuzzer's malloc/free balance, so inputs need no leak re-run).
  (void)aclGetRecentErrMsg();
  Snapshot s = snapshot();
  FUZZ_CHECK(s == g_baseline, "after releasing everything: %s (baseline %s)", s.describe().c_str(),
             g_baseline.describe().c_str());
}

void reset_devices(Model& m) {
  MUST(aclrtSetDevice(1));
  MUST(aclrtDeviceDisablePeerAccess(0));
  MUST(aclrtSetDevice(0));
  MUST(aclrtDeviceDisablePeerAccess(1));
  m.current = 0;
  std::memset(m.peer, 0, sizeof m.peer);
  // Buffer 0 holds a known pattern (the source of host-to-device copies), buffer 1 zeros.
  static std::vector<uint8_t> pattern;
  if (pattern.empty()) {
    pattern.resize(kShadow);
    for (uint64_t i = 0; i < kShadow; ++i) {
      pattern[i] = static_cast<uint8_t>(i * 7 + 0x5a) ^ static_cast<uint8_t>(i >> 8);
    }
  }
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    Region& b = m.buffers[i];
    auto* bytes = reinterpret_cast<uint8_t*>(b.base);
    if (i == 0) {
      std::memcpy(bytes, pattern.data(), b.size);
    } else {
      std::memset(bytes, 0, b.size);
    }
    std::memcpy(b.data->bytes.data(), bytes, b.size);
    std::memset(b.data->known.data(), 1, b.data->known.size());
  }
}

}  // namespace
}  // namespace fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace fuzz;
  configure_environment();
  MUST(aclInit(nullptr));
  MUST(aclrtSetDevice(0));
  Model& m = model();
  learn_windows(m);
  m.numa_nodes = count_numa_nodes();
  for (int i = 0; i < 2; ++i) {
    Region b;
    b.kind = Kind::kHostBuffer;
    b.base = reinterpret_cast<uint64_t>(g_host_buffers[i]);
    b.size = b.span = kShadow;
    b.data = std::make_shared<Mem>(kShadow);
    m.buffers.push_back(b);
  }
  g_baseline = snapshot();
  for (int i = 0; i < Snapshot::kLive; ++i) {
    FUZZ_CHECK(g_baseline.live[i] == 0, "live.%s is %lld before the first input", Snapshot::kLiveKeys[i],
               g_baseline.live[i]);
  }
  FUZZ_CHECK(g_baseline.used[0] == 0 && g_baseline.used[1] == 0,
             "device memory in use before the first input");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fuzz;
  Model& m = model();
  g_step_index = -1;
  g_step = "setup";
  m.reset_objects();
  reset_devices(m);
  g_before = snapshot();
  FUZZ_CHECK(g_before == g_baseline, "state left over from an earlier input: %s",
             g_before.describe().c_str());
  Input in(data, size);
  for (g_step_index = 0; g_step_index < kMaxSteps && !in.empty(); ++g_step_index) {
    const Op& op = kOps[in.u8() % kOpCount];
    g_step = op.name;
    op.run(in);
    g_before = snapshot();
    check_model(g_before);
  }
  release_all(m);
  return 0;
}
