// ManagedMemory::attribute: the range attributes of aclrtMemManagedGetAttr(s) with the vendor's
// encodings (behavior.md §10): -1 host, -2 mixed or unset, ACCESSED_BY packed from slot 0.
#include <algorithm>

#include "core/managed.h"
#include "core/runtime.h"

namespace aclvmm {
namespace {

bool same(const ManagedLocation& a, const ManagedLocation& b) {
  return a.type == b.type && (a.type == 2 || a.id == b.id);
}

}  // namespace

StatusOr<std::vector<int32_t>> ManagedMemory::attribute(int attribute, uint64_t va, uint64_t size,
                                                        size_t slots) {
  Lock lock(mu_);
  std::vector<std::pair<ManagedRange*, size_t>> pages;
  ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
  Runtime& rt = Runtime::get();
  auto user = [&](int physical) { return static_cast<int32_t>(rt.user_device(physical)); };
  // The location all pages agree on, or nullopt-like {type -1} when they differ.
  auto common = [&](bool prefetch) {
    ManagedLocation first = prefetch ? pages[0].first->pages[pages[0].second].last_prefetch
                                     : pages[0].first->pages[pages[0].second].preferred;
    for (auto& [r, i] : pages) {
      const ManagedLocation& l = prefetch ? r->pages[i].last_prefetch : r->pages[i].preferred;
      if (!same(l, first)) return ManagedLocation{-1, 0};
    }
    return first;
  };
  std::vector<int32_t> out;
  switch (attribute) {
    case 1: {  // READ_MOSTLY
      bool all = std::all_of(pages.begin(), pages.end(),
                             [](auto& pr) { return pr.first->pages[pr.second].read_mostly; });
      out.push_back(all ? 1 : 0);
      break;
    }
    case 2:    // PREFERRED_LOCATION
    case 6: {  // LAST_PREFETCH_LOCATION
      ManagedLocation l = common(attribute == 6);
      out.push_back(l.type == 1 ? user(l.id) : (l.type == 2 || l.type == 3) ? -1 : -2);
      break;
    }
    case 4:    // PREFERRED_LOCATION_TYPE
    case 7: {  // LAST_PREFETCH_LOCATION_TYPE
      ManagedLocation l = common(attribute == 7);
      out.push_back(l.type < 0 ? 0 : l.type);
      break;
    }
    case 5:    // PREFERRED_LOCATION_ID
    case 8: {  // LAST_PREFETCH_LOCATION_ID
      ManagedLocation l = common(attribute == 8);
      out.push_back(l.type == 1 ? user(l.id) : l.type == 3 ? l.id : -2);
      break;
    }
    case 3: {  // ACCESSED_BY: the processors every page names, packed from slot 0
      uint64_t devices = ~0ull;
      bool host = true;
      for (auto& [r, i] : pages) {
        devices &= r->pages[i].accessed_by;
        host = host && r->pages[i].accessed_by_host;
      }
      std::vector<int32_t> ids;
      for (int d = 0; d < 64; ++d) {
        if ((devices >> d) & 1) ids.push_back(user(d));
      }
      std::sort(ids.begin(), ids.end());
      if (host) ids.insert(ids.begin(), -1);
      out.assign(slots, -2);
      for (size_t k = 0; k < ids.size() && k < slots; ++k) out[k] = ids[k];
      break;
    }
    default:
      return Error(ACL_ERROR_RT_PARAM_INVALID, "unknown range attribute");
  }
  return out;
}

}  // namespace aclvmm
