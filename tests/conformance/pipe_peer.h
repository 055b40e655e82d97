// The second process of the sharing cases (PeerProcess, harness.h) as every harness with real
// processes makes it: a forked child that opens a backend of its own and obeys the parent's
// calls, one fixed-size message each way over two pipes. What differs per backend is only the
// child's body (how it opens its backend and reaches the bytes of an import): `Serve`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "conformance/harness.h"

namespace aclvmm::conformance::pipe_peer {

enum class Op : uint32_t {
  kImport,
  kRead,
  kFill,
  kSetPids,
  kExportNew,
  kImportKey,
  kSetKeyPids,
  kCloseKey,
  kExit
};

struct Call {
  Op op;
  int32_t device;
  uint64_t token;
  uint64_t offset;
  uint64_t size;
  int32_t pid;
  uint8_t value;
  dev::IpcKey key;
};

struct Answer {
  int32_t result;
  uint64_t value;  // a token, an offset, or (the first answer) the peer's pid for set_pids
  uint8_t bytes[256];
};

bool read_all(int fd, void* p, size_t n);
bool write_all(int fd, const void* p, size_t n);

// The child's body: first writes one Answer to `out` (result: its backend's open, value: the pid
// another process whitelists it by), then serves Calls from `in` until kExit or the parent goes,
// and ends the process without returning.
using Serve = std::function<void(int in, int out)>;

// Forks with `current`'s fork hooks around it (as the core's atfork handlers call them; the
// child then never touches `current` again), runs `serve` in the child and waits for its first
// answer. nullptr when a pipe, the fork or the child's backend failed.
std::unique_ptr<PeerProcess> start(dev::DeviceBackend& current, const Serve& serve);

}  // namespace aclvmm::conformance::pipe_peer
