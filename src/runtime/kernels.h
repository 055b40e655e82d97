// Kernels: what the runtime keeps of kernel binaries, their kernels and the parameter buffers
// launches are built in (runtime-extra.md §9.1-9.7), and the launch itself.
//
// The emulator's reading of the vendor's flow: a binary file is opened and read but never parsed
// (its kernels are CPU functions registered by name, kernel_registry.h); a function handle names
// (binary, kernel name); a parameter buffer is one per thread, rebuilt by every
// aclrtKernelArgsInit on that thread; a launch copies the buffer and queues a host task that, when
// the stream reaches it, calls the function registered under the name at that moment, as the
// stream's device (kernel_context.h).
//
// Handles are tokens of three HandleTables (tags of their own), so a destroyed, forged or
// wrong-kind handle is 107017 and never dereferenced. A binary records the devices it was
// "loaded" on (an aclrtBinaryGetFunction while that device was current); a launch on a stream of
// another device is 107017, as in the vendor runtime.
//
// Lifetime: binaries and their functions live until aclrtBinaryUnLoad or the runtime's teardown
// (release_all, which the leak report names). A thread's parameter buffer lives with the thread;
// its handle stays the thread's across restarts.
//
// Threading: every method from any thread. A binary's kernel names are guarded by its own lock
// (base/lock_rank.h, kKernelBinary); the devices it was loaded on are an atomic mask. The number
// of loaded binaries is published for aclvmm-smi after each load and unload (publish_binaries).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/handle_table.h"
#include "base/lock_rank.h"
#include "base/status.h"

namespace aclvmm {

class Runtime;

struct KernelBinary {
  std::string path;
  uint64_t bytes = 0;                  // the file's size when it was loaded
  std::atomic<uint64_t> devices{0};    // physical devices it was loaded on (a bit each)
  RankedMutex<LockRank::kKernelBinary> mu;   // functions
  std::map<std::string, uint64_t> functions;  // kernel name -> function token
};

struct KernelFunction {
  std::shared_ptr<KernelBinary> binary;
  uint64_t binary_token = 0;
  std::string name;
};

// One thread's parameter buffer (aclrtKernelArgsInit .. Finalize).
struct KernelArgs {
  static constexpr size_t kMaxParams = 128;
  static constexpr size_t kMaxBytes = 64 * 1024;
  uint64_t function = 0;  // the function token it was built for
  std::vector<uint8_t> bytes;
  size_t params = 0;
  bool finalized = false;
};

// What aclrtLaunchKernelWithConfig asks for; the ACL layer's verdict on `cfg` is checked in its
// place in the order (runtime-extra.md §9.6 check 4).
struct KernelLaunch {
  uint64_t function = 0;
  uint32_t blocks = 0;
  uint64_t stream = 0;  // 0: the current context's default stream
  uint64_t args = 0;
  Status config_verdict;
};

class Kernels {
 public:
  // The tags of its three handle tables (the runtime's, which differ after each fork).
  Kernels(Runtime& rt, uint16_t binary_tag, uint16_t function_tag, uint16_t args_tag);

  // aclrtBinaryLoadFromFile: reads `path` (any content); 107000 when it cannot be resolved or
  // read as a regular file.
  StatusOr<uint64_t> load(const std::string& path);
  // aclrtBinaryUnLoad: 107017 for a handle that is not a live binary.
  Status unload(uint64_t binary);
  // aclrtBinaryGetFunction: the binary becomes loaded on the current context's device.
  StatusOr<uint64_t> function(uint64_t binary, const std::string& name);
  // aclrtKernelArgsInit / Append / Finalize.
  StatusOr<uint64_t> args_init(uint64_t function);
  // The parameter's handle: an opaque non-zero value aclvmm never reads back.
  StatusOr<uint64_t> args_append(uint64_t args, const void* param, size_t size);
  Status args_finalize(uint64_t args);
  // aclrtLaunchKernelWithConfig after the ACL layer's NULL checks.
  Status launch(const KernelLaunch& launch);

  size_t live_binaries() const { return binaries_.size(); }
  // Teardown: unloads every binary still loaded; returns their paths (the leak report's lines).
  std::vector<std::string> release_all();

 private:
  // The calling thread's buffer for the current runtime object (made at its first Init).
  StatusOr<std::pair<uint64_t, std::shared_ptr<KernelArgs>>> own_args();
  StatusOr<std::shared_ptr<KernelArgs>> find_args(uint64_t token) const;
  // The number of loaded binaries, for aclvmm-smi (observability/live_counts.h), after each load
  // and unload.
  void publish_binaries() const;

  Runtime& rt_;
  HandleTable<KernelBinary> binaries_;
  HandleTable<KernelFunction> functions_;
  HandleTable<KernelArgs> args_;
};

}  // namespace aclvmm
