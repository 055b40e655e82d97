// products.md's support matrix, call by call: for each family (one SoC each) and each call that
// products.md gates, a child process initialises the runtime for that SoC, makes the call with
// valid arguments and reports the code through a pipe. The parent expects exactly 207000 where
// products.md says ✗ (207021 for a link the family does not route over) and ACL_SUCCESS where it
// says ✓. The expectations are written here from products.md, not read from the runtime's table,
// so the two can disagree.
//
// A child per case: the environment is read at aclInit, and a fresh process leaves nothing of
// one family's runtime to the next.
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <ostream>
#include <string>
#include <tuple>

#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

// The child's side. gtest assertions are useless here (the child _exits), so a probe returns the
// gated call's code and writes anything else that went wrong into `problems`.
struct Probe {
  std::string problems;
  // A setup or clean-up call that must succeed.
  bool must(aclError rc, const char* what) {
    if (rc == kOk) return true;
    problems += std::string(what) + " returned " + std::to_string(rc) + "; ";
    return false;
  }
  void check(bool ok, const char* what) {
    if (!ok) problems += std::string(what) + " does not hold; ";
  }
};

// ACL_MEM_HUGE on device 0: the attribute every family supports.
aclrtDrvMemHandle any_handle(Probe& p, size_t size = k2M) {
  aclrtPhysicalMemProp prop = device_prop(0, ACL_MEM_HUGE);
  aclrtDrvMemHandle h = nullptr;
  p.must(aclrtMallocPhysical(&h, size, &prop, 0), "aclrtMallocPhysical(ACL_MEM_HUGE)");
  return h;
}
void* any_reservation(Probe& p, size_t size) {
  void* va = nullptr;
  p.must(aclrtReserveMemAddress(&va, size, 0, nullptr, 0), "aclrtReserveMemAddress");
  return va;
}

aclError no_uc_reserve(Probe& p) {
  void* const fixed = reinterpret_cast<void*>(78ull << 40);  // Mooncake's fixed address
  void* va = nullptr;
  const aclError rc = aclrtReserveMemAddressNoUCMemory(&va, kGiB, 0, fixed, 0);
  if (rc == kOk) {
    p.check(va == fixed, "the NoUC reservation is at expectPtr");
    p.must(aclrtReleaseMemAddress(va), "aclrtReleaseMemAddress");
  }
  return rc;
}

aclError selected_link(Probe& p) {
  aclrtDrvMemHandle h = any_handle(p, 4 * kMiB);
  void* src = any_reservation(p, 4 * kMiB);
  void* dst = any_reservation(p, 4 * kMiB);
  p.must(aclrtMapMem(src, 4 * kMiB, 0, h, 0), "aclrtMapMem");
  const std::string bytes = pattern(4096, 51);
  p.must(put(src, bytes), "aclrtMemcpy to the source");
  const aclError rc = aclrtMemMapSelectedLink(dst, 4 * kMiB, src, ACL_RT_MEM_LINK_IDX_1);
  if (rc == kOk) {
    std::string back(bytes.size(), '\0');
    p.must(aclrtMemcpy(&back[0], back.size(), dst, back.size(), ACL_MEMCPY_DEVICE_TO_HOST),
           "aclrtMemcpy from the destination");
    p.check(back == bytes, "the destination shows the source's bytes");
    p.must(aclrtUnmapMem(dst), "aclrtUnmapMem(dst)");
  }
  return rc;
}

template <aclrtMemLinkType kLink>
aclError set_link(Probe& p) {
  aclrtDrvMemHandle h = any_handle(p);
  const aclError rc = aclrtMemMapSetLink(h, kLink);
  p.must(aclrtFreePhysical(h), "aclrtFreePhysical");
  return rc;
}

aclrtMemManagedLocation device0() {
  aclrtMemManagedLocation l{};
  l.type = ACL_MEM_LOCATIONTYPE_DEVICE;
  l.id = 0;
  return l;
}

// Managed memory where the family has it; elsewhere a stand-in, since the product gate comes
// before the address is looked at (behavior.md §10 lists only NULL checks ahead of it).
void* managed_or_stand_in() {
  void* m = nullptr;
  if (aclrtMemAllocManaged(&m, 4 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL) == kOk) return m;
  static char stand_in[64];
  return stand_in;
}

aclError alloc_managed(Probe& p) {
  void* m = nullptr;
  const aclError rc = aclrtMemAllocManaged(&m, 4 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL);
  if (rc == kOk) {
    p.check(m != nullptr, "the managed pointer is not NULL");
    p.must(aclrtFree(m), "aclrtFree(managed)");
  } else {
    p.check(m == nullptr, "a refused allocation leaves the pointer NULL");
  }
  return rc;
}

aclError managed_advise(Probe&) {
  return aclrtMemManagedAdvise(managed_or_stand_in(), k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, device0());
}

