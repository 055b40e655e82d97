// The backend conformance suite (docs/device-interface.md §9): one set of device-level cases,
// run over every backend through a small harness that does what only a backend's own test can
// (look at physical bytes as the CPU would, tell whether a segment's name is visible, count what
// the backend holds of the machine). A case a capability rules out skips naming the capability
// (GTEST_SKIP), never silently; within a case, what the capabilities rule out is checked as the
// refusal it must be (C11: kGiant, kHostNuma).
//
// Each case gets a fresh backend, opened as the core opens it (behind the injection decorator),
// reporting to a RecordingListener that arms "dev.*" rules directly.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "drivers/device_backend.h"
#include "unit/testing/recording_listener.h"

namespace aclvmm::conformance {

// The machine a case wants (software backends build it; hal's fake driver library is configured
// once per process, so hal gives only the machine of the first case: Harness::unavailable).
struct BackendSetup {
  int32_t device_count = 2;
  uint64_t device_memory = 64 * dev::kMiB;
  // Unified memory (C38, C43): false asks for a machine that refuses residency tracking, which
  // only a configurable backend gives (fake); the others keep what their machine has.
  bool managed_residency = true;
};

// A second process for the sharing cases (C29-C36): emu forks a child that opens a backend of
// its own and obeys these calls over a pipe; fake opens a second backend in its world. Each
// call returns what the peer's backend answered.
class PeerProcess {
 public:
  virtual ~PeerProcess() = default;
  // The peer's bare tgid, as set_pids takes it.
  virtual int32_t pid() = 0;
  // Imports `token` onto `device`; the peer keeps the memory (one import at a time).
  virtual dev::Result import(dev::ShareToken token, dev::DeviceIndex device) = 0;
  // The bytes of the peer's import.
  virtual dev::Result read(uint64_t offset, void* dst, size_t n) = 0;
  virtual dev::Result fill(uint64_t offset, size_t n, uint8_t value) = 0;
  virtual dev::Result set_pids(dev::ShareToken token, int32_t pid) = 0;
  // New device memory of `size` bytes filled with `value`, exported and `pid` whitelisted.
  virtual dev::Result export_new(dev::DeviceIndex device, uint64_t size, uint8_t value,
                                 int32_t pid, dev::ShareToken* out) = 0;
  // IPC keys (C51-C55): imports `key` onto `device` in place of the earlier import; *offset is
  // where the key's range lies in the imported memory (read and fill address that memory).
  virtual dev::Result import_key(const dev::IpcKey& key, dev::DeviceIndex device,
                                 uint64_t* offset) = 0;
  virtual dev::Result set_key_pids(const dev::IpcKey& key, int32_t pid) = 0;
  virtual dev::Result close_key(const dev::IpcKey& key) = 0;
  // The process ends (without releasing anything); returns when it is gone.
  virtual void exit() = 0;
};

// How a backend differs from emu and fake where its driver's specification allows it (hal:
// /work/shared/spec/hal.md), for the checks that depend on it: a case reads these, never a
// backend's name. The defaults are emu's and fake's; a harness that changes one says why.
struct DriverTraits {
  // Conditions of refusals a driver words in its own, coarser codes.
  // The kernel's EACCES: an import not on the whitelist, set_pids by another process than the
  // exporter, an own export imported onto its own device.
  dev::Condition not_permitted = dev::Condition::kNotPermitted;
  // DeviceMmu::query inside a reservation where nothing is mapped.
  dev::Condition unmapped_query = dev::Condition::kNotFound;
  // advise / attribute / prefetch of a range that no managed allocation holds.
  dev::Condition outside_managed = dev::Condition::kBadAddress;
  // A copy that meets memory that is not mapped (any more). Where the copy engine does not
  // check ranges itself (Capabilities::copies_check_access false) it names no side either.
  dev::Condition copy_fault = dev::Condition::kBadAddress;
  // What the driver does not tell or do.
  bool devices_open = false;         // the harness opened every device before the case
  bool memory_in_properties = true;  // DeviceProperties::memory_total
  bool peer_links_reported = true;   // can_access_peer answers the links enable_peer made
  bool every_route = true;           // set_map_route knows every route (kMapRouteCount)
  bool fabric_needs_server_id = false;  // export_fabric needs DeviceProperties::server_id
  bool map_offsets = true;           // DeviceMmu::map at an offset into the memory
  bool import_sizes = true;          // ImportedMemory::properties.size
  // Blocks name their physical object (Block::memory) and the span they take from the window,
  // and a query's range is the requested size.
  bool block_objects = true;
  bool host_registration = true;     // DeviceMmu::register_host
};

class Harness {
 public:
  virtual ~Harness() = default;
  // Why the harness cannot give a machine like `setup`, or "" when it can; the case then skips
  // with this reason (BackendTest::SetUp). hal: the fake driver library reads its machine from
  // the environment once per process, so the first call fixes it and other machines skip.
  virtual std::string unavailable(const BackendSetup& setup) {
    (void)setup;
    return "";
  }
  virtual dev::Result open(const BackendSetup& setup, dev::BackendListener* listener,
                           std::unique_ptr<dev::DeviceBackend>* out) = 0;
  // The bytes of a live physical object as the CPU would see them through a mapping.
  virtual dev::Result read_physical(dev::PhysicalId memory, uint64_t offset, void* dst,
                                    size_t n) = 0;
  virtual dev::Result write_physical(dev::PhysicalId memory, uint64_t offset, const void* src,
                                     size_t n) = 0;
  // A directory statistics segments can be created in, and one that does not exist.
  virtual std::string segment_dir() = 0;
  virtual std::string missing_dir() = 0;
  // Whether a monitor would find a segment under `path`.
  virtual bool segment_visible(const std::string& path) = 0;
  // The pid and uid a segment's owner reports and its name carries.
  virtual int32_t own_pid() = 0;
  virtual uint32_t own_uid() = 0;
  // What the backend holds of the machine, comparable before and after a case (emu: the open
  // descriptors; fake: its live objects).
  virtual std::string held_resources() = 0;
  // What the process holds of the machine, comparable with no backend open (C48): emu: the open
  // descriptors, segment files, memfd mappings (CPU views) and threads; fake: threads and its world's
  // exports of this process (the fake's objects live inside the backend).
  virtual std::string machine_resources() = 0;
  // A range of `size` bytes (1 GiB aligned) the backend may map into, for the MMU cases, kept
  // until the harness goes. The harness makes it apart from the backend's windows (so the MMU
  // cases test the MMU alone): emu claims a placeholder of its own; fake hands out numbers
  // below the general part of its device window.
  virtual uint64_t reserve_va(uint64_t size) = 0;
  // The CPU touching [va, va+n) as a thread of the process would: reads into or writes from
  // `buffer`. kBadAddress (-EFAULT) where the CPU faults (emu: the touch is tried in a forked
  // child first, so a fault ends the child, not the suite; fake: its cpu_access hook).
  virtual dev::Result cpu_access(uint64_t va, void* buffer, size_t n, bool write) = 0;
  // A second process with a backend set up like `setup`; nullptr when the harness has none.
  // `current` is the case's backend: a forked child must drop what it inherits of it (its fork
  // hooks, as the core calls them).
  virtual std::unique_ptr<PeerProcess> start_peer(const BackendSetup& setup,
                                                  dev::DeviceBackend& current) = 0;
  // The pid the next start_peer() will have, or 0 when it cannot be known in advance (emu: the
  // kernel picks it). C30 lists it before the process starts.
  virtual int32_t next_peer_pid() { return 0; }
  // How the backend's driver differs from emu and fake (DriverTraits); emu and fake: none.
  virtual const DriverTraits& traits() {
    static const DriverTraits defaults;
    return defaults;
  }
};

struct HarnessFactory {
  const char* name;
  std::unique_ptr<Harness> (*make)();
};

// gtest prints a failing case's parameter with this: the backend's name.
inline void PrintTo(const HarnessFactory& factory, std::ostream* os) { *os << factory.name; }

// emu, fake and hal (over the fake driver library libascend_hal.so).
const std::vector<HarnessFactory>& harnesses();

std::unique_ptr<Harness> make_emu_harness();
std::unique_ptr<Harness> make_fake_harness();
std::unique_ptr<Harness> make_hal_harness();
// emu_peer.cpp
std::unique_ptr<PeerProcess> start_emu_peer(const BackendSetup& setup, dev::DeviceBackend& current);

// The fixture of every case: a fresh backend per test.
class BackendTest : public ::testing::TestWithParam<HarnessFactory> {
 protected:
  void SetUp() override;
  void TearDown() override { backend_.reset(); }
  // What the suite's machine looks like; a suite overrides it.
  virtual BackendSetup setup() const { return BackendSetup{}; }

