// The chunk index changes no answer: two AddressSpaces over the emu backend, one whose backend
// gives the index its table and one whose backend gives none (every query then takes the trees),
// get the same reservations, mappings and aclrtMalloc blocks, and pointer_info / address_range
// must agree on every probe address (kind, device, page size, range, or the same error code),
// before and after unmaps, removals and clear(). A third space whose table allocation fails
// through failure injection ("dev.host.allocate_table") must agree as well. The table is the
// device backend's host memory (HostServices::allocate_table), switched by a forwarding backend.
//
// The spaces share the emu backend's windows (one claim per process, drivers/emu/device/
// windows.h), so they run their scenarios one after the other: the second starts from the free
// ranges the first gave back at its clear() and gets the same addresses; each phase's answers
// are recorded and compared.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "drivers/injection_steps.h"
#include "unit/testing/forwarding_backend.h"
#include "unit/testing/test_device.h"
#include "vmm/address_space.h"
#include "vmm/physical.h"

namespace aclvmm {
namespace {

constexpr uint64_t kSvmSize = 8 * kTiB;  // the device window (the index covers it)
constexpr uint64_t kHostSize = 1 * kTiB; // the host-pinned window

// The emu device backend's host services with the table allocation switched on or off,
// remembering the table.
class TableSwitchHost final : public testing::ForwardingHost {
 public:
  TableSwitchHost(dev::HostServices& inner, bool give_table)
      : ForwardingHost(inner), give_table_(give_table) {}
  const std::atomic<uint64_t>* table() const { return table_; }
  int table_requests() const { return table_requests_; }

  void* allocate_table(uint64_t bytes) override {
    ++table_requests_;
    if (!give_table_) return nullptr;
    table_ = static_cast<std::atomic<uint64_t>*>(ForwardingHost::allocate_table(bytes));
    return table_;
  }

 private:
  const bool give_table_;
  std::atomic<uint64_t>* table_ = nullptr;
  int table_requests_ = 0;
};

// The test device (emu behind the injection decorator) with that host.
class TableSwitchDevice final : public testing::ForwardingBackend {
 public:
  TableSwitchDevice(const std::shared_ptr<dev::DeviceBackend>& inner, bool give_table)
      : ForwardingBackend(inner), host_(inner->host(), give_table) {}
  dev::HostServices& host() override { return host_; }
  TableSwitchHost& probe() { return host_; }

 private:
  TableSwitchHost host_;
};

// One address space with its device backend (`probe` is the host services it asks for the
// table).
struct Space {
  TableSwitchHost* probe = nullptr;
  std::shared_ptr<dev::DeviceBackend> device;
  std::unique_ptr<AddressSpace> as;
  uint64_t svm = 0, host = 0;

