// The fake library's configuration: the environment, read once per process at the first call
// (README.md lists the variables). A malformed value is one line on stderr and a library with no
// devices (drvGetDevNum reports 0), so a test harness sees the mistake instead of a default.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "drivers/emu/os/memory_recycler.h"
#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

struct Product {
  const char* name;
  bool prefix;  // any SoC name starting with `name`
  Family family;
  uint64_t memory;
};

// products.md: SoC name -> family and memory per device.
constexpr Product kProducts[] = {
    {"Ascend910B1", false, Family::kA2, 64 * kGiB},
    {"Ascend910B2", false, Family::kA2, 64 * kGiB},
    {"Ascend910B2C", false, Family::kA2, 64 * kGiB},
    {"Ascend910B3", false, Family::kA2, 64 * kGiB},
    {"Ascend910B4", false, Family::kA2, 32 * kGiB},
    {"Ascend910B4-1", false, Family::kA2, 32 * kGiB},
    {"Ascend910_9381", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9382", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9391", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9392", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9362", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9372", false, Family::kA3, 64 * kGiB},
    {"Ascend910_9363", false, Family::kA3, 32 * kGiB},
    {"Ascend950PR_9599", false, Family::k950, 128 * kGiB},
    {"Ascend950DT_9591", false, Family::k950, 144 * kGiB},
    {"Ascend950PR_", true, Family::k950, 128 * kGiB},
    {"Ascend950DT_", true, Family::k950, 128 * kGiB},
    {"Ascend310P1", false, Family::kInf, 24000000000ull},
    {"Ascend310P3", false, Family::kInf, 24000000000ull},
    {"Ascend310P5", false, Family::kInf, 24000000000ull},
    {"Ascend310P7", false, Family::kInf, 24000000000ull},
    {"Ascend310B1", false, Family::kEdge, 32 * kGiB},
    {"Ascend310B2", false, Family::kEdge, 32 * kGiB},
    {"Ascend310B3", false, Family::kEdge, 32 * kGiB},
    {"Ascend310B4", false, Family::kEdge, 32 * kGiB},
    {"Ascend910A", false, Family::kTrain, 32 * kGiB},
    {"Ascend910B", false, Family::kTrain, 32 * kGiB},  // no digit: the previous generation
    {"Ascend910ProA", false, Family::kTrain, 32 * kGiB},
    {"Ascend910ProB", false, Family::kTrain, 32 * kGiB},
    {"Ascend910PremiumA", false, Family::kTrain, 32 * kGiB},
};

const Product* find_product(const std::string& soc) {
  for (const Product& p : kProducts) {
    if (p.prefix ? soc.rfind(p.name, 0) == 0 && soc.size() > std::strlen(p.name) : soc == p.name) {
      return &p;
    }
  }
  return nullptr;
}

// An empty value counts as unset, as in the core's configuration.
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool parse_uint(const char* s, uint64_t* out) {
  if (*s == '\0' || std::strlen(s) > 20) return false;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (!std::isdigit(static_cast<unsigned char>(*s))) return false;
    const uint64_t next = v * 10 + static_cast<uint64_t>(*s - '0');
    if (next / 10 != v) return false;
    v = next;
  }
  *out = v;
  return true;
}

