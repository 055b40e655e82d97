// Initialisation, finalisation, version and identity queries, recent error text.
#include <strings.h>

#include <cstdio>
#include <cstring>

#include "api/api_common.h"
#include "api/api_forward.h"
#include "api/error_message.h"
#include "runtime/runtime.h"

using namespace aclvmm;

namespace {

// The CANN release whose runtime behaviour this library reproduces.
constexpr int kCannMajor = 8, kCannMinor = 5, kCannPatch = 0;
constexpr const char* kCannVersion = "8.5.0";

bool known_package(const char* name) {
  static const char* const kNames[] = {"cann", "runtime", "compiler", "hccl",
                                       "toolkit", "opp", "opp_kernel", "driver"};
  for (const char* n : kNames) {
    if (strcasecmp(name, n) == 0) return true;
  }
  return false;
}

}  // namespace

extern "C" {

aclError aclInit(const char* configPath) {
  // The environment (and with it ACLVMM_FAULTS) is read by the start, so a rule for aclInit fires
  // too.
  ACLVMM_API_ENTER("aclInit");
  Runtime& rt = Runtime::get();
  if (rt.beside_vendor()) {
    // Both runtimes start: the vendor's first, as it owns the devices aclvmm's calls will use.
    ACLVMM_VENDOR_FUNCTION(aclInit);
    const aclError code = api::call_vendor<decltype(&aclInit)>(api, aclvmm_vendor_, configPath);
    if (code != ACL_SUCCESS) return code;
  }
  return api::finish(api, rt.init(configPath));
  ACLVMM_API_EXIT();
}

aclError aclFinalize() {
  ACLVMM_API_GUARD("aclFinalize");
  Runtime& rt = Runtime::get();
  if (rt.beside_vendor()) {
    // aclvmm releases what it made while the vendor's devices are still open, then the vendor
    // finalises.
    const Status own = rt.finalize();
    ACLVMM_VENDOR_FUNCTION(aclFinalize);
    const aclError code = api::call_vendor<decltype(&aclFinalize)>(api, aclvmm_vendor_);
    return code != ACL_SUCCESS ? code : api::finish(api, own);
  }
  return api::finish(api, rt.finalize());
  ACLVMM_API_EXIT();
}

const char* aclGetRecentErrMsg() {
  ACLVMM_API_GUARD("aclGetRecentErrMsg");
  return api::take_recent_errors();
  ACLVMM_API_EXIT_WITH(nullptr);
}

const char* aclrtGetSocName() {
  ACLVMM_API_GUARD("aclrtGetSocName");
  Runtime& rt = Runtime::get();
  Status st = rt.start();
  if (!st.ok()) {
    api::fail(api, st.code(), st.message());
    return nullptr;
  }
  return rt.config().product.soc.c_str();
  ACLVMM_API_EXIT_WITH(nullptr);
}

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  ACLVMM_API_GUARD("aclrtGetVersion");
  if (!majorVersion || !minorVersion || !patchVersion) {
    return api::invalid(api, "majorVersion, minorVersion and patchVersion must not be NULL");
  }
  *majorVersion = ACL_MAJOR_VERSION;
  *minorVersion = ACL_MINOR_VERSION;
  *patchVersion = ACL_PATCH_VERSION;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclsysGetVersionStr(char* pkgName, char* versionStr) {
  ACLVMM_API_GUARD("aclsysGetVersionStr");
  ACLVMM_REQUIRE_NOT_NULL(api, pkgName);
  ACLVMM_REQUIRE_NOT_NULL(api, versionStr);
  if (!known_package(pkgName)) return api::invalid(api, std::string("unknown package ") + pkgName);
  std::snprintf(versionStr, ACL_PKG_VERSION_MAX_SIZE, "%s", kCannVersion);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclsysGetVersionNum(char* pkgName, int32_t* versionNum) {
  ACLVMM_API_GUARD("aclsysGetVersionNum");
  ACLVMM_REQUIRE_NOT_NULL(api, pkgName);
  ACLVMM_REQUIRE_NOT_NULL(api, versionNum);
  if (!known_package(pkgName)) return api::invalid(api, std::string("unknown package ") + pkgName);
  *versionNum = kCannMajor * 10000000 + kCannMinor * 100000 + kCannPatch * 1000;
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion* version) {
  ACLVMM_API_GUARD("aclsysGetCANNVersion");
  ACLVMM_REQUIRE_NOT_NULL(api, version);
  if (api::raw(name) < ACL_PKG_NAME_CANN || api::raw(name) > ACL_PKG_NAME_DRIVER) {
    return api::invalid(api, "name " + std::to_string(api::raw(name)) + " is not a package");
  }
  std::memset(version, 0, sizeof *version);
  std::snprintf(version->version, sizeof version->version, "%s", kCannVersion);
  std::snprintf(version->majorVersion, sizeof version->majorVersion, "%d", kCannMajor);
  std::snprintf(version->minorVersion, sizeof version->minorVersion, "%d", kCannMinor);
  std::snprintf(version->releaseVersion, sizeof version->releaseVersion, "%d", kCannPatch);
  std::snprintf(version->patchVersion, sizeof version->patchVersion, "%d", 0);
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  ACLVMM_API_GUARD("aclrtGetRunMode");
  ACLVMM_REQUIRE_NOT_NULL(api, runMode);
  *runMode = ACL_HOST;  // the application always runs on the host, next to the emulated devices
  return ACL_SUCCESS;
  ACLVMM_API_EXIT();
}

}  // extern "C"
