#include "runtime/kernels.h"

#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>

#include "observability/live_counts.h"
#include "runtime/kernel_context.h"
#include "runtime/kernel_registry.h"
#include "runtime/runtime.h"

namespace aclvmm {
namespace {

constexpr size_t kParamAlign = 8;

Status bad_handle(const char* what) {
  return Error(ACL_ERROR_RT_INVALID_HANDLE, fmt::format("the {} handle is not live: never made, "
                                                        "already released, or of another kind",
                                                        what));
}

// The calling thread's parameter buffer and the Kernels object it was entered in: a forked child
// (a new runtime) or a restart finds its entry gone and makes a new one. Removed from its table
// when the thread exits.
struct ThreadArgs {
  Kernels* owner = nullptr;
  HandleTable<KernelArgs>* table = nullptr;
  uint64_t token = 0;
  std::shared_ptr<KernelArgs> buffer;
  ~ThreadArgs() {
    if (table != nullptr && table->find(token) == buffer) table->remove(token);
  }
};
thread_local ThreadArgs t_args;

}  // namespace

void Kernels::publish_binaries() const {
  // Loads and unloads on other threads may write their counts in another order than they
  // changed the table: whoever writes reads the count again, and writes again if it moved, so
  // the last value written is the current one.
  for (size_t n = binaries_.size();;) {
    publish_live_count(LiveCount::kBinaries, n);
    const size_t now = binaries_.size();
    if (now == n) return;
    n = now;
  }
}

Kernels::Kernels(Runtime& rt, uint16_t binary_tag, uint16_t function_tag, uint16_t args_tag)
    : rt_(rt), binaries_(binary_tag), functions_(function_tag), args_(args_tag) {}

StatusOr<uint64_t> Kernels::load(const std::string& path) {
  // The file is opaque to the emulator: resolved, checked to be a regular file, and read whole
  // (so that an unreadable one fails here, as the vendor's load does), never interpreted.
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("the binary path \"{}\" cannot be resolved", path));
  }
  struct stat st{};
  if (stat(resolved, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("the binary path \"{}\" is not a regular file", path));
  }
  std::ifstream in(resolved, std::ios::binary);
  uint64_t bytes = 0;
  char chunk[4096];
  while (in && in.read(chunk, sizeof chunk)) bytes += sizeof chunk;
  if (in.bad() || !in.eof()) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("the binary file \"{}\" cannot be read", path));
  }
  bytes += static_cast<uint64_t>(in.gcount());
  auto binary = std::make_shared<KernelBinary>();
  binary->path = resolved;
  binary->bytes = bytes;
  const uint64_t token = binaries_.insert(std::move(binary));
  if (token == 0) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no more binaries can be loaded: the table is full");
  }
  publish_binaries();
  return token;
}

Status Kernels::unload(uint64_t binary) {
  std::shared_ptr<KernelBinary> b = binaries_.remove(binary);
  if (!b) return bad_handle("binary");
  publish_binaries();
  std::lock_guard lock(b->mu);
  for (const auto& [name, function] : b->functions) functions_.remove(function);
  b->functions.clear();
  return Status::Ok();
}

StatusOr<uint64_t> Kernels::function(uint64_t binary, const std::string& name) {
  std::shared_ptr<KernelBinary> b = binaries_.find(binary);
  if (!b) return bad_handle("binary");
  // The runtime answers every failed lookup with 107000, the missing context included.
  StatusOr<int> device = rt_.current_device();
  if (!device.ok()) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 "no kernel can be looked up without a current context: " +
                     device.status().message());
  }
  if (!KernelRegistry::get().find(name)) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("no emulated kernel is registered under the name \"{}\"; register "
                             "one with aclvmmRegisterKernel or ACLVMM_KERNEL_LIBS",
                             name));
  }
  std::lock_guard lock(b->mu);
  if (!binaries_.find(binary)) return bad_handle("binary");  // unloaded meanwhile
  b->devices.fetch_or(uint64_t{1} << *device);
  auto it = b->functions.find(name);
  if (it != b->functions.end()) return it->second;  // the same name, the same handle
  auto fn = std::make_shared<KernelFunction>();
  fn->binary = b;
  fn->binary_token = binary;
  fn->name = name;
  const uint64_t token = functions_.insert(std::move(fn));
  if (token == 0) {
    return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no more kernel functions: the table is full");
  }
  b->functions.emplace(name, token);
  return token;
}

StatusOr<std::pair<uint64_t, std::shared_ptr<KernelArgs>>> Kernels::own_args() {
  if (t_args.owner != this || args_.find(t_args.token) != t_args.buffer || !t_args.buffer) {
    auto buffer = std::make_shared<KernelArgs>();
    const uint64_t token = args_.insert(buffer);
    if (token == 0) {
      return Error(ACL_ERROR_RT_MEMORY_ALLOCATION, "no parameter buffer for this thread: the table is full");
    }
    t_args.owner = this;
    t_args.table = &args_;
    t_args.token = token;
    t_args.buffer = std::move(buffer);
  }
  return std::make_pair(t_args.token, t_args.buffer);
}

