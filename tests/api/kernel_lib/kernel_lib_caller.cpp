// A kernel library for ACLVMM_KERNEL_LIBS whose constructor makes another ACL call while the
// runtime starts (tests/api/kernel_libs_test.cpp): the call named by ACLVMM_TEST_LIB_CALL. The
// runtime must refuse it (100000) instead of deadlocking on its own start. The code, the message
// and whether the call returned at all are exported for the tests (dlsym); the constructor also
// registers the kernel "test_lib_caller" to show that it ran.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "acl/acl.h"
#include "aclvmm/aclvmm.h"

extern "C" {
__attribute__((visibility("default"))) int aclvmm_test_lib_call_made = 0;  // 1: the call returned
__attribute__((visibility("default"))) int aclvmm_test_lib_call_rc = -1;
__attribute__((visibility("default"))) char aclvmm_test_lib_call_msg[1024] = {0};
}

namespace {

void test_lib_caller_kernel(aclvmmKernelContext*, uint32_t, const void*, size_t, void*) {}

int test_lib_make_call(const char* call) {
  if (std::strcmp(call, "aclrtGetDeviceCount") == 0) {
    uint32_t n = 0;
    return aclrtGetDeviceCount(&n);
  }
  if (std::strcmp(call, "aclInit") == 0) return aclInit(nullptr);
  if (std::strcmp(call, "aclFinalize") == 0) return aclFinalize();
  if (std::strcmp(call, "aclrtSetDevice") == 0) return aclrtSetDevice(0);
  if (std::strcmp(call, "aclrtMalloc") == 0) {
    void* p = nullptr;
    return aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
  }
  if (std::strcmp(call, "aclrtBinaryLoadFromFile") == 0) {
    aclrtBinHandle h = nullptr;
    return aclrtBinaryLoadFromFile("/proc/self/exe", nullptr, &h);
  }
  if (std::strcmp(call, "aclrtGetSocName") == 0) return aclrtGetSocName() == nullptr ? ACL_ERROR_INVALID_PARAM : 0;
  return -2;  // unknown name
}

__attribute__((constructor)) void test_lib_caller_constructor() {
  (void)aclvmmRegisterKernel("test_lib_caller", test_lib_caller_kernel, nullptr);
  const char* call = std::getenv("ACLVMM_TEST_LIB_CALL");
  if (call == nullptr || *call == '\0') return;
  aclvmm_test_lib_call_rc = test_lib_make_call(call);
  const char* msg = aclGetRecentErrMsg();
  std::snprintf(aclvmm_test_lib_call_msg, sizeof aclvmm_test_lib_call_msg, "%s", msg ? msg : "");
  aclvmm_test_lib_call_made = 1;
}

}  // namespace
