// Products: which SoC names exist, their family, memory size and the features each family has
// (products.md). The answer to "is this call supported here" lives only in the feature table of
// product_table.cpp; this header is what the runtime asks.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace aclvmm {

// In the column order of products.md's support table.
enum class Family { k950, kA3, kA2, kEdge, kInf, kTrain };
inline constexpr int kFamilyCount = 6;

const char* family_name(Family f);

enum class Feature {
  kFabricShare,        // V2 FABRIC share handles
  kNoUcReserve,        // aclrtReserveMemAddressNoUCMemory
  kSelectedLink,       // aclrtMemMapSelectedLink
  kSetLink,            // aclrtMemMapSetLink
  kManaged,            // aclrtMemAllocManaged and friends
  kP2PMap,             // aclrtMemP2PMap
  kExpectPtr,          // non-NULL expectPtr in aclrtReserveMemAddress
  kHbmHuge,            // ACL_HBM_MEM_HUGE / ACL_HBM_MEM_NORMAL on a device
  kHbmHuge1G,          // ACL_HBM_MEM_HUGE1G on a device
  kMemHuge1G,          // ACL_MEM_HUGE1G on a device
  kMemP2PHuge1G,       // ACL_MEM_P2P_HUGE1G on a device
  kHuge1GPages,        // 1 GiB pages at all (runtime chip feature)
  kNoAccessOverPcie,   // aclrtMemMapNoAccess on a PCIe-interconnected device
  kStreamAbort,        // aclrtStreamAbort
  kHugeStream,         // aclrtCreateStreamWithConfig with ACL_STREAM_HUGE
  kStreamMemoryOps,    // aclrtValueWrite, aclrtValueWait
  kBatchCopy,          // aclrtMemcpyBatch, aclrtMemcpyBatchAsync
  kHostRegister,       // aclrtHostRegister[V2], aclrtHostGetDevicePointer, aclrtHostUnregister
  kIpcMemory,          // aclrtIpcMemGetExportKey, SetImportPid, ImportByKey, Close
  kIpcMemoryA3,        // aclrtIpcMemSetAttr, aclrtIpcMemImportPidInterServer
};
// Counted from the last enumerator: a new Feature goes at the end and becomes this one.
inline constexpr int kFeatureCount = static_cast<int>(Feature::kIpcMemoryA3) + 1;

struct Product {
  std::string soc;
  Family family = Family::kA2;
  uint64_t memory_bytes = 0;
  const char* family_name() const { return aclvmm::family_name(family); }
  bool supports(Feature f) const;
  // Link types (aclrtMemLinkType values) the product's routes offer.
  bool supports_link(uint32_t link) const;
};

// Looks up a SoC name; an unknown name is an error that lists every accepted name.
StatusOr<Product> find_product(const std::string& soc);

}  // namespace aclvmm