StatusOr<std::shared_ptr<KernelArgs>> Kernels::find_args(uint64_t token) const {
  std::shared_ptr<KernelArgs> args = args_.find(token);
  if (!args) return bad_handle("parameter buffer (aclrtArgsHandle)");
  return args;
}

StatusOr<uint64_t> Kernels::args_init(uint64_t function) {
  if (!functions_.find(function)) return bad_handle("kernel function");
  ACLVMM_ASSIGN_OR_RETURN(auto own, own_args());
  KernelArgs& args = *own.second;
  args.function = function;
  args.bytes.clear();
  args.params = 0;
  args.finalized = false;
  return own.first;
}

StatusOr<uint64_t> Kernels::args_append(uint64_t token, const void* param, size_t size) {
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args, find_args(token));
  if (args->finalized) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 "the parameter buffer is finalized; aclrtKernelArgsInit starts a new one");
  }
  if (args->params == KernelArgs::kMaxParams) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("a kernel takes at most {} parameters", KernelArgs::kMaxParams));
  }
  const size_t offset = (args->bytes.size() + kParamAlign - 1) / kParamAlign * kParamAlign;
  if (size > KernelArgs::kMaxBytes || offset > KernelArgs::kMaxBytes - size) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("a parameter of {} bytes at offset {} would end beyond the {}-byte "
                             "parameter buffer",
                             size, offset, KernelArgs::kMaxBytes));
  }
  args->bytes.resize(offset + size, 0);  // the gap before an aligned parameter stays zero
  std::memcpy(args->bytes.data() + offset, param, size);
  ++args->params;
  // Opaque and never read back: the token with the parameter's number in its free bits would
  // collide across tables, so the parameter's place in this process is used instead.
  return reinterpret_cast<uint64_t>(args.get()) + offset + 1;
}

Status Kernels::args_finalize(uint64_t token) {
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args, find_args(token));
  ACLVMM_RETURN_IF_ERROR(rt_.current_context().status());
  args->finalized = true;
  return Status::Ok();
}

Status Kernels::launch(const KernelLaunch& l) {
  std::shared_ptr<KernelFunction> fn = functions_.find(l.function);
  if (!fn) return bad_handle("kernel function");
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args, find_args(l.args));
  if (l.stream != 0 && !rt_.streams().find(l.stream)) return bad_handle("stream");
  if (!args->finalized) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 "the parameter buffer is not finalized (aclrtKernelArgsFinalize)");
  }
  if (args->bytes.empty()) {
    return Error(ACL_ERROR_RT_PARAM_INVALID, "the parameter buffer holds no parameter");
  }
  ACLVMM_RETURN_IF_ERROR(l.config_verdict);
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t context, rt_.current_context());
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, rt_.resolve_stream(l.stream));
  if (stream->context() != context) {
    return Error(ACL_ERROR_RT_STREAM_CONTEXT,
                 "the stream belongs to another context than the current one");
  }
  const int device = stream->device();
  if ((fn->binary->devices.load() & (uint64_t{1} << device)) == 0) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE,
                 fmt::format("the binary {} is not loaded on device {}: call "
                             "aclrtBinaryGetFunction while that device is current",
                             fn->binary->path, rt_.user_device(device)));
  }
  if (!KernelRegistry::get().find(fn->name)) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE,
                 fmt::format("no emulated kernel is registered under the name \"{}\" any more",
                             fn->name));
  }
  // The buffer is copied now, so that the thread may build the next launch at once.
  auto bytes = std::make_shared<const std::vector<uint8_t>>(args->bytes);
  const Accessor who = rt_.accessor_for(device);
  const int user = rt_.user_device(device);
  memops::MemoryOps* memory = &rt_.memory_ops();
  const HostRegistrations* registrations = &rt_.host_registrations();
  stream->enqueue([name = fn->name, blocks = l.blocks, bytes, who, user, memory,
                   registrations]() -> Status {
    // The implementation registered under the name when the stream reaches the kernel.
    std::optional<NamedKernel> kernel = KernelRegistry::get().find(name);
    if (!kernel) {
      return Error(ACL_ERROR_RT_INVALID_HANDLE,
                   fmt::format("emulated kernel \"{}\" was unregistered before the stream reached "
                               "it",
                               name));
    }
    return run_emulated_kernel(who, memory, user, registrations, [&](aclvmmKernelContext* ctx) {
      kernel->func(ctx, blocks, bytes->data(), bytes->size(), kernel->user_data);
    });
  });
  return Status::Ok();
}

std::vector<std::string> Kernels::release_all() {
  std::vector<std::string> paths;
  for (auto& [token, binary] : binaries_.snapshot()) {
    paths.push_back(binary->path);
    (void)unload(token);
  }
  return paths;
}

}  // namespace aclvmm
