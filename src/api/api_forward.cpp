#include "api/api_forward.h"

#include <string>

namespace aclvmm::api {
namespace {

VendorFunction g_vendor_recent_error{"aclGetRecentErrMsg"};

}  // namespace

aclError forwarded(const char* api, aclError code) {
  if (code == ACL_SUCCESS) return code;
  // The vendor keeps the message per thread, as aclvmm does: taken right after the call, it is
  // the message of this failure.
  std::string message = "the vendor runtime returned " + std::to_string(code);
  if (const auto recent = g_vendor_recent_error.as<const char* (*)()>(); recent != nullptr) {
    if (const char* text = recent(); text != nullptr && *text != '\0')
      message += ": " + std::string(text);
  }
  return fail(api, code, message);
}

aclError vendor_lacks(const char* api, const VendorFunction& vendor) {
  return fail(api, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
              std::string("the vendor runtime beside aclvmm does not define ") + vendor.name() +
                  " (nor " + vendor.name() + "Impl): the call cannot be forwarded");
}

}  // namespace aclvmm::api
