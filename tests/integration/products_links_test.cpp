// Links and the interconnect (behavior.md §11, products.md): aclrtMemMapSetLink on local and
// imported handles, aclrtMemMapSelectedLink block by block, the "links" statistics, and
// aclrtMemMapNoAccess over PCIe (ACLVMM_INTERCONNECT). Each test starts its own runtime for the
// SoC it needs, because the environment is read at aclInit.
#include <ostream>

#include "api/test_env.h"
#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;

constexpr const char* kA3Soc = "Ascend910_9391";
constexpr const char* k950 = "Ascend950PR_9599";

// The "links" counters of the statistics: mappings made over each route.
struct Links {
  long long sio = 0, hccs = 0, ub_one = 0, ub_multi = 0;
  bool operator==(const Links& o) const {
    return sio == o.sio && hccs == o.hccs && ub_one == o.ub_one && ub_multi == o.ub_multi;
  }
  Links plus(long long s, long long h, long long u1, long long um) const {
    return {sio + s, hccs + h, ub_one + u1, ub_multi + um};
  }
};
void PrintTo(const Links& l, std::ostream* os) {
  *os << "{sio " << l.sio << ", hccs " << l.hccs << ", ub_one_port " << l.ub_one
      << ", ub_multi_port " << l.ub_multi << "}";
}
Links links() {
  const Json j = stats();
  return {stat_int(j, "links.sio"), stat_int(j, "links.hccs"), stat_int(j, "links.ub_one_port"),
          stat_int(j, "links.ub_multi_port")};
}

// Values outside the enum (4) go straight into the argument: a copy of an enum variable holding
// them would be a load UBSan rejects, and C callers pass any int.
aclError set_link(aclrtDrvMemHandle h, int link) {
  return aclrtMemMapSetLink(h, static_cast<aclrtMemLinkType>(link));
}

// A runtime for one SoC (and interconnect), device 0 current; finalised after the test.
class SocRuntime : public ::testing::Test {
 protected:
  void start(const char* soc, const char* interconnect = nullptr) {
    ASSERT_EQ(soc_.set(soc), 0);
    ASSERT_EQ(link_.set(interconnect), 0);
    ASSERT_EQ(aclInit(nullptr), kOk);
    started_ = true;
    ASSERT_EQ(aclrtSetDevice(0), kOk);
  }
  void stop() {
    if (!started_) return;
    aclrtResetDeviceForce(1);
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
    started_ = false;
  }
  void TearDown() override {
    stop();
    soc_.restore();
    link_.restore();
  }

 private:
  ScopedEnv soc_{"ACLVMM_SOC"}, link_{"ACLVMM_INTERCONNECT"};
  bool started_ = false;
};

using LinksTest = SocRuntime;

// §11 + decisions: a route set on a local handle applies to the mappings made afterwards, may be
// changed while the handle is mapped, and a link the product lacks (207021) changes nothing.
TEST_F(LinksTest, SetLinkRoutesLaterMappingsOfALocalHandle) {
  start(kA3Soc);
  const Links before = links();
  ASSERT_NE(before.sio, -1) << "the statistics have no \"links\" object";
  aclrtDrvMemHandle h = make_handle(k2M);
  aclrtDrvMemHandle plain = make_handle(k2M);
  void* va = reserve(8 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, plain, 0), kOk);  // no route: not counted
  EXPECT_EQ(links(), before);

  ASSERT_EQ(set_link(h, ACL_RT_MEM_ACCESS_LINK_HCCS), kOk);
  ASSERT_EQ(aclrtMapMem(at(va, k2M), k2M, 0, h, 0), kOk);
  EXPECT_EQ(links(), before.plus(0, 1, 0, 0));
  ASSERT_EQ(set_link(h, ACL_RT_MEM_ACCESS_LINK_SIO), kOk);  // while mapped
  ASSERT_EQ(aclrtMemMapNoAccess(at(va, 4 * kMiB), k2M, 0, h, 0), kOk);
  EXPECT_EQ(links(), before.plus(1, 1, 0, 0));
  EXPECT_EQ(set_link(h, ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH), kLinkNotSupported);
  EXPECT_EQ(set_link(h, ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH), kLinkNotSupported);
  EXPECT_EQ(set_link(h, 4), kRtParam);
  ASSERT_EQ(aclrtMapMem(at(va, 6 * kMiB), k2M, 0, h, 0), kOk);
  EXPECT_EQ(links(), before.plus(2, 1, 0, 0)) << "a refused link must leave the SIO route";

  // One physical allocation behind every mapping, whatever its route.
  const std::string bytes = pattern(k2M, 11);
  h2d(at(va, k2M), bytes);
  EXPECT_EQ(get(at(va, 6 * kMiB), k2M), bytes);
  // Counts are of mappings made: unmapping keeps them.
  for (size_t off : {0 * kMiB, 2 * kMiB, 4 * kMiB, 6 * kMiB}) EXPECT_EQ(aclrtUnmapMem(at(va, off)), kOk);
  EXPECT_EQ(links(), before.plus(2, 1, 0, 0));
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFreePhysical(plain), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(live_count("physical_handles"), 0);
}

