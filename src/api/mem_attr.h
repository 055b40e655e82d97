// The ACL layer's memory-attribute tables (behavior.md sections 1, 5, 6): which aclrtMemAttr a
// location accepts, the (page type, memory type) each becomes, and the reverse lookup that
// aclrtMemGetAllocationPropertiesFromHandle reports.
#pragma once

#include "acl/acl.h"
#include "runtime/product.h"
#include "vmm/physical.h"

namespace aclvmm::api {

struct PageAndMemory {
  PageType page;
  MemType mem;
};

// false: the attribute is not accepted for this location kind (ACL layer, 100000).
bool translate_attr(int attr, bool host, PageAndMemory* out);
// true when the attribute is DDR-only (rejected for a device location).
bool ddr_only(int attr);
// The product feature a device-location attribute needs, if any (207000 without it).
bool attr_supported(const Product& product, int attr);
// Reverse lookup; false when no attribute matches.
bool attr_from(PageType page, MemType mem, bool host, aclrtMemAttr* out);
bool is_1g(int attr);

}  // namespace aclvmm::api