  dev::DeviceBackend& be() { return *backend_; }
  Harness& harness() { return *harness_; }
  // New physical memory of 2 MiB pages at `where` (HBM on a device, DDR on the host); a failed
  // create is a test failure and answers the null id.
  dev::PhysicalId create(dev::Location where, uint64_t size) {
    const bool device = where.kind == dev::Location::Kind::kDevice;
    dev::PhysicalSpec spec{where, dev::PageType::kHuge,
                           device ? dev::MemType::kHbm : dev::MemType::kDdr, size};
    dev::PhysicalId id;
    EXPECT_TRUE(be().physical().create(spec, &id).ok());
    return id;
  }

  testing::RecordingListener listener_;
  std::unique_ptr<Harness> harness_;
  std::unique_ptr<dev::DeviceBackend> backend_;
};

std::string harness_name(const ::testing::TestParamInfo<HarnessFactory>& info);

// The threads of this process (/proc/self/task), for machine_resources.
int thread_count();

}  // namespace aclvmm::conformance

// Runs every TEST_P of `suite` over every backend: Backends/<suite>.<case>/<backend>.
#define ACLVMM_CONFORMANCE_SUITE(suite)                                             \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                         \
                           ::testing::ValuesIn(::aclvmm::conformance::harnesses()), \
                           ::aclvmm::conformance::harness_name)
