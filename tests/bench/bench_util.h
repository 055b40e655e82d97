// Shared pieces of the benchmarks: sizes, property structs, a fast random sequence and the
// check that turns a failed call into a skipped benchmark instead of a wrong number.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "acl/acl.h"

namespace bench {

constexpr size_t k4K = 4u << 10;
constexpr size_t k2M = 2u << 20;
constexpr size_t k64M = 64u << 20;
constexpr size_t k1G = 1u << 30;

inline aclrtPhysicalMemProp device_prop(aclrtMemAttr attr = ACL_HBM_MEM_HUGE) {
  aclrtPhysicalMemProp p{};
  p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  p.memAttr = attr;
  p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  return p;
}

inline aclrtPhysicalMemProp host_prop() {
  aclrtPhysicalMemProp p = device_prop(ACL_MEM_HUGE);
  p.location.type = ACL_MEM_LOCATION_TYPE_HOST;
  return p;
}

// The same cheap generator drives a library loop and its baseline, so neither pays more for
// picking addresses than the other.
struct XorShift {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// CI's smoke run (bench.smoke sets ACLVMM_BENCH_SMOKE=1) runs every benchmark once to keep it
// working; the few whose size is the point of the measurement (gigabytes, 64 processes) run small
// there, under the same names.
inline bool smoke() {
  const char* v = std::getenv("ACLVMM_BENCH_SMOKE");
  return v != nullptr && v[0] == '1';
}

// Every thread that touches device memory needs a current device (contexts are per thread).
inline bool ensure_device() { return aclrtSetDevice(0) == ACL_SUCCESS; }

// false (and the benchmark marked skipped) when `rc` is not ACL_SUCCESS.
inline bool ok(benchmark::State& state, aclError rc, const char* what) {
  if (rc == ACL_SUCCESS) return true;
  state.SkipWithError((std::string(what) + " failed with " + std::to_string(rc)).c_str());
  return false;
}

}  // namespace bench
