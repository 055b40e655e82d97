// The statistics segment that every process using aclvmm publishes for aclvmm-smi (docs/smi.md).
//
// Written by runtime/smi_publisher.cpp, read by tools/aclvmm-smi, which include this header only:
// plain data without pointers, fixed sizes and offsets, so that any process can map any other
// process's file. A reader checks magic, version and size and skips what it does not know.
//
// Versions: 1 had no live counts (the 32 bytes at offset 96 were reserved, always zero); 2 adds
// them there. Nothing else moved, so a reader of version 2 lists a version-1 segment with zero
// counts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace aclvmm::smi {

inline constexpr const char* kDirEnv = "ACLVMM_SMI_DIR";  // "none": publish nothing
inline constexpr const char* kDefaultDir = "/dev/shm";
inline constexpr const char* kPrefix = "aclvmm";          // files <dir>/aclvmm.<uid>.<pid>
inline constexpr uint32_t kMagic = 0x534d5641u;           // "AVMS" in little-endian bytes
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kVersionWithoutLiveCounts = 1;  // still read: its counts are zeros
inline constexpr int kMaxDevices = 64;                    // = ACLVMM_DEVICE_COUNT's maximum

// The process's live objects (runtime-extra.md section 11), one counter each in Segment::live,
// at this index: the same numbers as aclvmmStatsJson's "live" keys of the same names.
enum class LiveCount : uint32_t {
  kIpcKeys = 0,            // "ipc_keys": keys exported (aclrtIpcMemGetExportKey) and not closed
  kIpcImports = 1,         // "ipc_imports": keys imported and not closed, each key counted once
  kHostRegistrations = 2,  // "host_registrations": aclrtHostRegister[V2] not yet undone
  kBinaries = 3,           // "binaries": aclrtBinaryLoadFromFile not yet unloaded
};
inline constexpr int kLiveCounts = 4;

// One emulated device as this process sees it. A whole cache line each: pools of different
// devices are charged by different threads and must not contend on one line.
struct alignas(64) DeviceStats {
  uint64_t total;              // HBM bytes of the device (ACLVMM_DEVICE_MEMORY / the SoC)
  std::atomic<uint64_t> used;  // bytes charged to the device by this process
};

struct Segment {
  uint32_t magic;
  uint32_t version;
  uint32_t size;          // sizeof(Segment)
  int32_t pid;
  uint64_t start_time;    // /proc/<pid>/stat starttime: tells a reused pid from this process
  uint32_t uid;
  int32_t device_count;   // entries of `devices` in use (physical device ids 0..count-1)
  char name[16];          // comm, NUL-terminated
  char soc[32];           // ACLVMM_SOC, NUL-terminated
  // 1 while the runtime is started; 0 after aclFinalize (the process lives on without using
  // aclvmm and is not listed). The file itself goes at process exit.
  std::atomic<uint32_t> active;
  uint32_t reserved0;
  uint64_t pid_namespace; // inode of the writer's /proc/self/ns/pid (0: unknown)
  // Version 2: indexed by LiveCount, written (a relaxed store of the new count) wherever a count
  // changes (observability/live_counts.h). Version 1: reserved, zero.
  std::atomic<uint64_t> live[kLiveCounts];
  DeviceStats devices[kMaxDevices];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "a counter shared between processes must not need a lock");
static_assert(sizeof(std::atomic<uint64_t>) == 8, "the layout has 8-byte counters");
static_assert(offsetof(Segment, active) == 80, "fixed layout");
static_assert(offsetof(Segment, pid_namespace) == 88, "fixed layout");
static_assert(offsetof(Segment, live) == 96 && sizeof(Segment::live) == 32,
              "the live counts fill version 1's reserved bytes");
static_assert(offsetof(Segment, devices) == 128, "the header is one fixed 128-byte block");
static_assert(sizeof(Segment) == 128 + 64 * kMaxDevices, "fixed layout");

}  // namespace aclvmm::smi