aclError managed_get_attr(Probe& p) {
  int32_t v = -7;
  const aclError rc = aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed_or_stand_in(), k2M,
                                             &v, sizeof v);
  if (rc == kOk) p.check(v == 0, "fresh managed memory is not read-mostly");
  return rc;
}

aclError managed_get_attrs(Probe& p) {
  aclrtMemManagedRangeAttribute attrs[] = {ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY};
  int32_t v = -7;
  void* data[] = {&v};
  size_t sizes[] = {sizeof v};
  const aclError rc = aclrtMemManagedGetAttrs(attrs, 1, managed_or_stand_in(), k2M, data, sizes);
  if (rc == kOk) p.check(v == 0, "fresh managed memory is not read-mostly");
  return rc;
}

aclError managed_prefetch(Probe& p) {
  const aclError rc = aclrtMemManagedPrefetchAsync(managed_or_stand_in(), k2M, device0(), 0, nullptr);
  if (rc == kOk) p.must(aclrtSynchronizeStream(nullptr), "aclrtSynchronizeStream");
  return rc;
}

aclError managed_prefetch_batch(Probe& p) {
  const void* ptrs[] = {managed_or_stand_in()};
  size_t sizes[] = {k2M};
  aclrtMemManagedLocation locs[] = {device0()};
  size_t idxs[] = {0};
  const aclError rc = aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, 1, locs, idxs, 1, 0, nullptr);
  if (rc == kOk) p.must(aclrtSynchronizeStream(nullptr), "aclrtSynchronizeStream");
  return rc;
}

aclError p2p_map(Probe& p) {
  aclrtDrvMemHandle h = any_handle(p);
  void* va = any_reservation(p, k2M);
  p.must(aclrtMapMem(va, k2M, 0, h, 0), "aclrtMapMem");
  return aclrtMemP2PMap(va, k2M, 1, 0);
}

template <aclrtMemSharedHandleType kType>
aclError export_v2(Probe& p) {
  aclrtDrvMemHandle h = any_handle(p);
  aclrtMemFabricHandle out{};  // large enough for either form
  const aclError rc = aclrtMemExportToShareableHandleV2(h, 0, kType, &out);
  if (rc == kOk && kType == ACL_MEM_SHARE_HANDLE_TYPE_FABRIC) {
    uint32_t type = 0;
    std::memcpy(&type, out.data, sizeof type);
    p.check(type == 1, "a FABRIC handle starts with handle type 1 (behavior.md §7)");
  } else if (rc == kOk) {
    uint64_t token = 0;
    std::memcpy(&token, out.data, sizeof token);
    p.check(token != 0, "a DEFAULT token is not 0");
  }
  return rc;
}

// A FABRIC handle of a fresh device-0 handle where the family has them; elsewhere zeros, since
// the share type is checked before the handle is read.
aclrtMemFabricHandle fabric_or_zeros(Probe& p, uint64_t flags) {
  aclrtMemFabricHandle fh{};
  aclrtDrvMemHandle h = any_handle(p);
  if (aclrtMemExportToShareableHandleV2(h, flags, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &fh) != kOk) fh = {};
  return fh;
}

aclError set_pid_v2_fabric(Probe& p) {
  aclrtMemFabricHandle fh = fabric_or_zeros(p, 0);
  int32_t pid = 0;
  p.must(aclrtDeviceGetBareTgid(&pid), "aclrtDeviceGetBareTgid");
  return aclrtMemSetPidToShareableHandleV2(&fh, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &pid, 1);
}

