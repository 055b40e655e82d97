#include "core/product.h"

#include <array>

namespace aclvmm {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

struct SocRow {
  const char* name;
  Family family;
  uint64_t memory;
};

constexpr std::array<SocRow, 25> kSocs = {{
    {"Ascend910B1", Family::kA2, 64 * kGiB},
    {"Ascend910B2", Family::kA2, 64 * kGiB},
    {"Ascend910B2C", Family::kA2, 64 * kGiB},
    {"Ascend910B3", Family::kA2, 64 * kGiB},
    {"Ascend910B4", Family::kA2, 32 * kGiB},
    {"Ascend910B4-1", Family::kA2, 32 * kGiB},
    {"Ascend910_9381", Family::kA3, 64 * kGiB},
    {"Ascend910_9382", Family::kA3, 64 * kGiB},
    {"Ascend910_9391", Family::kA3, 64 * kGiB},
    {"Ascend910_9392", Family::kA3, 64 * kGiB},
    {"Ascend910_9362", Family::kA3, 64 * kGiB},
    {"Ascend910_9372", Family::kA3, 64 * kGiB},
    {"Ascend910_9363", Family::kA3, 32 * kGiB},
    {"Ascend310P1", Family::kInf, 24000000000ull},
    {"Ascend310P3", Family::kInf, 24000000000ull},
    {"Ascend310P5", Family::kInf, 24000000000ull},
    {"Ascend310P7", Family::kInf, 24000000000ull},
    {"Ascend310B1", Family::kEdge, 32 * kGiB},
    {"Ascend310B2", Family::kEdge, 32 * kGiB},
    {"Ascend310B3", Family::kEdge, 32 * kGiB},
    {"Ascend310B4", Family::kEdge, 32 * kGiB},
    {"Ascend910A", Family::kTrain, 32 * kGiB},
    {"Ascend910B", Family::kTrain, 32 * kGiB},  // no digit: the previous generation, not A2
    {"Ascend910ProA", Family::kTrain, 32 * kGiB},
    {"Ascend910ProB", Family::kTrain, 32 * kGiB},
}};

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

const char* Product::family_name() const {
  switch (family) {
    case Family::k950: return "950";
    case Family::kA3: return "A3";
    case Family::kA2: return "A2";
    case Family::kEdge: return "EDGE";
    case Family::kInf: return "INF";
    case Family::kTrain: return "TRAIN";
  }
  return "?";
}

bool Product::supports(Feature f) const {
  const bool a2 = family == Family::kA2, a3 = family == Family::kA3, f950 = family == Family::k950;
  switch (f) {
    case Feature::kFabricShare:
    case Feature::kNoUcReserve:
    case Feature::kSelectedLink:
    case Feature::kMemP2PHuge1G: return a3;
    case Feature::kSetLink: return a3 || f950;
    case Feature::kManaged: return a2;
    case Feature::kP2PMap: return family != Family::kEdge;
    case Feature::kExpectPtr: return !f950;
    case Feature::kHbmHuge:
    case Feature::kHbmHuge1G:
    case Feature::kHuge1GPages: return a2 || a3 || f950;
    case Feature::kMemHuge1G: return a2 || a3;
  }
  return false;
}

bool Product::supports_link(uint32_t link) const {
  if (family == Family::kA3) return link == 0 || link == 1;   // SIO, HCCS
  if (family == Family::k950) return link == 2 || link == 3;  // UB one-port, multi-port
  return false;
}

StatusOr<Product> find_product(const std::string& soc) {
  for (const SocRow& row : kSocs) {
    if (soc == row.name) return Product{soc, row.family, row.memory};
  }
  if (soc == "Ascend910PremiumA") return Product{soc, Family::kTrain, 32 * kGiB};
  if (starts_with(soc, "Ascend950PR_") || starts_with(soc, "Ascend950DT_")) {
    return Product{soc, Family::k950, soc == "Ascend950DT_9591" ? 144 * kGiB : 128 * kGiB};
  }
  return Error(kAclInvalidParam,
               "ACLVMM_SOC=\"" + soc +
                   "\" is not a known SoC name; accepted: Ascend910B1..B4, Ascend910B4-1, "
                   "Ascend910B2C, Ascend910_93xx, Ascend950PR_*, Ascend950DT_*, Ascend310P1/3/5/7, "
                   "Ascend310B1..B4, Ascend910A, Ascend910B, Ascend910ProA/ProB, Ascend910PremiumA");
}

}  // namespace aclvmm
