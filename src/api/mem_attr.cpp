#include "api/mem_attr.h"

namespace aclvmm::api {

bool ddr_only(int attr) {
  return attr == ACL_DDR_MEM_HUGE || attr == ACL_DDR_MEM_NORMAL || attr == ACL_DDR_MEM_P2P_HUGE ||
         attr == ACL_DDR_MEM_P2P_NORMAL;
}

bool is_1g(int attr) {
  return attr == ACL_HBM_MEM_HUGE1G || attr == ACL_MEM_HUGE1G || attr == ACL_MEM_P2P_HUGE1G ||
         attr == ACL_HBM_MEM_P2P_HUGE1G;
}

bool translate_attr(int attr, bool host, PageAndMemory* out) {
  switch (attr) {
    case ACL_HBM_MEM_HUGE: *out = {kHugePage, kHbm}; return true;
    case ACL_HBM_MEM_NORMAL: *out = {kNormalPage, kHbm}; return true;
    case ACL_HBM_MEM_HUGE1G: *out = {kHuge1GPage, kHbm}; return true;
    case ACL_DDR_MEM_HUGE: *out = {kHugePage, kDdr}; return host;
    case ACL_DDR_MEM_NORMAL: *out = {kNormalPage, kDdr}; return host;
    case ACL_DDR_MEM_P2P_HUGE: *out = {kHugePage, kP2PDdr}; return host;
    case ACL_DDR_MEM_P2P_NORMAL: *out = {kNormalPage, kP2PDdr}; return host;
    case ACL_MEM_NORMAL: *out = {kNormalPage, host ? kDdr : kHbm}; return true;
    case ACL_MEM_HUGE: *out = {kHugePage, host ? kDdr : kHbm}; return true;
    case ACL_MEM_HUGE1G: *out = {kHuge1GPage, host ? kDdr : kHbm}; return true;
    case ACL_MEM_P2P_NORMAL: *out = {kNormalPage, host ? kP2PDdr : kP2PHbm}; return true;
    case ACL_MEM_P2P_HUGE: *out = {kHugePage, host ? kP2PDdr : kP2PHbm}; return true;
    case ACL_MEM_P2P_HUGE1G: *out = {kHuge1GPage, host ? kP2PDdr : kP2PHbm}; return true;
    default: return false;  // ACL_DDR_MEM, ACL_HBM_MEM, ACL_HBM_MEM_P2P_* and unknown values
  }
}

bool attr_supported(const Product& product, int attr) {
  switch (attr) {
    case ACL_HBM_MEM_HUGE:
    case ACL_HBM_MEM_NORMAL: return product.supports(Feature::kHbmHuge);
    case ACL_HBM_MEM_HUGE1G: return product.supports(Feature::kHbmHuge1G);
    case ACL_MEM_HUGE1G: return product.supports(Feature::kMemHuge1G);
    case ACL_MEM_P2P_HUGE1G: return product.supports(Feature::kMemP2PHuge1G);
    default: return true;
  }
}

bool attr_from(PageType page, MemType mem, bool host, aclrtMemAttr* out) {
  static const aclrtMemAttr kHbmAttrs[] = {ACL_HBM_MEM_NORMAL, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_HUGE1G};
  static const aclrtMemAttr kGeneric[] = {ACL_MEM_NORMAL, ACL_MEM_HUGE, ACL_MEM_HUGE1G};
  static const aclrtMemAttr kP2P[] = {ACL_MEM_P2P_NORMAL, ACL_MEM_P2P_HUGE, ACL_MEM_P2P_HUGE1G};
  if (page > kHuge1GPage) return false;
  switch (mem) {
    case kHbm: *out = kHbmAttrs[page]; return true;
    case kDdr: *out = kGeneric[page]; return true;
    case kP2PHbm:
      if (host) return false;
      *out = kP2P[page];
      return true;
    case kP2PDdr:
      if (!host) return false;
      *out = page == kNormalPage ? ACL_DDR_MEM_P2P_NORMAL : kP2P[page];
      return true;
  }
  return false;
}

}  // namespace aclvmm::api
