// Initialisation, finalisation, version and identity queries, recent error text.
#include <strings.h>

#include <cstdio>
#include <cstring>

#include "api/api_common.h"
#include "api/error_message.h"
#include "core/faults.h"
#include "core/runtime.h"

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
  // The environment (and with it ACLVMM_FAULTS) is read first, so a rule for aclInit fires too.
  Status started = Runtime::get().start();
  if (!started.ok()) return api::finish("aclInit", started);
  if (int code = faults_check("aclInit")) {
    return api::fail("aclInit", code, "failure injected by ACLVMM_FAULTS / aclvmmInjectFault");
  }
  return api::finish("aclInit", Runtime::get().init(configPath));
}

aclError aclFinalize() {
  return api::finish("aclFinalize", Runtime::get().finalize());
}

const char* aclGetRecentErrMsg() { return api::take_recent_errors(); }

const char* aclrtGetSocName() {
  Runtime& rt = Runtime::get();
  Status st = rt.start();
  if (!st.ok()) {
    api::fail("aclrtGetSocName", st.code(), st.message());
    return nullptr;
  }
  return rt.config().product.soc.c_str();
}

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  const char* api = "aclrtGetVersion";
  if (!majorVersion || !minorVersion || !patchVersion) {
    return api::invalid(api, "majorVersion, minorVersion and patchVersion must not be NULL");
  }
  *majorVersion = ACL_MAJOR_VERSION;
  *minorVersion = ACL_MINOR_VERSION;
  *patchVersion = ACL_PATCH_VERSION;
  return ACL_SUCCESS;
}

aclError aclsysGetVersionStr(char* pkgName, char* versionStr) {
  const char* api = "aclsysGetVersionStr";
  ACLVMM_REQUIRE_NOT_NULL(api, pkgName);
  ACLVMM_REQUIRE_NOT_NULL(api, versionStr);
  if (!known_package(pkgName)) return api::invalid(api, std::string("unknown package ") + pkgName);
  std::snprintf(versionStr, ACL_PKG_VERSION_MAX_SIZE, "%s", kCannVersion);
  return ACL_SUCCESS;
}

aclError aclsysGetVersionNum(char* pkgName, int32_t* versionNum) {
  const char* api = "aclsysGetVersionNum";
  ACLVMM_REQUIRE_NOT_NULL(api, pkgName);
  ACLVMM_REQUIRE_NOT_NULL(api, versionNum);
  if (!known_package(pkgName)) return api::invalid(api, std::string("unknown package ") + pkgName);
  *versionNum = kCannMajor * 10000000 + kCannMinor * 100000 + kCannPatch * 1000;
  return ACL_SUCCESS;
}

aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion* version) {
  const char* api = "aclsysGetCANNVersion";
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
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  ACLVMM_REQUIRE_NOT_NULL("aclrtGetRunMode", runMode);
  *runMode = ACL_HOST;  // the application always runs on the host, next to the emulated devices
  return ACL_SUCCESS;
}

}  // extern "C"