  // The same address written as "window+offset", so that both spaces' answers compare equal.
  std::string where(uint64_t a) const {
    std::ostringstream s;
    if (a - svm < kSvmSize) {
      s << "svm+0x" << std::hex << a - svm;
    } else if (a - host < kHostSize) {
      s << "host+0x" << std::hex << a - host;
    } else {
      s << "0x" << std::hex << a;
    }
    return s.str();
  }
  // The index word of the chunk holding `a` (0 without a table).
  uint64_t index_word(uint64_t a) const {
    const auto* t = probe->table();
    return t ? t[(a - svm) / kChunk].load() : 0;
  }
};

Space make_space(bool give_table) {
  Space s;
  auto device = std::make_shared<TableSwitchDevice>(testing::open_test_device(), give_table);
  s.probe = &device->probe();
  s.device = device;
  s.as = std::make_unique<AddressSpace>();
  s.as->attach_device(s.device);
  const dev::WindowLayout& layout = s.device->windows().layout();
  EXPECT_EQ(layout.device.size, kSvmSize);
  EXPECT_EQ(layout.host_pinned.size, kHostSize);
  s.svm = layout.device.base;
  s.host = layout.host_pinned.base;
  EXPECT_NE(s.svm, 0u);
  EXPECT_NE(s.host, 0u);
  return s;
}

std::shared_ptr<PhysicalAllocation> phys(Space& s, Side side, int device, uint64_t size,
                                         PageType page = kHugePage) {
  auto p = std::make_shared<PhysicalAllocation>();
  p->side = side;
  p->device = device;
  p->page_type = page;
  p->size = size;
  testing::create_in(s.device, *p);
  return p;
}

// What the two queries say about one address, as text (addresses normalised by Space::where).
std::string answer(const Space& s, uint64_t a) {
  std::ostringstream out;
  const size_t host_page = 4096;
  auto info = s.as->pointer_info(a, host_page);
  if (info.ok()) {
    out << "info kind " << info->kind << " device " << info->device << " page " << info->page_size;
  } else {
    out << "info error " << info.status().code();
  }
  auto range = s.as->address_range(a);
  if (range.ok()) {
    out << "; range " << s.where(range->base) << " size 0x" << std::hex << range->size;
  } else {
    out << "; range error " << std::dec << range.status().code();
  }
  return out.str();
}

// Probe addresses around [va, va+size): both ends, the middle, chunk edges, one past the end.
void probe_object(std::vector<uint64_t>* out, uint64_t va, uint64_t size) {
  for (uint64_t off : {uint64_t{0}, uint64_t{1}, size / 2, size - 1, size, size + 1}) {
    out->push_back(va + off);
  }
  if (size > kChunk) {
    out->push_back(va + kChunk - 1);
    out->push_back(va + kChunk);
    const uint64_t whole = size / kChunk * kChunk;  // the first byte of a partial last chunk
    out->push_back(va + whole - 1);
    out->push_back(va + whole);
  }
}

// What both spaces get; fills `probes` with the addresses worth asking about.
struct Scenario {
  uint64_t r_small = 0, r_multi = 0, r_host = 0, r_giant = 0;
  uint64_t m_4k = 0, m_odd = 0, m_2m = 0, m_big = 0, m_1g = 0, pinned = 0;
  std::vector<uint64_t> probes;
};

uint64_t must(const StatusOr<uint64_t>& r, const char* what) {
  EXPECT_TRUE(r.ok()) << what << ": " << r.status().code() << " " << r.status().message();
  return r.ok() ? *r : 0;
}

void must_ok(const Status& st, const char* what) {
  EXPECT_TRUE(st.ok()) << what << ": " << st.code() << " " << st.message();
}

Scenario build(Space& s) {
  Scenario c;
  AddressSpace& as = *s.as;
  // Reservations and VMM mappings: one 2 MiB device mapping; a 16 MiB reservation with a 6 MiB
  // (three-chunk) and a 4 MiB mapping of device 1 and unmapped gaps; a host handle; a 1 GiB-page
  // handle. (A device the index word cannot encode is chunk_index_test.cpp's: no backend has one.)
  c.r_small = must(as.reserve(2 * kMiB, 0, false, "test"), "reserve 2M");
  must_ok(as.map(c.r_small, 2 * kMiB, 1, phys(s, Side::kDevice, 0, 2 * kMiB), false), "map 2M");
  c.r_multi = must(as.reserve(16 * kMiB, 0, false, "test"), "reserve 16M");
  must_ok(as.map(c.r_multi, 6 * kMiB, 2, phys(s, Side::kDevice, 1, 6 * kMiB), false), "map 6M");
  must_ok(as.map(c.r_multi + 8 * kMiB, 4 * kMiB, 3, phys(s, Side::kDevice, 1, 4 * kMiB), false),
          "map 4M");
  c.r_host = must(as.reserve(4 * kMiB, 0, false, "test"), "reserve host");
  must_ok(as.map(c.r_host, 4 * kMiB, 4, phys(s, Side::kHost, 0, 4 * kMiB), false), "map host");
  c.r_giant = must(as.reserve(kGiB + 2 * kMiB, 0, false, "test"), "reserve 1G+2M");
  must_ok(as.map(c.r_giant, kGiB, 5, phys(s, Side::kDevice, 2, kGiB, kHuge1GPage), false),
          "map 1G");
  // aclrtMalloc blocks of every shape: below a chunk, a partial last chunk, exactly one chunk,
  // a block that owns 1 GiB heaps (its range is the heap), one with 1 GiB pages.
  c.m_4k = must(testing::add_device_block(as, 4096, 4000, 4096, 0, phys(s, Side::kDevice, 0, 4096)), "4K");
  const uint64_t odd = 3 * kMiB + 123;
  c.m_odd = must(testing::add_device_block(as, odd, odd, 2 * kMiB, 1, phys(s, Side::kDevice, 1, odd)), "odd");
  c.m_2m = must(testing::add_device_block(as, 2 * kMiB, 2 * kMiB - 64, 2 * kMiB, 3,
                                     phys(s, Side::kDevice, 3, 2 * kMiB)), "2M");
  const uint64_t big = kGiB + 3 * kMiB;
  c.m_big = must(testing::add_device_block(as, big, big, 2 * kMiB, 0, phys(s, Side::kDevice, 0, big)), "big");
  c.m_1g = must(testing::add_device_block(as, kGiB, kGiB, static_cast<uint32_t>(kGiB), 2,
                                     phys(s, Side::kDevice, 2, kGiB)), "1G");
  c.pinned = must(testing::add_host_block(as, 64 * 1024, 64 * 1024, phys(s, Side::kHost, 0, 64 * 1024)),
                  "pinned");

  probe_object(&c.probes, c.r_small, 2 * kMiB);
  probe_object(&c.probes, c.r_multi, 6 * kMiB);
  probe_object(&c.probes, c.r_multi + 8 * kMiB, 4 * kMiB);
  probe_object(&c.probes, c.r_multi, 16 * kMiB);  // the reservation's own edges and gaps
  probe_object(&c.probes, c.r_host, 4 * kMiB);
  probe_object(&c.probes, c.r_giant, kGiB);
  probe_object(&c.probes, c.r_giant, 2 * kGiB);  // past the usable size, inside the span
  probe_object(&c.probes, c.m_4k, 4096);
  probe_object(&c.probes, c.m_odd, odd);
  probe_object(&c.probes, c.m_2m, 2 * kMiB);
  probe_object(&c.probes, c.m_big, big);
  probe_object(&c.probes, c.m_big, 2 * kGiB);  // the heap's last byte and the byte after it
  probe_object(&c.probes, c.m_1g, kGiB);
  probe_object(&c.probes, c.pinned, 64 * 1024);
  // Outside every object: the device window's first and last bytes (never allocated) and plain
  // process memory. (Not the bytes just outside the windows: the second space's windows were
  // placed by the kernel, next to each other, so what lies there differs between the spaces.)
  static int process_memory;
  for (uint64_t a : {s.svm, s.svm + kSvmSize - 1, uint64_t{0x10},
                     reinterpret_cast<uint64_t>(&process_memory)}) {
    c.probes.push_back(a);
  }
  return c;
}

// What a space answers at every probe of its scenario.
std::vector<std::string> answers(const Space& s, const Scenario& c) {
  std::vector<std::string> out;
  for (uint64_t p : c.probes) out.push_back(s.where(p) + ": " + answer(s, p));
  return out;
}

// Every probe answers the same in both spaces (and is the same address).
void expect_same_answers(const std::vector<std::string>& indexed,
                         const std::vector<std::string>& trees, const char* phase) {
  ASSERT_EQ(indexed.size(), trees.size()) << phase;
  int differ = 0;
  for (size_t i = 0; i < indexed.size(); ++i) {
    if (indexed[i] != trees[i] && ++differ <= 20) {
      ADD_FAILURE() << phase << ":\n  indexed: " << indexed[i] << "\n  trees:   " << trees[i];
    }
  }
  EXPECT_EQ(differ, 0) << phase;
}

// Phase 2: unmaps, removals and a new mapping in a gap, the same in both spaces.
void change(Space& s, Scenario& c) {
  AddressSpace& as = *s.as;
  EXPECT_TRUE(as.unmap(c.r_small).ok());
  EXPECT_TRUE(as.unmap(c.r_multi).ok());
  EXPECT_TRUE(as.remove_allocation(c.m_odd, RegionKind::kDeviceMalloc).ok());
  EXPECT_TRUE(as.remove_allocation(c.m_big, RegionKind::kDeviceMalloc).ok());
  must_ok(as.map(c.r_multi + 6 * kMiB, 2 * kMiB, 7, phys(s, Side::kDevice, 1, 2 * kMiB), false),
          "map into the gap");
  // A new block may take a freed range: its answers must replace the old ones.
  c.m_odd = must(testing::add_device_block(as, 5 * kMiB, 5 * kMiB, 4096, 1, phys(s, Side::kDevice, 1, 5 * kMiB)),
                 "re-malloc");
  probe_object(&c.probes, c.m_odd, 5 * kMiB);
}

class AddressSpaceIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    indexed_ = make_space(true);
    trees_ = make_space(false);
    ASSERT_NE(indexed_.probe->table(), nullptr) << "the emu backend gave no table";
    ASSERT_EQ(trees_.probe->table(), nullptr);
    ASSERT_EQ(trees_.probe->table_requests(), 1);
  }
  void TearDown() override {
    // Regions (and their CPU mappings) go before the windows.
    for (Space* s : {&indexed_, &trees_}) {
      if (s->as) s->as->clear();
      s->as.reset();
      s->device.reset();
    }
  }
  Space indexed_, trees_;
};

