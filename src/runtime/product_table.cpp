#include "runtime/product_table.h"

namespace aclvmm {
namespace {

constexpr FamilySet k950 = family_bit(Family::k950);
constexpr FamilySet kA3 = family_bit(Family::kA3);
constexpr FamilySet kA2 = family_bit(Family::kA2);
constexpr FamilySet kEdge = family_bit(Family::kEdge);
constexpr FamilySet kInf = family_bit(Family::kInf);
constexpr FamilySet kTrain = family_bit(Family::kTrain);
constexpr FamilySet kAll = k950 | kA3 | kA2 | kEdge | kInf | kTrain;

// The wording follows products.md ("API support by family" and "Other rules").
constexpr std::array<FeatureRow, kFeatureCount> kFeatures = {{
    {Feature::kFabricShare, kA3,
     "`aclrtMemExportToShareableHandleV2`, `aclrtMemSetPidToShareableHandleV2`, "
     "`aclrtMemImportFromShareableHandleV2` with `ACL_MEM_SHARE_HANDLE_TYPE_FABRIC` (cross-server)",
     false},
    {Feature::kNoUcReserve, kA3, "`aclrtReserveMemAddressNoUCMemory`", false},
    {Feature::kSelectedLink, kA3, "`aclrtMemMapSelectedLink`", false},
    {Feature::kSetLink, k950 | kA3, "`aclrtMemMapSetLink`", true},
    {Feature::kManaged, kA2,
     "`aclrtMemAllocManaged`, `aclrtMemManagedAdvise`, `aclrtMemManagedGetAttr`, "
     "`aclrtMemManagedGetAttrs`, `aclrtMemManagedPrefetchAsync`, `aclrtMemManagedPrefetchBatchAsync`",
     false},
    {Feature::kP2PMap, kAll & ~kEdge, "`aclrtMemP2PMap`", false},
    {Feature::kExpectPtr, kAll & ~k950, "`aclrtReserveMemAddress` with a non-NULL `expectPtr`", false},
    {Feature::kHbmHuge, k950 | kA3 | kA2,
     "`aclrtMallocPhysical` on a device with `ACL_HBM_MEM_HUGE`, or `ACL_HBM_MEM_NORMAL` "
     "(allocated as `ACL_HBM_MEM_HUGE`)",
     false},
    {Feature::kHbmHuge1G, k950 | kA3 | kA2, "`aclrtMallocPhysical` on a device with `ACL_HBM_MEM_HUGE1G`",
     false},
    {Feature::kMemHuge1G, kA3 | kA2, "`aclrtMallocPhysical` on a device with `ACL_MEM_HUGE1G`", false},
    {Feature::kMemP2PHuge1G, kA3, "`aclrtMallocPhysical` on a device with `ACL_MEM_P2P_HUGE1G`", false},
    // The chip feature behind the 1 GiB attributes (behavior.md §1): it also gates host giant pages
    // and aclrtMalloc's 1 GiB policies.
    {Feature::kHuge1GPages, k950 | kA3 | kA2,
     "other 1 GiB page requests: `aclrtMallocPhysical` on HOST / HOST_NUMA with "
     "`ACL_MEM_P2P_HUGE1G`, `aclrtMalloc` with `ACL_MEM_MALLOC_HUGE1G_ONLY` or "
     "`ACL_MEM_MALLOC_HUGE1G_ONLY_P2P`",
     false},
    {Feature::kNoAccessOverPcie, kEdge | kInf | kTrain,
     "`aclrtMemMapNoAccess` on a PCIe-interconnected device (`ACLVMM_INTERCONNECT=pcie`)", false},
    // runtime-extra.md §2 and §10.
    {Feature::kStreamAbort, k950 | kA3 | kA2, "`aclrtStreamAbort`", false},
    {Feature::kHugeStream, kAll & ~kInf, "`aclrtCreateStreamWithConfig` with `ACL_STREAM_HUGE`",
     false},
    {Feature::kStreamMemoryOps, k950 | kA3 | kA2, "`aclrtValueWrite`, `aclrtValueWait`", false},
    {Feature::kBatchCopy, k950 | kA3 | kA2, "`aclrtMemcpyBatch`, `aclrtMemcpyBatchAsync`", false},
    // The documentation wins over the TRAIN runtime configuration, which carries the feature.
    {Feature::kHostRegister, k950 | kA3 | kA2,
     "`aclrtHostRegister`, `aclrtHostRegisterV2`, `aclrtHostGetDevicePointer`, "
     "`aclrtHostUnregister`",
     false},
    {Feature::kIpcMemory, kAll & ~kEdge,
     "`aclrtIpcMemGetExportKey`, `aclrtIpcMemSetImportPid`, `aclrtIpcMemImportByKey`, "
     "`aclrtIpcMemClose`",
     false},
    {Feature::kIpcMemoryA3, kA3, "`aclrtIpcMemSetAttr`, `aclrtIpcMemImportPidInterServer`", false},
}};

constexpr bool indexed_by_feature() {
  for (int i = 0; i < kFeatureCount; ++i) {
    if (static_cast<int>(kFeatures[i].feature) != i) return false;
  }
  return true;
}
static_assert(indexed_by_feature(), "kFeatures must list the features in enum order");

constexpr std::array<LinkRow, 4> kLinks = {{
    {0, "SIO", kA3},            // ACL_RT_MEM_ACCESS_LINK_SIO
    {1, "HCCS", kA3},           // ACL_RT_MEM_ACCESS_LINK_HCCS
    {2, "UB one-port", k950},   // ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH
    {3, "UB multi-port", k950}, // ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH
}};

constexpr bool links_indexed_by_value() {
  for (uint32_t i = 0; i < kLinks.size(); ++i) {
    if (kLinks[i].link != i) return false;
  }
  return true;
}
static_assert(links_indexed_by_value(), "kLinks must list the links in value order");

// "✓", or "✓ (SIO, HCCS only)" for a row whose support depends on the route.
std::string cell(const FeatureRow& row, Family f) {
  if (!has_family(row.families, f)) return "✗";
  if (!row.per_link) return "✓";
  std::string names;
  for (const LinkRow& l : kLinks) {
    if (!has_family(l.families, f)) continue;
    if (!names.empty()) names += ", ";
    names += l.name;
  }
  return "✓ (" + names + " only)";
}

}  // namespace

const std::array<FeatureRow, kFeatureCount>& feature_table() { return kFeatures; }
const std::array<LinkRow, 4>& link_table() { return kLinks; }

std::string render_support_matrix() {
  std::string out = "| API |";
  for (int f = 0; f < kFamilyCount; ++f) out += std::string(" ") + family_name(static_cast<Family>(f)) + " |";
  out += "\n|---|";
  for (int f = 0; f < kFamilyCount; ++f) out += "---|";
  out += "\n";
  for (const FeatureRow& row : kFeatures) {
    out += std::string("| ") + row.governs + " |";
    for (int f = 0; f < kFamilyCount; ++f) out += " " + cell(row, static_cast<Family>(f)) + " |";
    out += "\n";
  }
  return out;
}

bool Product::supports(Feature f) const {
  const int i = static_cast<int>(f);
  return i >= 0 && i < kFeatureCount && has_family(kFeatures[i].families, family);
}

bool Product::supports_link(uint32_t link) const {
  return link < kLinks.size() && has_family(kLinks[link].families, family);
}

}  // namespace aclvmm