// Decimal bytes with an optional K/M/G/T suffix (powers of 1024), as ACLVMM_DEVICE_MEMORY is for
// the library itself.
bool parse_size(const char* text, uint64_t* out) {
  std::string digits = text;
  uint64_t mult = 1;
  switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
    case 'K': mult = 1ull << 10; break;
    case 'M': mult = 1ull << 20; break;
    case 'G': mult = 1ull << 30; break;
    case 'T': mult = 1ull << 40; break;
    default: break;
  }
  if (mult != 1) digits.pop_back();
  uint64_t v = 0;
  if (!parse_uint(digits.c_str(), &v) || v == 0 || v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

Config load() {
  Config c;
  std::string bad;  // "VAR=value (accepted: ...)" of the first malformed variable
  auto refuse = [&bad](const char* var, const char* value, const char* accepted) {
    if (bad.empty()) bad = std::string(var) + "=\"" + value + "\" (accepted: " + accepted + ")";
  };
  if (const char* v = env("ACLVMM_SOC")) {
    c.soc = v;
  }
  const Product* product = find_product(c.soc);
  if (product == nullptr) {
    refuse("ACLVMM_SOC", c.soc.c_str(), "a SoC name of products.md, e.g. Ascend910B1");
  } else {
    c.family = product->family;
    c.device_memory = product->memory;
  }
  if (const char* v = env("ACLVMM_DEVICE_COUNT")) {
    uint64_t n = 0;
    if (!parse_uint(v, &n) || n < 1 || n > kMaxDeviceIds) {
      refuse("ACLVMM_DEVICE_COUNT", v, "1..64");
    } else {
      c.device_count = static_cast<int32_t>(n);
    }
  }
  if (const char* v = env("ACLVMM_DEVICE_MEMORY")) {
    if (!parse_size(v, &c.device_memory) || c.device_memory < 2 * kMiB) {
      refuse("ACLVMM_DEVICE_MEMORY", v, "bytes, at least 2M, optional suffix K, M, G or T");
    }
  }
  if (const char* v = env("ACLVMM_HOST_ACCESS")) {
    if (std::strcmp(v, "strict") != 0 && std::strcmp(v, "open") != 0) {
      refuse("ACLVMM_HOST_ACCESS", v, "strict, open");
    }
    c.host_access_open = std::strcmp(v, "open") == 0;
  }
  if (const char* v = env("ACLVMM_HOST_NUMA")) {
    if (std::strcmp(v, "on") != 0 && std::strcmp(v, "off") != 0) {
      refuse("ACLVMM_HOST_NUMA", v, "on, off");
    }
    c.host_numa = std::strcmp(v, "off") != 0;
  }
  if (const char* v = env("ACLVMM_SERVER_ID")) {
    uint64_t id = 0;
    // 1023 (0x3FF) is the driver's "no server id": accepted so that the refusal can be tested.
    if (!parse_uint(v, &id) || id > 0x3FF) {
      refuse("ACLVMM_SERVER_ID", v, "0..1023, 1023 meaning none");
    } else {
      c.server_id = static_cast<int32_t>(id);
    }
  }
  if (const char* v = env("ACLVMM_HAL_FAKE_PHYSICAL_BASE")) {
    uint64_t base = 0;
    // Physical ids stay below 64: 64 and 65 are the SVM host agent and the host.
    if (!parse_uint(v, &base) || base + static_cast<uint64_t>(c.device_count) > kMaxDeviceIds) {
      refuse("ACLVMM_HAL_FAKE_PHYSICAL_BASE", v, "0..64 less the device count");
    } else {
      c.physical_base = static_cast<uint32_t>(base);
    }
  }
  if (const char* v = env("ACLVMM_HAL_FAKE_VERBOSE")) c.verbose = std::strcmp(v, "1") == 0;
  if (const char* v = env("ACLVMM_HAL_FAULTS")) {
    std::string why;
    if (!arm_from_text(v, &why)) refuse("ACLVMM_HAL_FAULTS", v, why.c_str());
  }
  if (!bad.empty()) {
    std::fprintf(stderr, "[fake-hal] malformed %s; the library reports no devices\n", bad.c_str());
    c.valid = false;
    c.device_count = 0;
  }
  return c;
}

}  // namespace

const Config& config() {
  // Read once: the first call from any thread; the rest wait for it (a magic static).
  static const Config* const loaded = [] {
    // A driver library hands freed device memory back to its driver at once, and the hal
    // backend's tests count the driver objects this one holds: its emulator recycles nothing
    // (drivers/emu/os/memory_recycler.h).
    dev::emu::os::recycler::set_cap(0);
    return new Config(load());
  }();
  return *loaded;
}

bool giant_pages(Family f) { return f == Family::kA2 || f == Family::kA3 || f == Family::k950; }
bool super_pod(Family f) { return f == Family::kA3; }
bool managed_offered(Family f) { return f != Family::k950; }

bool route_offered(Family f, uint32_t route) {
  switch (f) {
    case Family::kA3: return route == MEM_MAP_INBUS || route == MEM_MAP_EXBUS;
    case Family::k950:
      return route == MEM_MAP_UB_ONE_PORT_PATH || route == MEM_MAP_UB_MULTI_PORT_PATH;
    default: return route == MEM_MAP_DEFAULT_PATH;
  }
}

}  // namespace aclvmm::fakehal
