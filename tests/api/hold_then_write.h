// A kernel that holds its stream until the test releases it (or 5 s pass), then writes `n`
// bytes of `value` at `dst` (if any) and says it finished: what the stream abort and timed
// synchronisation tests queue work behind (fork_test_util.h's HoldGate only holds).
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "aclvmm/aclvmm.h"

namespace aclvmm_test {

struct HoldThenWrite {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> finished{false};
  char* dst = nullptr;
  char value = 0;
  size_t n = 0;
  std::atomic<aclError> write_rc{-1};
};

inline void hold_then_write_kernel(aclvmmKernelContext* ctx, void* p) {
  auto* h = static_cast<HoldThenWrite*>(p);
  h->started.store(true);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!h->release.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (h->dst != nullptr) {
    const std::string buf(h->n, h->value);
    h->write_rc.store(aclvmmKernelWrite(ctx, h->dst, buf.data(), h->n));
  }
  h->finished.store(true);
}

}  // namespace aclvmm_test
