// A kernel library for ACLVMM_KERNEL_LIBS (runtime-extra.md §9.8; tests/api/kernel_libs_test.cpp).
// Linked against nothing but libascendcl; its constructor registers the emulated kernel
// "test_lib_add", the vendor sample's add_custom over uint32 elements: the parameter buffer holds
// three device pointers x, y, z (offsets 0, 8, 16) and the kernel writes z[i] = x[i] + y[i] for
// numBlocks * 256 elements. What the constructor did is exported for the tests (dlsym).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclvmm/aclvmm.h"

extern "C" {
// How often the constructor ran, and aclvmmRegisterKernel's code there.
__attribute__((visibility("default"))) int aclvmm_test_kernel_lib_constructed = 0;
__attribute__((visibility("default"))) int aclvmm_test_kernel_lib_register_rc = -1;
}

namespace {

constexpr uint32_t kTestLibPerBlock = 256;

void test_lib_add(aclvmmKernelContext* ctx, uint32_t numBlocks, const void* args, size_t argsSize,
                  void* /*userData*/) {
  if (argsSize < 3 * sizeof(uint64_t)) return;
  uint64_t p[3];
  std::memcpy(p, args, sizeof p);
  const size_t n = size_t(numBlocks) * kTestLibPerBlock;
  std::vector<uint32_t> x(n), y(n);
  if (aclvmmKernelRead(ctx, x.data(), reinterpret_cast<const void*>(p[0]), n * 4) != ACL_SUCCESS) return;
  if (aclvmmKernelRead(ctx, y.data(), reinterpret_cast<const void*>(p[1]), n * 4) != ACL_SUCCESS) return;
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
  (void)aclvmmKernelWrite(ctx, reinterpret_cast<void*>(p[2]), x.data(), n * 4);
}

__attribute__((constructor)) void test_lib_register_kernels() {
  ++aclvmm_test_kernel_lib_constructed;
  aclvmm_test_kernel_lib_register_rc = aclvmmRegisterKernel("test_lib_add", test_lib_add, nullptr);
}

}  // namespace