aclError import_v2_fabric(Probe& p) {
  // Without pid validation; onto device 1, since the exporting process may not import onto the
  // exporting device (behavior.md, decisions).
  aclrtMemFabricHandle fh = fabric_or_zeros(p, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  p.must(aclrtSetDevice(1), "aclrtSetDevice(1)");
  aclrtDrvMemHandle imported = nullptr;
  const aclError rc = aclrtMemImportFromShareableHandleV2(&fh, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &imported);
  if (rc == kOk) {
    p.check(imported != nullptr, "the imported handle is not NULL");
    p.must(aclrtFreePhysical(imported), "aclrtFreePhysical(imported)");
  }
  return rc;
}

aclError reserve_expect_ptr(Probe& p) {
  void* found = any_reservation(p, kGiB);
  p.must(aclrtReleaseMemAddress(found), "aclrtReleaseMemAddress(found)");
  void* va = nullptr;
  const aclError rc = aclrtReserveMemAddress(&va, kGiB, 0, found, 0);
  if (rc == kOk) {
    p.check(va == found, "the reservation is at expectPtr");
    p.must(aclrtReleaseMemAddress(va), "aclrtReleaseMemAddress");
  }
  return rc;
}

template <aclrtMemAttr kAttr>
aclError malloc_physical(Probe& p) {
  aclrtPhysicalMemProp prop = device_prop(0, kAttr);
  aclrtDrvMemHandle h = nullptr;
  const aclError rc = aclrtMallocPhysical(&h, k2M, &prop, 0);
  if (rc == kOk) {
    p.must(aclrtFreePhysical(h), "aclrtFreePhysical");
  } else {
    p.check(h == nullptr, "a refused allocation leaves the handle NULL");
  }
  return rc;
}

aclError map_no_access(Probe& p) {
  aclrtDrvMemHandle h = any_handle(p);
  void* va = any_reservation(p, k2M);
  const aclError rc = aclrtMemMapNoAccess(va, k2M, 0, h, 0);
  if (rc == kOk) p.must(aclrtUnmapMem(va), "aclrtUnmapMem");
  return rc;
}

// ---------------------------------------------------------------------------------------------
// The matrix. Columns in products.md's order.

const char* const kSoc[] = {"Ascend950PR_9599", "Ascend910_9391", "Ascend910B1",
                            "Ascend310B1",      "Ascend310P3",    "Ascend910A"};
const char* const kFamily[] = {"F950", "A3", "A2", "EDGE", "INF", "TRAIN"};
constexpr int kFamilyCount = 6;

constexpr aclError Y = kOk;
constexpr aclError N = kNotSupported;      // the family lacks the call
constexpr aclError L = kLinkNotSupported;  // the family has the call but not this link

struct Row {
  const char* id;
  aclError (*probe)(Probe&);
  aclError expected[kFamilyCount];  // 950, A3, A2, EDGE, INF, TRAIN
  bool pcie;                     // run with ACLVMM_INTERCONNECT=pcie
};

const Row kRows[] = {
    //                                                                              950 A3 A2 EDGE INF TRAIN
    {"ReserveMemAddressNoUCMemory", no_uc_reserve,                                  {N, Y, N, N, N, N}, false},
    {"MemMapSelectedLink", selected_link,                                           {N, Y, N, N, N, N}, false},
    // SIO and HCCS on A3, UB one-port / multi-port on 950; any other pair → 207021.
    {"MemMapSetLink_SIO", set_link<ACL_RT_MEM_ACCESS_LINK_SIO>,                     {L, Y, N, N, N, N}, false},
    {"MemMapSetLink_HCCS", set_link<ACL_RT_MEM_ACCESS_LINK_HCCS>,                   {L, Y, N, N, N, N}, false},
    {"MemMapSetLink_UbOnePort", set_link<ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH>,       {Y, L, N, N, N, N}, false},
    {"MemMapSetLink_UbMultiPort", set_link<ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH>,   {Y, L, N, N, N, N}, false},
    {"MemAllocManaged", alloc_managed,                                              {N, N, Y, N, N, N}, false},
    {"MemManagedAdvise", managed_advise,                                            {N, N, Y, N, N, N}, false},
    {"MemManagedGetAttr", managed_get_attr,                                         {N, N, Y, N, N, N}, false},
    {"MemManagedGetAttrs", managed_get_attrs,                                       {N, N, Y, N, N, N}, false},
    {"MemManagedPrefetchAsync", managed_prefetch,                                   {N, N, Y, N, N, N}, false},
    {"MemManagedPrefetchBatchAsync", managed_prefetch_batch,                        {N, N, Y, N, N, N}, false},
    {"MemP2PMap", p2p_map,                                                          {Y, Y, Y, N, Y, Y}, false},
    {"MemExportToShareableHandleV2_FABRIC", export_v2<ACL_MEM_SHARE_HANDLE_TYPE_FABRIC>, {N, Y, N, N, N, N}, false},
    {"MemExportToShareableHandleV2_DEFAULT", export_v2<ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT>, {Y, Y, Y, Y, Y, Y}, false},
    {"MemSetPidToShareableHandleV2_FABRIC", set_pid_v2_fabric,                      {N, Y, N, N, N, N}, false},
    {"MemImportFromShareableHandleV2_FABRIC", import_v2_fabric,                     {N, Y, N, N, N, N}, false},
    // expectPtr must be NULL on 950.
    {"ReserveMemAddress_expectPtr", reserve_expect_ptr,                             {N, Y, Y, Y, Y, Y}, false},
    // Device memory attributes; ACL_HBM_MEM_NORMAL is allocated as ACL_HBM_MEM_HUGE.
    {"MallocPhysical_ACL_HBM_MEM_HUGE", malloc_physical<ACL_HBM_MEM_HUGE>,          {Y, Y, Y, N, N, N}, false},
    {"MallocPhysical_ACL_HBM_MEM_HUGE1G", malloc_physical<ACL_HBM_MEM_HUGE1G>,      {Y, Y, Y, N, N, N}, false},
    {"MallocPhysical_ACL_HBM_MEM_NORMAL", malloc_physical<ACL_HBM_MEM_NORMAL>,      {Y, Y, Y, N, N, N}, false},
    {"MallocPhysical_ACL_MEM_HUGE1G", malloc_physical<ACL_MEM_HUGE1G>,              {N, Y, Y, N, N, N}, false},
    {"MallocPhysical_ACL_MEM_P2P_HUGE1G", malloc_physical<ACL_MEM_P2P_HUGE1G>,      {N, Y, N, N, N, N}, false},
    {"MallocPhysical_ACL_MEM_NORMAL", malloc_physical<ACL_MEM_NORMAL>,              {Y, Y, Y, Y, Y, Y}, false},
    {"MallocPhysical_ACL_MEM_HUGE", malloc_physical<ACL_MEM_HUGE>,                  {Y, Y, Y, Y, Y, Y}, false},
    {"MallocPhysical_ACL_MEM_P2P_NORMAL", malloc_physical<ACL_MEM_P2P_NORMAL>,      {Y, Y, Y, Y, Y, Y}, false},
    {"MallocPhysical_ACL_MEM_P2P_HUGE", malloc_physical<ACL_MEM_P2P_HUGE>,          {Y, Y, Y, Y, Y, Y}, false},
    // HCCS-interconnected unless configured otherwise; over PCIe not on A2, A3 and 950.
    {"MemMapNoAccess_hccs", map_no_access,                                          {Y, Y, Y, Y, Y, Y}, false},
    {"MemMapNoAccess_pcie", map_no_access,                                          {N, N, N, Y, Y, Y}, true},
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.id << (r.pcie ? " (PCIe)" : ""); }

// What the child reports.
struct Report {
  aclError init = -1, set_device = -1, code = -1;
  std::string problems;
};

[[noreturn]] void run_child(int fd, const char* soc, const Row& row) {
  setenv("ACLVMM_SOC", soc, 1);
  if (row.pcie) {
    setenv("ACLVMM_INTERCONNECT", "pcie", 1);
  } else {
    unsetenv("ACLVMM_INTERCONNECT");
  }
  unsetenv("ACLVMM_QUIRKS");  // the vendor's gaps would refuse aclrtMemMapNoAccess everywhere
  Report r;
  Probe p;
  r.init = aclInit(nullptr);
  if (r.init == kOk) r.set_device = aclrtSetDevice(0);
  if (r.set_device == kOk) r.code = row.probe(p);
  const std::string msg = std::to_string(r.init) + " " + std::to_string(r.set_device) + " " +
                          std::to_string(r.code) + "\n" + p.problems;
  ssize_t off = 0;
  while (off < static_cast<ssize_t>(msg.size())) {
    const ssize_t n = write(fd, msg.data() + off, msg.size() - off);
    if (n <= 0) _exit(3);
    off += n;
  }
  _exit(0);
}

bool parse(const std::string& text, Report* r) {
  const size_t nl = text.find('\n');
  if (nl == std::string::npos) return false;
  int init = 0, dev = 0, code = 0;
  if (std::sscanf(text.c_str(), "%d %d %d", &init, &dev, &code) != 3) return false;
  r->init = init;
  r->set_device = dev;
  r->code = code;
  r->problems = text.substr(nl + 1);
  return true;
}

class ApiByFamily : public ::testing::TestWithParam<std::tuple<int, Row>> {};

TEST_P(ApiByFamily, Code) {
  const int fam = std::get<0>(GetParam());
  const Row& row = std::get<1>(GetParam());
  const std::string where = std::string(row.id) + " on " + kSoc[fam] + " (" + kFamily[fam] + ")" +
                            (row.pcie ? " over PCIe" : "");
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    run_child(fds[1], kSoc[fam], row);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  const ChildResult child = wait_child(pid);
  ASSERT_EQ(child.signal, 0) << where << ": the child died";
  ASSERT_EQ(child.exit_code, 0) << where;
  Report r;
  ASSERT_TRUE(parse(text, &r)) << where << ": the child reported \"" << text << "\"";
  ASSERT_EQ(r.init, kOk) << where << ": aclInit";
  ASSERT_EQ(r.set_device, kOk) << where << ": aclrtSetDevice(0)";
  EXPECT_EQ(r.code, row.expected[fam]) << where;
  EXPECT_EQ(r.problems, "") << where;
}

INSTANTIATE_TEST_SUITE_P(ProductsMatrix, ApiByFamily,
                         ::testing::Combine(::testing::Range(0, kFamilyCount),
                                            ::testing::ValuesIn(kRows)),
                         [](const ::testing::TestParamInfo<std::tuple<int, Row>>& info) {
                           return std::string(kFamily[std::get<0>(info.param)]) + "_" +
                                  std::get<1>(info.param).id;
                         });

}  // namespace
