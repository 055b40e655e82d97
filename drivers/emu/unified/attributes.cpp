// EmuUnified::attribute: the range attributes of aclrtMemManagedGetAttr(s) with the vendor's
// encodings (behavior.md §10): -1 host, -2 mixed or unset, ACCESSED_BY packed from slot 0.
// Device ids are driver ids (the core converts them to user ids).
//
// Each location attribute is its own question over the pages: PREFERRED_LOCATION asks which
// processor (a device, or the host whatever its NUMA node), _TYPE asks only for the kind of
// location, _ID for a device or node id of one common kind. So pages on devices 0 and 1 agree on
// the type (DEVICE) but not on the id, and pages on the host and on host NUMA node 0 agree on the
// processor (-1) but not on the type.
#include <algorithm>
#include <cerrno>

#include "drivers/emu/unified/emu_unified.h"

namespace aclvmm::dev::emu {
namespace {

// ACL's aclrtMemManagedLocationType numbering, which the *_TYPE attributes report.
constexpr int32_t kInvalid = 0, kDevice = 1, kHost = 2, kHostNuma = 3;
constexpr int32_t kHostProcessor = -1, kMixed = -2;

using Pages = std::vector<std::pair<ManagedRange*, size_t>>;

int32_t acl_type(const Location& l) {
  switch (l.kind) {
    case Location::Kind::kDevice: return kDevice;
    case Location::Kind::kHost: return kHost;
    case Location::Kind::kHostNuma: return kHostNuma;
    default: return kInvalid;
  }
}

// The value every page's preferred (or last-prefetch) location gives, or `mixed` when two pages
// differ.
template <typename Value>
int32_t common(const Pages& pages, bool prefetch, Value value, int32_t mixed) {
  auto location = [prefetch](const std::pair<ManagedRange*, size_t>& pr) -> const Location& {
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

Result EmuUnified::attribute(ManagedAttribute attribute, uint64_t va, uint64_t size,
                             int32_t* values, size_t slots) {
  if (values == nullptr || slots == 0) return Result::from_errno(EINVAL);
  Lock lock(mu_);
  Pages pages;
  if (Result r = pages_of(va, size, &pages); !r.ok()) return r;
  auto processor = [](const Location& l) {
    if (l.kind == Location::Kind::kDevice) return l.id;
    return l.kind == Location::Kind::kNone ? kMixed : kHostProcessor;
  };
  switch (attribute) {
    case ManagedAttribute::kReadMostly: {
      const bool all = std::all_of(pages.begin(), pages.end(),
                                   [](auto& pr) { return pr.first->pages[pr.second].read_mostly; });
      values[0] = all ? 1 : 0;
      return Result::success();
    }
    case ManagedAttribute::kPreferredLocation:
    case ManagedAttribute::kLastPrefetchLocation:
      values[0] = common(pages, attribute == ManagedAttribute::kLastPrefetchLocation, processor,
                         kMixed);
      return Result::success();
    case ManagedAttribute::kPreferredLocationType:
    case ManagedAttribute::kLastPrefetchLocationType:
      values[0] = common(pages, attribute == ManagedAttribute::kLastPrefetchLocationType, acl_type,
                         kInvalid);
      return Result::success();
    case ManagedAttribute::kPreferredLocationId:
    case ManagedAttribute::kLastPrefetchLocationId: {
      // An id only within one kind that has ids.
      const bool prefetch = attribute == ManagedAttribute::kLastPrefetchLocationId;
      const int32_t kind = common(pages, prefetch, acl_type, kInvalid);
      values[0] = kind == kDevice || kind == kHostNuma
                      ? common(pages, prefetch, [](const Location& l) { return l.id; }, kMixed)
                      : kMixed;
      return Result::success();
    }
    case ManagedAttribute::kAccessedBy: {  // the processors every page names, packed from slot 0
      uint64_t devices = ~0ull;
      bool host = true;
      for (auto& [r, i] : pages) {
        devices &= r->pages[i].accessed_by;
        host = host && r->pages[i].accessed_by_host;
      }
      std::fill(values, values + slots, kMixed);
      size_t k = 0;
      if (host) values[k++] = kHostProcessor;
      for (int32_t d = 0; d < kMaxDevices && k < slots; ++d) {
        if ((devices >> d) & 1) values[k++] = d;
      }
      return Result::success();
    }
  }
  return Result::from_errno(EINVAL);
}

}  // namespace aclvmm::dev::emu
