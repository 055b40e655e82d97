#include "observability/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <vector>

#include "base/lock_rank.h"

namespace aclvmm::trace {
namespace {

struct Event {
  const char* name;
  uint64_t address;
  int device;
  int64_t micros;
  long tid;
};

constexpr size_t kMaxEvents = 1 << 20;  // a bounded recording; later events are dropped

RankedMutex<LockRank::kTrace> g_mu;
std::atomic<bool> g_on{false};
std::string g_path;
std::vector<Event> g_events;
uint64_t g_dropped = 0;
const auto g_epoch = std::chrono::steady_clock::now();

}  // namespace

void open(const std::string& path) {
  std::lock_guard lock(g_mu);
  g_path = path;
  g_events.clear();
  g_dropped = 0;
  g_on.store(!path.empty());
}

bool enabled() { return g_on.load(std::memory_order_relaxed); }

void event(const char* name, uint64_t address, int device) {
  if (!enabled()) return;
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - g_epoch)
                         .count();
  const long tid = static_cast<long>(syscall(SYS_gettid));
  std::lock_guard lock(g_mu);
  if (g_events.size() >= kMaxEvents) {
    ++g_dropped;
    return;
  }
  g_events.push_back({name, address, device, us, tid});
}

void flush() {
  std::lock_guard lock(g_mu);
  if (g_path.empty()) return;
  FILE* f = fopen(g_path.c_str(), "w");
  if (!f) return;
  fprintf(f, "{\"traceEvents\": [\n");
  const int pid = getpid();
  for (size_t i = 0; i < g_events.size(); ++i) {
    const Event& e = g_events[i];
    fprintf(f,
            "  {\"name\": \"%s\", \"cat\": \"managed\", \"ph\": \"i\", \"s\": \"t\", \"ts\": %lld, "
            "\"pid\": %d, \"tid\": %ld, \"args\": {\"page\": \"0x%llx\", \"device\": %d}}%s\n",
            e.name, static_cast<long long>(e.micros), pid, e.tid,
            static_cast<unsigned long long>(e.address), e.device,
            i + 1 < g_events.size() ? "," : "");
  }
  fprintf(f, "], \"otherData\": {\"dropped_events\": %llu}}\n",
          static_cast<unsigned long long>(g_dropped));
  fclose(f);
}

void hold_for_fork() { g_mu.lock(); }
void release_after_fork() { g_mu.unlock(); }

}  // namespace aclvmm::trace