// Decisions: SetLink accepts imported handles, and the exporter's own handle keeps its route.
// The import is in the exporting process onto another device ("allowed").
TEST_F(LinksTest, SetLinkAppliesToAnImportedHandle) {
  start(kA3Soc);
  aclrtDrvMemHandle h = make_handle(k2M);
  void* va0 = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(va0, k2M, 0, h, 0), kOk);
  const std::string bytes = pattern(k2M, 12);
  h2d(va0, bytes);
  uint64_t token = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE,
                                            ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
            kOk);

  ASSERT_EQ(aclrtSetDevice(1), kOk);
  aclrtDrvMemHandle imported = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(token, 1, &imported), kOk);
  const Links before = links();
  EXPECT_EQ(set_link(imported, ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH), kLinkNotSupported);
  ASSERT_EQ(set_link(imported, ACL_RT_MEM_ACCESS_LINK_SIO), kOk);
  void* va1 = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va1, k2M, 0, imported, 0), kOk);
  EXPECT_EQ(links(), before.plus(1, 0, 0, 0));
  EXPECT_EQ(get(va1, k2M), bytes);  // device 1 reads what device 0 wrote
  const std::string back = pattern(8192, 13);
  h2d(at(va1, 4096), back);

  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(get(at(va0, 4096), back.size()), back);
  ASSERT_EQ(aclrtMapMem(at(va0, k2M), k2M, 0, h, 0), kOk);
  EXPECT_EQ(links(), before.plus(1, 0, 0, 0)) << "the exporter's handle has no route";

  EXPECT_EQ(aclrtUnmapMem(va1), kOk);
  EXPECT_EQ(aclrtFreePhysical(imported), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va1), kOk);
  EXPECT_EQ(aclrtUnmapMem(va0), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(va0, k2M)), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va0), kOk);
}

// products.md: 950 offers the UB paths only, and no aclrtMemMapSelectedLink.
TEST_F(LinksTest, UbLinksOn950) {
  start(k950);
  const Links before = links();
  aclrtDrvMemHandle h = make_handle(k2M);
  void* va = reserve(8 * kMiB);
  EXPECT_EQ(set_link(h, ACL_RT_MEM_ACCESS_LINK_SIO), kLinkNotSupported);
  EXPECT_EQ(set_link(h, ACL_RT_MEM_ACCESS_LINK_HCCS), kLinkNotSupported);
  ASSERT_EQ(set_link(h, ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH), kOk);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  ASSERT_EQ(set_link(h, ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH), kOk);
  ASSERT_EQ(aclrtMapMem(at(va, k2M), k2M, 0, h, 0), kOk);
  ASSERT_EQ(aclrtMapMem(at(va, 4 * kMiB), k2M, 0, h, 0), kOk);
  EXPECT_EQ(links(), before.plus(0, 0, 1, 2));

  const LiveCounts live = live_counts();
  EXPECT_EQ(aclrtMemMapSelectedLink(at(va, 6 * kMiB), k2M, va, ACL_RT_MEM_LINK_IDX_0), kNotSupported);
  EXPECT_EQ(live_counts(), live);
  EXPECT_EQ(links(), before.plus(0, 0, 1, 2));
}

