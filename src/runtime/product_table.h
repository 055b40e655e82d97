// The product support matrix of products.md as data: one row per Feature naming the families that
// have it and the calls / attributes it governs, plus the link types each family routes over.
// Product::supports() answers from these rows, and docs/api-support.md shows their rendering
// (a unit test keeps the two identical), so the runtime and the documentation cannot drift apart.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "runtime/product.h"

namespace aclvmm {

using FamilySet = uint8_t;  // bit i: Family i

constexpr FamilySet family_bit(Family f) { return static_cast<FamilySet>(1u << static_cast<int>(f)); }
constexpr bool has_family(FamilySet set, Family f) { return (set & family_bit(f)) != 0; }

struct FeatureRow {
  Feature feature;
  FamilySet families;   // where the calls work; elsewhere they return 207000
  const char* governs;  // Markdown: the calls / memory attributes the row gates
  bool per_link;        // a supported cell also names the links the family offers
};

struct LinkRow {
  uint32_t link;       // aclrtMemLinkType value
  const char* name;    // as products.md names the route
  FamilySet families;  // elsewhere aclrtMemMapSetLink returns 207021 (where it is supported at all)
};

// Indexed by Feature: feature_table()[static_cast<int>(f)].feature == f.
const std::array<FeatureRow, kFeatureCount>& feature_table();
const std::array<LinkRow, 4>& link_table();

// The support matrix as a Markdown table (header row included, one line per Feature, each line
// ending in '\n'), columns in Family order: 950, A3, A2, EDGE, INF, TRAIN.
std::string render_support_matrix();

}  // namespace aclvmm
