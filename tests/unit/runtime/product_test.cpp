// Unit tests of the product table (products.md): SoC name -> family and memory size, feature
// support per family, link types.
#include "runtime/product.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "unit/testing/product_families.h"

namespace aclvmm {
namespace {

struct SocCase {
  const char* soc;
  Family family;
  const char* family_name;
  uint64_t memory;
};

class FindProduct : public ::testing::TestWithParam<SocCase> {};

TEST_P(FindProduct, FamilyAndMemory) {
  const SocCase& c = GetParam();
  auto p = find_product(c.soc);
  ASSERT_TRUE(p.ok()) << c.soc << ": " << p.status().message();
  EXPECT_EQ(p->soc, c.soc);
  EXPECT_EQ(p->family, c.family) << c.soc;
  EXPECT_STREQ(p->family_name(), c.family_name) << c.soc;
  EXPECT_EQ(p->memory_bytes, c.memory) << c.soc;
}

INSTANTIATE_TEST_SUITE_P(
    Table, FindProduct,
    ::testing::Values(
        // A2
        SocCase{"Ascend910B1", Family::kA2, "A2", 64 * kGiB},
        SocCase{"Ascend910B2", Family::kA2, "A2", 64 * kGiB},
        SocCase{"Ascend910B2C", Family::kA2, "A2", 64 * kGiB},
        SocCase{"Ascend910B3", Family::kA2, "A2", 64 * kGiB},
        SocCase{"Ascend910B4", Family::kA2, "A2", 32 * kGiB},
        SocCase{"Ascend910B4-1", Family::kA2, "A2", 32 * kGiB},
        // A3
        SocCase{"Ascend910_9381", Family::kA3, "A3", 64 * kGiB},
        SocCase{"Ascend910_9382", Family::kA3, "A3", 64 * kGiB},
        SocCase{"Ascend910_9391", Family::kA3, "A3", 64 * kGiB},
        SocCase{"Ascend910_9392", Family::kA3, "A3", 64 * kGiB},
        SocCase{"Ascend910_9362", Family::kA3, "A3", 64 * kGiB},
        SocCase{"Ascend910_9372", Family::kA3, "A3", 64 * kGiB},
        SocCase{"Ascend910_9363", Family::kA3, "A3", 32 * kGiB},
        // 950
        SocCase{"Ascend950PR_9599", Family::k950, "950", 128 * kGiB},
        SocCase{"Ascend950DT_9591", Family::k950, "950", 144 * kGiB},
        SocCase{"Ascend950PR_9589", Family::k950, "950", 128 * kGiB},
        SocCase{"Ascend950DT_950x", Family::k950, "950", 128 * kGiB},
        // INF
        SocCase{"Ascend310P1", Family::kInf, "INF", 24000000000ull},
        SocCase{"Ascend310P3", Family::kInf, "INF", 24000000000ull},
        SocCase{"Ascend310P5", Family::kInf, "INF", 24000000000ull},
        SocCase{"Ascend310P7", Family::kInf, "INF", 24000000000ull},
        // EDGE
        SocCase{"Ascend310B1", Family::kEdge, "EDGE", 32 * kGiB},
        SocCase{"Ascend310B2", Family::kEdge, "EDGE", 32 * kGiB},
        SocCase{"Ascend310B3", Family::kEdge, "EDGE", 32 * kGiB},
        SocCase{"Ascend310B4", Family::kEdge, "EDGE", 32 * kGiB},
        // TRAIN: plain "Ascend910B" is the previous generation, not A2
        SocCase{"Ascend910A", Family::kTrain, "TRAIN", 32 * kGiB},
        SocCase{"Ascend910B", Family::kTrain, "TRAIN", 32 * kGiB},
        SocCase{"Ascend910ProA", Family::kTrain, "TRAIN", 32 * kGiB},
        SocCase{"Ascend910ProB", Family::kTrain, "TRAIN", 32 * kGiB},
        SocCase{"Ascend910PremiumA", Family::kTrain, "TRAIN", 32 * kGiB}),
    [](const ::testing::TestParamInfo<SocCase>& info) {
      std::string n = info.param.soc;
      for (char& ch : n) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

class FindProductUnknown : public ::testing::TestWithParam<const char*> {};

// products.md's SoC names, in the order of its table, then the two 950 name patterns.
const char* const kAcceptedNames[] = {
    "Ascend910B1",      "Ascend910B2",       "Ascend910B2C",   "Ascend910B3",    "Ascend910B4",
    "Ascend910B4-1",    "Ascend910_9381",    "Ascend910_9382", "Ascend910_9391", "Ascend910_9392",
    "Ascend910_9362",   "Ascend910_9372",    "Ascend910_9363", "Ascend950PR_9599", "Ascend950DT_9591",
    "Ascend310P1",      "Ascend310P3",       "Ascend310P5",    "Ascend310P7",    "Ascend310B1",
    "Ascend310B2",      "Ascend310B3",       "Ascend310B4",    "Ascend910A",     "Ascend910B",
    "Ascend910ProA",    "Ascend910ProB",     "Ascend910PremiumA", "Ascend950PR_*", "Ascend950DT_*"};

// The names after "accepted: ", split at ", ".
std::vector<std::string> accepted_list(const std::string& message) {
  const std::string marker = "accepted: ";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return {};
  std::vector<std::string> names;
  std::string rest = message.substr(at + marker.size());
  for (size_t pos = 0;;) {
    const size_t comma = rest.find(", ", pos);
    names.push_back(rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 2;
  }
  return names;
}

TEST_P(FindProductUnknown, InvalidParamListingEveryName) {
  auto p = find_product(GetParam());
  ASSERT_FALSE(p.ok()) << GetParam();
  EXPECT_EQ(p.status().code(), 100000) << GetParam();
  const std::string msg = p.status().message();  // status() is a copy
  EXPECT_NE(msg.find(std::string("ACLVMM_SOC=\"") + GetParam() + "\""), std::string::npos) << msg;
  std::vector<std::string> listed = accepted_list(msg);
  std::vector<std::string> expected(std::begin(kAcceptedNames), std::end(kAcceptedNames));
  std::sort(listed.begin(), listed.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listed, expected) << msg;
}

// Every exact name the error lists is accepted, and so is a new name matching a listed pattern.
TEST(FindProductNames, EveryListedNameIsAccepted) {
  auto err = find_product("nope");
  ASSERT_FALSE(err.ok());
  const std::vector<std::string> listed = accepted_list(err.status().message());
  ASSERT_EQ(listed.size(), std::size(kAcceptedNames));
  for (std::string name : listed) {
    if (!name.empty() && name.back() == '*') name.back() = '1';
    auto p = find_product(name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, FindProductUnknown,
                         ::testing::Values("", "Ascend", "Ascend910", "Ascend910B5",
                                           "ascend910b1", "Ascend910B1 ", " Ascend910B1",
                                           "Ascend310P2", "Ascend310B5", "Ascend910_9999",
                                           "Ascend950", "Ascend960PR_9599", "Ascend910C",
                                           "Ascend350_354f", "GeForce"));

// ---------------------------------------------------------------------------------------------
// supports(): the API support table of products.md, one row per feature, one column per family
// in the order 950, A3, A2, EDGE, INF, TRAIN.

struct FeatureRow {
  const char* name;
  Feature feature;
  bool f950, a3, a2, edge, inf, train;
};

using testing::kFamilySoc;

class ProductSupports : public ::testing::TestWithParam<FeatureRow> {};

TEST_P(ProductSupports, Table) {
  const FeatureRow& r = GetParam();
  const bool expected[] = {r.f950, r.a3, r.a2, r.edge, r.inf, r.train};
  for (int i = 0; i < 6; ++i) {
    auto p = find_product(kFamilySoc[i]);
    ASSERT_TRUE(p.ok()) << kFamilySoc[i];
    EXPECT_EQ(p->supports(r.feature), expected[i])
        << r.name << " on " << kFamilySoc[i] << " (" << p->family_name() << ")";
  }
}

const FeatureRow kExpectedSupport[] = {
        //                                                       950    A3     A2     EDGE   INF    TRAIN
        FeatureRow{"FabricShare", Feature::kFabricShare,         false, true,  false, false, false, false},
        FeatureRow{"NoUcReserve", Feature::kNoUcReserve,         false, true,  false, false, false, false},
        FeatureRow{"SelectedLink", Feature::kSelectedLink,       false, true,  false, false, false, false},
        FeatureRow{"SetLink", Feature::kSetLink,                 true,  true,  false, false, false, false},
        FeatureRow{"Managed", Feature::kManaged,                 false, false, true,  false, false, false},
        FeatureRow{"P2PMap", Feature::kP2PMap,                   true,  true,  true,  false, true,  true},
        FeatureRow{"ExpectPtr", Feature::kExpectPtr,             false, true,  true,  true,  true,  true},
        FeatureRow{"HbmHuge", Feature::kHbmHuge,                 true,  true,  true,  false, false, false},
        FeatureRow{"HbmHuge1G", Feature::kHbmHuge1G,             true,  true,  true,  false, false, false},
        FeatureRow{"MemHuge1G", Feature::kMemHuge1G,             false, true,  true,  false, false, false},
        FeatureRow{"MemP2PHuge1G", Feature::kMemP2PHuge1G,       false, true,  false, false, false, false},
        // 1 GiB pages exist exactly where ACL_HBM_MEM_HUGE1G is offered.
        FeatureRow{"Huge1GPages", Feature::kHuge1GPages,         true,  true,  true,  false, false, false},
        // "aclrtMemMapNoAccess is not supported on PCIe-interconnected A2, A3 and 950 devices".
        FeatureRow{"NoAccessOverPcie", Feature::kNoAccessOverPcie, false, false, false, true, true,  true},
        // runtime-extra.md §10.
        FeatureRow{"StreamAbort", Feature::kStreamAbort,         true,  true,  true,  false, false, false},
        FeatureRow{"HugeStream", Feature::kHugeStream,           true,  true,  true,  true,  false, true},
        FeatureRow{"StreamMemoryOps", Feature::kStreamMemoryOps, true,  true,  true,  false, false, false},
        FeatureRow{"BatchCopy", Feature::kBatchCopy,             true,  true,  true,  false, false, false},
        FeatureRow{"HostRegister", Feature::kHostRegister,       true,  true,  true,  false, false, false},
        FeatureRow{"IpcMemory", Feature::kIpcMemory,             true,  true,  true,  false, true,  true},
        FeatureRow{"IpcMemoryA3", Feature::kIpcMemoryA3,         false, true,  false, false, false, false},
};

INSTANTIATE_TEST_SUITE_P(Table, ProductSupports, ::testing::ValuesIn(kExpectedSupport),
                         [](const ::testing::TestParamInfo<FeatureRow>& info) {
                           return std::string(info.param.name);
                         });

// Every Feature has exactly one row above: a new Feature without expectations fails here.
TEST(ProductSupports, ExpectationsCoverEveryFeature) {
  std::vector<int> rows(kFeatureCount, 0);
  for (const FeatureRow& r : kExpectedSupport) {
    const int i = static_cast<int>(r.feature);
    ASSERT_TRUE(i >= 0 && i < kFeatureCount) << r.name;
    ++rows[i];
  }
  for (int i = 0; i < kFeatureCount; ++i) EXPECT_EQ(rows[i], 1) << "Feature " << i;
}

// A value outside the enum (a caller's bug) is never "supported".
TEST(ProductSupports, UnknownFeatureIsUnsupported) {
  for (const char* soc : kFamilySoc) {
    auto p = find_product(soc);
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(p->supports(static_cast<Feature>(kFeatureCount))) << soc;
    EXPECT_FALSE(p->supports(static_cast<Feature>(-1))) << soc;
  }
}

// Every SoC of a family answers like its family.
TEST(ProductSupports, SameAnswerForEveryNameOfAFamily) {
  const char* const a3[] = {"Ascend910_9381", "Ascend910_9363", "Ascend910_9372"};
  for (const char* soc : a3) {
    auto p = find_product(soc);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->supports(Feature::kNoUcReserve)) << soc;
    EXPECT_TRUE(p->supports(Feature::kFabricShare)) << soc;
    EXPECT_FALSE(p->supports(Feature::kManaged)) << soc;
  }
  const char* const a2[] = {"Ascend910B2C", "Ascend910B4", "Ascend910B4-1"};
  for (const char* soc : a2) {
    auto p = find_product(soc);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->supports(Feature::kManaged)) << soc;
    EXPECT_FALSE(p->supports(Feature::kNoUcReserve)) << soc;
  }
  // The old Ascend910B is TRAIN: no managed memory, unlike the A2 parts.
  auto old = find_product("Ascend910B");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->supports(Feature::kManaged));
  EXPECT_FALSE(old->supports(Feature::kHbmHuge));
  auto dt = find_product("Ascend950DT_9591");
  ASSERT_TRUE(dt.ok());
  EXPECT_FALSE(dt->supports(Feature::kExpectPtr));
  EXPECT_TRUE(dt->supports(Feature::kSetLink));
}

// ---------------------------------------------------------------------------------------------
// supports_link(): SIO(0) and HCCS(1) on A3, UB one-port(2) / multi-port(3) on 950, else none.

struct LinkRow {
  const char* soc;
  bool sio, hccs, ub_one, ub_multi;
};

class ProductLinks : public ::testing::TestWithParam<LinkRow> {};

TEST_P(ProductLinks, Table) {
  const LinkRow& r = GetParam();
  auto p = find_product(r.soc);
  ASSERT_TRUE(p.ok()) << r.soc;
  EXPECT_EQ(p->supports_link(0), r.sio) << r.soc;
  EXPECT_EQ(p->supports_link(1), r.hccs) << r.soc;
  EXPECT_EQ(p->supports_link(2), r.ub_one) << r.soc;
  EXPECT_EQ(p->supports_link(3), r.ub_multi) << r.soc;
  EXPECT_FALSE(p->supports_link(4)) << r.soc;
  EXPECT_FALSE(p->supports_link(0xffffffffu)) << r.soc;
}

INSTANTIATE_TEST_SUITE_P(Table, ProductLinks,
                         ::testing::Values(LinkRow{"Ascend910_9391", true, true, false, false},
                                           LinkRow{"Ascend910_9363", true, true, false, false},
                                           LinkRow{"Ascend950PR_9599", false, false, true, true},
                                           LinkRow{"Ascend950DT_9591", false, false, true, true},
                                           LinkRow{"Ascend910B1", false, false, false, false},
                                           LinkRow{"Ascend310B2", false, false, false, false},
                                           LinkRow{"Ascend310P3", false, false, false, false},
                                           LinkRow{"Ascend910ProA", false, false, false, false}));

}  // namespace
}  // namespace aclvmm