// Three source blocks of two sizes behind one 8 MiB source range, on A3.
class SelectedLinkTest : public SocRuntime {
 protected:
  void SetUp() override {
    start(kA3Soc);
    if (HasFatalFailure()) return;
    src_ = reserve(10 * kMiB);  // the last 2 MiB stay unmapped
    for (size_t i = 0; i < 3; ++i) {
      blocks_[i].h = make_handle(kSizes[i]);
      ASSERT_EQ(aclrtMapMem(at(src_, kOffsets[i]), kSizes[i], 0, blocks_[i].h, 0), kOk);
    }
    bytes_ = pattern(8 * kMiB, 14);
    h2d(src_, bytes_);
  }
  void TearDown() override {
    for (size_t i = 0; i < 3; ++i) {
      aclrtUnmapMem(at(src_, kOffsets[i]));
      aclrtFreePhysical(blocks_[i].h);
    }
    aclrtReleaseMemAddress(src_);
    SocRuntime::TearDown();
  }

  static constexpr size_t kOffsets[3] = {0, 2 * kMiB, 6 * kMiB};
  static constexpr size_t kSizes[3] = {2 * kMiB, 4 * kMiB, 2 * kMiB};
  struct Block {
    aclrtDrvMemHandle h = nullptr;
  } blocks_[3];
  void* src_ = nullptr;
  std::string bytes_;
};

// §11: each block of the source is mapped at the same offset of the destination, as its own
// mapping of the same handle over the selected link; the handles' own routes come back.
TEST_F(SelectedLinkTest, MapsEveryBlockAtItsOffset) {
  ASSERT_EQ(set_link(blocks_[0].h, ACL_RT_MEM_ACCESS_LINK_SIO), kOk);
  void* dst = reserve(8 * kMiB);
  const Links before = links();
  ASSERT_EQ(live_count("mappings"), 3);
  ASSERT_EQ(aclrtMemMapSelectedLink(dst, 8 * kMiB, src_, ACL_RT_MEM_LINK_IDX_1), kOk);
  EXPECT_EQ(live_count("mappings"), 6);
  EXPECT_EQ(live_count("physical_handles"), 3) << "the temporary retains must be balanced";
  EXPECT_EQ(links(), before.plus(0, 3, 0, 0)) << "IDX_1 is HCCS";
  EXPECT_EQ(get(dst, 8 * kMiB), bytes_);

  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    void* base = nullptr;
    size_t size = 0;
    ASSERT_EQ(aclrtMemGetAddressRange(at(dst, kOffsets[i] + 4096), &base, &size), kOk);
    EXPECT_EQ(base, at(dst, kOffsets[i]));
    EXPECT_EQ(size, kSizes[i]);
    aclrtDrvMemHandle same = nullptr;
    ASSERT_EQ(aclrtMemRetainAllocationHandle(at(dst, kOffsets[i]), &same), kOk);
    EXPECT_EQ(same, blocks_[i].h);
    EXPECT_EQ(aclrtFreePhysical(same), kOk);
  }
  // Bytes written through the destination are the source's.
  const std::string fresh = pattern(3 * kMiB, 15);
  h2d(at(dst, 1 * kMiB), fresh);  // spans the first two blocks
  EXPECT_EQ(get(at(src_, 1 * kMiB), fresh.size()), fresh);

  // The source handle's own route was restored: a later mapping of it goes over SIO.
  void* again = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(again, k2M, 0, blocks_[0].h, 0), kOk);
  EXPECT_EQ(links(), before.plus(1, 3, 0, 0));
  EXPECT_EQ(aclrtUnmapMem(again), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(again), kOk);

  // Each destination block is unmapped on its own; an interior address is no mapping start.
  EXPECT_EQ(aclrtUnmapMem(at(dst, 3 * kMiB)), kDrv);
  ASSERT_EQ(aclrtUnmapMem(at(dst, 2 * kMiB)), kOk);
  aclError rc = kOk;
  (void)get(at(dst, 2 * kMiB), 4096, &rc);
  EXPECT_EQ(rc, kDrv);
  EXPECT_EQ(get(dst, k2M), get(src_, k2M));
  EXPECT_EQ(get(at(dst, 6 * kMiB), k2M), bytes_.substr(6 * kMiB));
  EXPECT_EQ(live_count("mappings"), 5);
  EXPECT_EQ(aclrtUnmapMem(dst), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(dst, 6 * kMiB)), kOk);
  EXPECT_EQ(live_count("mappings"), 3);
  EXPECT_EQ(get(src_, 8 * kMiB).substr(6 * kMiB), bytes_.substr(6 * kMiB));  // source intact
  EXPECT_EQ(aclrtReleaseMemAddress(dst), kOk);
}

