#include "runtime/product.h"

#include <array>

namespace aclvmm {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

struct SocRow {
  const char* name;  // the exact name, or a prefix when `prefix` is set
  bool prefix;
  Family family;
  uint64_t memory;
};

// Exact names first: a listed 950 name keeps its own memory size before the prefix rows match.
constexpr std::array<SocRow, 30> kSocs = {{
    {"Ascend910B1", false, Family::kA2, 64 * kGiB},
    {"Ascend910B2", false, Family::kA2, 64 * kGiB},
    {"Ascend910B2C", false, Family::kA2, 64 * kGiB},
    {"Ascend910B3", false, Family::kA2, 64 * kGiB},
    {"Ascend910B4", false, Family::kA2, 32 * kGiB},
    {"Ascend910B4-1", false, Family::kA2, 32 * kGiB},
    {"Ascend910_9381", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9382", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9391", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9392", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9362", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9372", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9363", false, Family::kA3, 32 * kGiB},
    {"Ascend950PR_9599", false, Family::k950, 128 * kGiB},
    {"Ascend950DT_9591", false, Family::k950, 144 * kGiB},
    {"Ascend310P1", false, Family::kInf, 24000000000ull},
    {"Ascend310P3", false, Family::kInf, 24000000000ull},
    {"Ascend310P5", false, Family::kInf, 24000000000ull},
    {"Ascend310P7", false, Family::kInf, 24000000000ull},
    {"Ascend310B1", false, Family::kEdge, 32 * kGiB},
    {"Ascend310B2", false, Family::kEdge, 32 * kGiB},
    {"Ascend310B3", false, Family::kEdge, 32 * kGiB},
    {"Ascend310B4", false, Family::kEdge, 32 * kGiB},
    {"Ascend910A", false, Family::kTrain, 32 * kGiB},
    {"Ascend910B", false, Family::kTrain, 32 * kGiB},  // no digit: the previous generation, not A2
    {"Ascend910ProA", false, Family::kTrain, 32 * kGiB},
    {"Ascend910ProB", false, Family::kTrain, 32 * kGiB},
    {"Ascend910PremiumA", false, Family::kTrain, 32 * kGiB},
    {"Ascend950PR_", true, Family::k950, 128 * kGiB},
    {"Ascend950DT_", true, Family::k950, 128 * kGiB},
}};

bool matches(const SocRow& row, const std::string& soc) {
  return row.prefix ? soc.rfind(row.name, 0) == 0 : soc == row.name;
}

// "Ascend910B1, ..., Ascend950PR_*, Ascend950DT_*": every name the table accepts.
std::string accepted_names() {
  std::string out;
  for (const SocRow& row : kSocs) {
    if (!out.empty()) out += ", ";
    out += row.name;
    if (row.prefix) out += "*";
  }
  return out;
}

constexpr std::array<const char*, kFamilyCount> kFamilyNames = {"950", "A3", "A2", "EDGE", "INF", "TRAIN"};

}  // namespace

const char* family_name(Family f) {
  const int i = static_cast<int>(f);
  return i >= 0 && i < kFamilyCount ? kFamilyNames[i] : "?";
}

StatusOr<Product> find_product(const std::string& soc) {
  for (const SocRow& row : kSocs) {
    if (matches(row, soc)) return Product{soc, row.family, row.memory};
  }
  return Error(kAclInvalidParam,
               "ACLVMM_SOC=\"" + soc + "\" is not a known SoC name; accepted: " + accepted_names());
}

}  // namespace aclvmm