TEST_F(AddressSpaceIndex, QueriesAgreeWithAndWithoutTheIndex) {
  Scenario a = build(indexed_);
  ASSERT_FALSE(HasFailure());
  // The index really answers: the mapped and malloc'ed chunks hold entries; gaps and partial
  // last chunks do not.
  EXPECT_NE(indexed_.index_word(a.r_small), 0u);
  EXPECT_NE(indexed_.index_word(a.r_multi + 5 * kMiB), 0u);
  EXPECT_EQ(indexed_.index_word(a.r_multi + 6 * kMiB), 0u);   // reserved, not mapped
  EXPECT_NE(indexed_.index_word(a.m_odd), 0u);
  EXPECT_EQ(indexed_.index_word(a.m_odd + 2 * kMiB), 0u);     // the partial last chunk
  EXPECT_EQ(indexed_.index_word(a.m_4k), 0u);                 // less than one chunk
  EXPECT_NE(indexed_.index_word(a.m_big + kGiB), 0u);
  EXPECT_EQ(indexed_.index_word(a.m_big + kGiB + 2 * kMiB), 0u);
  const std::vector<std::string> a_mapped = answers(indexed_, a);

  change(indexed_, a);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(indexed_.index_word(a.r_small), 0u);  // unmapped
  EXPECT_EQ(indexed_.index_word(a.r_multi), 0u);
  EXPECT_NE(indexed_.index_word(a.r_multi + 6 * kMiB), 0u);
  const std::vector<std::string> a_changed = answers(indexed_, a);

  // clear() (aclFinalize) drops everything; no entry may survive it.
  indexed_.as->clear();
  for (uint64_t p : a.probes) {
    if (p - indexed_.svm < kSvmSize) {
      EXPECT_EQ(indexed_.index_word(p), 0u) << indexed_.where(p);
    }
  }
  const std::vector<std::string> a_cleared = answers(indexed_, a);

  Scenario b = build(trees_);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(a_mapped.size(), b.probes.size());
  expect_same_answers(a_mapped, answers(trees_, b), "after mapping");
  change(trees_, b);
  ASSERT_FALSE(HasFailure());
  expect_same_answers(a_changed, answers(trees_, b), "after unmap and removal");
  trees_.as->clear();
  expect_same_answers(a_cleared, answers(trees_, b), "after clear");
}

// A failed table allocation (injection step dev.host.allocate_table, failed by the device
// backend's decorator) leaves the space on its trees, with the same answers.
TEST_F(AddressSpaceIndex, FailedTableAllocationAnswersTheSame) {
  testing::test_device_listener().arm(dev::steps::kHostTable, 1, 12);
  Space failed = make_space(true);
  const bool left = testing::test_device_listener().armed(dev::steps::kHostTable);
  testing::test_device_listener().arm(dev::steps::kHostTable, 0, 0);
  EXPECT_FALSE(left) << "the injection step was not consulted";
  EXPECT_EQ(failed.probe->table_requests(), 1);
  EXPECT_EQ(failed.probe->table(), nullptr) << "the allocation went past the failed step";
  Scenario a = build(indexed_);
  ASSERT_FALSE(HasFailure());
  const std::vector<std::string> indexed = answers(indexed_, a);
  indexed_.as->clear();
  Scenario f = build(failed);
  ASSERT_FALSE(HasFailure());
  expect_same_answers(indexed, answers(failed, f), "failed table");
  failed.as->clear();
  failed.as.reset();
  failed.device.reset();
}

}  // namespace
}  // namespace aclvmm
