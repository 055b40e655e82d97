// ManagedMemory::attribute: the range attributes of aclrtMemManagedGetAttr(s) with the vendor's
// encodings (behavior.md §10): -1 host, -2 mixed or unset, ACCESSED_BY packed from slot 0.
//
// Each location attribute is its own question over the pages: PREFERRED_LOCATION asks which
// processor (a device, or the host whatever its NUMA node), _TYPE asks only for the kind of
// location, _ID for a device or node id of one common kind. So pages on devices 0 and 1 agree on
// the type (DEVICE) but not on the id, and pages on the host and on host NUMA node 0 agree on the
// processor (-1) but not on the type.
#include <algorithm>
#include <new>
#include <stdexcept>

#include "observability/log.h"
#include "vmm/managed.h"

namespace aclvmm {
namespace {

constexpr int kInvalid = 0, kDevice = 1, kHost = 2, kHostNuma = 3;
constexpr int32_t kHostProcessor = -1, kMixed = -2;

using Pages = std::vector<std::pair<ManagedRange*, size_t>>;

// The value every page's preferred (or last-prefetch) location gives, or `mixed` when two pages
// differ.
template <typename Value>
int32_t common(const Pages& pages, bool prefetch, Value value, int32_t mixed) {
  auto location = [prefetch](const std::pair<ManagedRange*, size_t>& pr) -> const ManagedLocation& {
    const ManagedPage& p = pr.first->pages[pr.second];
    return prefetch ? p.last_prefetch : p.preferred;
  };
  const int32_t first = value(location(pages.front()));
  for (const auto& pr : pages) {
    if (value(location(pr)) != first) return mixed;
  }
  return first;
}

}  // namespace

StatusOr<std::vector<int32_t>> ManagedMemory::attribute(int attribute, uint64_t va, uint64_t size,
                                                        size_t slots) {
  // The caller's dataSize decides how many ACCESSED_BY slots are made: a size no vector can hold
  // is a code, not an exception through the C API.
  try {
    Lock lock(mu_);
    Pages pages;
    ACLVMM_RETURN_IF_ERROR(pages_of(va, size, &pages));
    auto user = [&](int physical) { return static_cast<int32_t>(devices_.user_device(physical)); };
    auto processor = [&](const ManagedLocation& l) {
      if (l.type == kDevice) return user(l.id);
      return l.type == kHost || l.type == kHostNuma ? kHostProcessor : kMixed;
    };
    auto type = [](const ManagedLocation& l) { return static_cast<int32_t>(l.type); };
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
        out.push_back(common(pages, attribute == 6, processor, kMixed));
        break;
      }
      case 4:    // PREFERRED_LOCATION_TYPE
      case 7: {  // LAST_PREFETCH_LOCATION_TYPE
        out.push_back(common(pages, attribute == 7, type, kInvalid));
        break;
      }
      case 5:    // PREFERRED_LOCATION_ID
      case 8: {  // LAST_PREFETCH_LOCATION_ID: an id only within one kind that has ids
        const bool prefetch = attribute == 8;
        const int32_t kind = common(pages, prefetch, type, kInvalid);
        int32_t id = kMixed;
        if (kind == kDevice) {
          id = common(pages, prefetch, [&](const ManagedLocation& l) { return user(l.id); }, kMixed);
        } else if (kind == kHostNuma) {
          id = common(pages, prefetch, [](const ManagedLocation& l) { return int32_t{l.id}; }, kMixed);
        }
        out.push_back(id);
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
        if (host) ids.insert(ids.begin(), kHostProcessor);
        out.assign(slots, kMixed);
        for (size_t k = 0; k < ids.size() && k < slots; ++k) out[k] = ids[k];
        break;
      }
      default:
        return Error(ACL_ERROR_RT_PARAM_INVALID, "unknown range attribute");
    }
    return out;
  } catch (const std::bad_alloc&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("no memory for {} result slots of attribute {}", slots, attribute));
  } catch (const std::length_error&) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION,
                 fmt::format("{} result slots of attribute {} are more than can be held", slots, attribute));
  }
}

}  // namespace aclvmm
