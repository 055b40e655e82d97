// The reference model of the fuzz harness: what the process holds after each call, derived from
// behavior.md and emulation.md only (never from the library's internals), and what each call is
// therefore expected to return.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace fuzz {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kTiB = 1ull << 40;
constexpr uint64_t kChunk = 2 * kMiB;
constexpr int kDevices = 2;                     // ACLVMM_DEVICE_COUNT
constexpr uint64_t kDeviceMemory = 128 * kMiB;  // ACLVMM_DEVICE_MEMORY
constexpr uint64_t kShadow = 256 * 1024;        // bytes of each memory the model tracks
constexpr uint64_t kHostPage = 4096;

// Codes (behavior.md §0).
constexpr int kOk = 0, kParam = 100000, kRtParam = 107000, kBadDevice = 107001,
              kBadHandle = 107017, kNotSupported = 207000, kNoMemory = 207001, kDrv = 507899;

// Sides of physical memory (behavior.md §1).
enum Side { kDeviceSide = 0, kHostSide = 1, kNumaSide = 2 };

// The bytes of one piece of memory, shared by every handle and mapping that reaches it. Only the
// first kShadow bytes are tracked; fresh memory reads as zeros (emulation.md §2).
struct Mem {
  uint64_t size = 0;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> known;  // 1: bytes[i] is what the memory holds
  explicit Mem(uint64_t s)
      : size(s), bytes(s < kShadow ? s : kShadow, 0), known(bytes.size(), 1) {}
};

struct Handle {
  uint64_t token = 0;
  int ref = 1, map_ref = 0;  // the vendor counts (behavior.md §1, §3, §6)
  uint64_t size = 0;         // rounded
  int side = kDeviceSide;
  int device = 0;            // device (device side; the importing device for imports), NUMA node
  int reported = -1;         // imports: the exporter's device, which property queries report
  int page = 1, mem = 0;     // page type, memory type
  bool imported = false;
  bool charged = false;      // holds kDeviceMemory capacity of `device` while it lives
  std::shared_ptr<Mem> data;
};

struct Access {
  int host = 0;
  int dev[kDevices] = {0, 0};
};

struct Mapping {
  uint64_t va = 0, size = 0;
  uint64_t handle = 0;
  int side = kDeviceSide, device = 0;
  Access access;
  std::shared_ptr<Mem> data;
};

enum class Kind { kReservation, kMalloc, kPinned, kManaged, kHostBuffer };

struct Region {
  Kind kind = Kind::kReservation;
  uint64_t base = 0, size = 0, span = 0;
  bool bound = false;  // a reservation's location is fixed by its first mapping
  int bound_side = 0, bound_device = 0;
  int device = -1;       // aclrtMalloc owner
  uint32_t page_size = 0;
  std::shared_ptr<Mem> data;  // everything but reservations
  std::map<uint64_t, Mapping> maps;
};

// Where [va, va+n) lands: the pieces of memory a device operation reaches.
struct Piece {
  std::shared_ptr<Mem> data;
  uint64_t offset = 0, len = 0;
};

// What a call may return. `ok`: success allowed; `codes`: the failures allowed. A failure the
// model predicts (ok == false) must leave the observable state unchanged.
struct Expect {
  bool ok = true;
  std::vector<int> codes;
  static Expect Ok() { return {true, {}}; }
  static Expect Fail(int code) { return {false, {code}}; }
  static Expect OkOr(std::vector<int> c) { return {true, std::move(c)}; }
  bool allows(int rc) const;
};

struct Export {
  uint64_t token = 0;
  uint64_t handle = 0;
  bool validate_pids = true;
};

class Model {
 public:
  // Address windows, learned at start-up (they move under sanitizers, emulation.md §3).
  uint64_t svm_begin = 0, svm_general = 0, svm_end = 0;
  uint64_t uvm_begin = 0, uvm_end = 0;
  uint64_t host_begin = 0, host_end = 0;
  int numa_nodes = 0;  // 0: HOST_NUMA memory is not supported here
  uint64_t host_limit = 4 * kGiB;  // host physical bytes certain to fit

  std::vector<Handle> handles;          // live, in creation order
  std::map<uint64_t, Region> regions;   // by base: everything except the host buffers
  std::vector<Region> buffers;          // the harness's own host buffers (plain process memory)
  std::vector<Export> exports;
  std::map<std::pair<uint64_t, int>, uint64_t> imports;  // (token, device) -> handle
  std::vector<uint64_t> streams;
  int current = 0;                      // current device
  bool peer[kDevices][kDevices] = {};   // peer[a][b]: device a reaches b's aclrtMalloc memory
  // Stale values: released handles, addresses, streams and share tokens.
  std::vector<uint64_t> stale_handles, stale_addrs, stale_streams, stale_tokens;

  void reset_objects();
  Handle* handle(uint64_t token);
  // The handle's references dropped to zero: it goes, with its exports and import records.
  void drop_handle(uint64_t token);
  Export* export_of_handle(uint64_t token);
  Export* export_by_token(uint64_t token);

  // The region containing va (its span), or nullptr; the host buffers count as regions.
  Region* region_at(uint64_t va);
  Mapping* mapping_at(Region& r, uint64_t va);
  bool in_windows(uint64_t va) const;
  bool in_uvm(uint64_t va) const { return va - uvm_begin < uvm_end - uvm_begin; }

  // Device-side access check of memcpy/memset on [va, va+n) by the current device.
  // Returns the code it must fail with (0: allowed) and fills the pieces on success.
  int device_access(uint64_t va, uint64_t n, bool write, std::vector<Piece>* out);
  bool managed_pages(uint64_t va, uint64_t n);

  uint64_t device_fixed_used(int device) const;  // handles and aclrtMalloc blocks
  uint64_t host_used() const;
  uint64_t managed_bytes() const;
  // First-fit of a range of `span` bytes aligned to `align` in the general device window.
  bool svm_fits(uint64_t span, uint64_t align) const;
  bool svm_free(uint64_t base, uint64_t span) const;
  size_t count(Kind kind) const;
  size_t mapping_count() const;
};

Model& model();

uint64_t round_up(uint64_t v, uint64_t a);
// round_up that reports overflow.
bool round_up_ok(uint64_t v, uint64_t a, uint64_t* out);

}  // namespace fuzz