// A size that ends inside a block maps that block's first pages only; IDX_0 is SIO.
TEST_F(SelectedLinkTest, SizeClipsTheLastBlock) {
  void* dst = reserve(4 * kMiB);
  const Links before = links();
  ASSERT_EQ(aclrtMemMapSelectedLink(dst, 4 * kMiB, src_, ACL_RT_MEM_LINK_IDX_0), kOk);
  EXPECT_EQ(links(), before.plus(2, 0, 0, 0));
  EXPECT_EQ(live_count("mappings"), 5);
  void* base = nullptr;
  size_t size = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(at(dst, 3 * kMiB), &base, &size), kOk);
  EXPECT_EQ(base, at(dst, k2M));
  EXPECT_EQ(size, k2M) << "the 4 MiB block is mapped only as far as size reaches";
  EXPECT_EQ(get(dst, 4 * kMiB), bytes_.substr(0, 4 * kMiB));
  EXPECT_EQ(aclrtUnmapMem(dst), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(dst, k2M)), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(dst), kOk);
}

// A call that fails leaves nothing: no mapping, no handle reference, no link count.
TEST_F(SelectedLinkTest, FailuresLeaveNothingBehind) {
  // Destinations where the third, or the second, block meets a mapping already there.
  void* late = reserve(8 * kMiB);
  void* busy = reserve(8 * kMiB);
  aclrtDrvMemHandle squatter = make_handle(k2M);
  ASSERT_EQ(aclrtMapMem(at(late, 6 * kMiB), k2M, 0, squatter, 0), kOk);
  ASSERT_EQ(aclrtMapMem(at(busy, 4 * kMiB), k2M, 0, squatter, 0), kOk);
  void* dst = reserve(10 * kMiB);
  int local = 0;
  struct Case {
    const char* name;
    void* dst;
    size_t size;
    void* src;
    uint32_t idx;
    aclError expected;
  } cases[] = {
      {"third block overlaps a mapping", late, 8 * kMiB, src_, 1, kDrv},
      {"second block overlaps a mapping", busy, 8 * kMiB, src_, 1, kDrv},
      {"size runs into the unmapped end of the source", dst, 10 * kMiB, src_, 1, kRtParam},
      {"source inside a block", dst, k2M, at(src_, 4 * kMiB), 1, kRtParam},
      {"source reserved, not mapped", dst, k2M, at(src_, 8 * kMiB), 1, kRtParam},
      {"source not allocated", dst, k2M, &local, 1, kRtParam},
      {"last block not a 2 MiB multiple", dst, 3 * kMiB, src_, 1, kDrv},
      {"size 0", dst, 0, src_, 1, kParam},
      {"linkIdx 2", dst, 8 * kMiB, src_, 2, kParam},
      {"NULL destination", nullptr, 8 * kMiB, src_, 1, kParam},
      {"NULL source", dst, 8 * kMiB, nullptr, 1, kParam},
  };
  const LiveCounts live = live_counts();
  const Links before = links();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclrtMemMapSelectedLink(c.dst, c.size, c.src, c.idx), c.expected);
    EXPECT_EQ(live_counts(), live) << describe(live_counts());
    EXPECT_EQ(links(), before);
  }
  // The destinations are still free for a successful call.
  ASSERT_EQ(aclrtMemMapSelectedLink(dst, 8 * kMiB, src_, ACL_RT_MEM_LINK_IDX_1), kOk);
  EXPECT_EQ(get(dst, 8 * kMiB), bytes_);
  for (size_t off : kOffsets) EXPECT_EQ(aclrtUnmapMem(at(dst, off)), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(late, 6 * kMiB)), kOk);
  EXPECT_EQ(aclrtUnmapMem(at(busy, 4 * kMiB)), kOk);
  EXPECT_EQ(aclrtFreePhysical(squatter), kOk);
  for (void* va : {late, busy, dst}) EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// products.md: aclrtMemMapNoAccess is not supported on PCIe-interconnected A2, A3 and 950
// devices; HCCS (the default) supports it everywhere.
struct NoAccessCase {
  const char* soc;
  const char* family;
  bool refused_over_pcie;
};
const NoAccessCase kNoAccessCases[] = {
    {k950, "950", true},           {kA3Soc, "A3", true},
    {"Ascend910B1", "A2", true},   {"Ascend310B1", "EDGE", false},
    {"Ascend310P3", "INF", false}, {"Ascend910A", "TRAIN", false},
};
void PrintTo(const NoAccessCase& c, std::ostream* os) { *os << c.soc; }

class Interconnect : public SocRuntime, public ::testing::WithParamInterface<NoAccessCase> {};

TEST_P(Interconnect, NoAccessOverPcie) {
  for (const char* link : {"pcie", "hccs", static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(link ? link : "(unset)");
    start(GetParam().soc, link);
    if (HasFatalFailure()) return;
    const Json j = stats();
    ASSERT_NE(j.get("interconnect"), nullptr);
    EXPECT_EQ(j.get("interconnect")->s, link ? link : "hccs");
    const bool refused = GetParam().refused_over_pcie && link && std::string(link) == "pcie";
    aclrtDrvMemHandle h = make_handle(k2M, 0, ACL_MEM_HUGE);
    void* va = reserve(4 * kMiB);
    EXPECT_EQ(aclrtMemMapNoAccess(va, 0, 0, h, 0), kParam);  // the ACL layer answers first
    const LiveCounts live = live_counts();
    ASSERT_EQ(aclrtMemMapNoAccess(va, k2M, 0, h, 0), refused ? kNotSupported : kOk);
    if (refused) {
      EXPECT_EQ(live_counts(), live);
    } else {
      EXPECT_EQ(access_of(va, dev(0)), kNone);
      EXPECT_EQ(aclrtUnmapMem(va), kOk);
    }
    ASSERT_EQ(aclrtMapMem(at(va, k2M), k2M, 0, h, 0), kOk);  // ordinary mappings always work
    EXPECT_EQ(aclrtUnmapMem(at(va, k2M)), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(live_count("physical_handles"), 0) << "a refused map must not keep a reference";
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
    stop();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Interconnect, ::testing::ValuesIn(kNoAccessCases),
                         [](const ::testing::TestParamInfo<NoAccessCase>& info) {
                           return std::string(info.param.family) == "950" ? std::string("F950")
                                                                          : std::string(info.param.family);
                         });

// configuration.md: a malformed value fails aclInit with a message naming the variable and the
// accepted values; nothing starts.
TEST(InterconnectConfig, MalformedValueFailsAclInit) {
  ScopedEnv env("ACLVMM_INTERCONNECT", "PCIe");
  EXPECT_EQ(aclInit(nullptr), kParam);
  const std::string msg = recent_msg();
  EXPECT_NE(msg.find("ACLVMM_INTERCONNECT=\"PCIe\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("hccs, pcie"), std::string::npos) << msg;
  EXPECT_EQ(aclrtGetSocName(), nullptr);
  env.restore();
  ASSERT_EQ(aclInit(nullptr), kOk);
  EXPECT_NE(aclrtGetSocName(), nullptr);
  EXPECT_EQ(aclFinalize(), kOk);
}

}  // namespace
