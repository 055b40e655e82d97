#include "runtime/config.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace aclvmm {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool parse_uint(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    uint64_t next = v * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != v) return false;
    v = next;
  }
  *out = v;
  return true;
}

Status bad(const char* var, const std::string& value, const char* accepted) {
  return Error(kAclInvalidParam, std::string("environment variable ") + var + "=\"" + value +
                                     "\" is invalid; accepted values: " + accepted);
}

}  // namespace

const char* interconnect_name(Interconnect link) {
  return link == Interconnect::kPcie ? "pcie" : "hccs";
}

bool parse_size(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  std::string digits = text;
  uint64_t mult = 1;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K': mult = 1ull << 10; break;
    case 'M': mult = 1ull << 20; break;
    case 'G': mult = 1ull << 30; break;
    case 'T': mult = 1ull << 40; break;
    default: mult = 1;
  }
  if (mult != 1) digits.pop_back();
  uint64_t v = 0;
  if (!parse_uint(digits, &v) || v == 0) return false;
  if (v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

StatusOr<std::vector<InjectionRule>> parse_injections(const std::string& text) {
  std::vector<InjectionRule> rules;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find(':');
    size_t b = a == std::string::npos ? a : item.find(':', a + 1);
    uint64_t nth = 0, code = 0;
    if (b == std::string::npos || a == 0 || !parse_uint(item.substr(a + 1, b - a - 1), &nth) ||
        nth == 0 || nth > UINT32_MAX || !parse_uint(item.substr(b + 1), &code) || code == 0 ||
        code > INT32_MAX) {
      return bad("ACLVMM_FAULTS", text, "api:nth:code[,api:nth:code...] with nth >= 1, code > 0");
    }
    rules.push_back({item.substr(0, a), static_cast<uint32_t>(nth), static_cast<int>(code)});
  }
  return rules;
}

std::vector<int> parse_visible_devices(const std::string& text, int count, std::string* error) {
  std::vector<int> ids;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    uint64_t id = 0;
    if (!parse_uint(tok, &id) || id >= static_cast<uint64_t>(count)) break;
    if (!ids.empty() && static_cast<int>(id) <= ids.back()) {
      *error = "Value " + text +
               " for environment variable ASCEND_RT_VISIBLE_DEVICES is invalid. Expected value: "
               "ascending device ids without repeats, each below " + std::to_string(count) + ".";
      return {};
    }
    ids.push_back(static_cast<int>(id));
  }
  if (ids.empty()) {
    *error = "Value " + text +
             " for environment variable ASCEND_RT_VISIBLE_DEVICES is invalid. Expected value: a "
             "comma-separated list of device ids below " + std::to_string(count) + ".";
  }
  return ids;
}

StatusOr<std::vector<std::string>> parse_kernel_libs(const std::string& text) {
  std::vector<std::string> paths;
  size_t start = 0;
  for (;;) {
    const size_t colon = text.find(':', start);
    std::string item = text.substr(start, colon == std::string::npos ? std::string::npos
                                                                      : colon - start);
    if (item.empty()) {
      return bad("ACLVMM_KERNEL_LIBS", text,
                 "a ':'-separated list of shared-library paths, none of them empty");
    }
    paths.push_back(std::move(item));
    if (colon == std::string::npos) return paths;
    start = colon + 1;
  }
}

// ASCEND_RT_VISIBLE_DEVICES against the device count known now.
static void resolve_visible_devices(Config& c) {
  c.visible.clear();
  c.visible_error.clear();
  const char* vis = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
  c.visible_set = vis != nullptr;
  if (vis) {
    c.visible = parse_visible_devices(vis, c.device_count, &c.visible_error);
  } else {
    for (int i = 0; i < c.device_count; ++i) c.visible.push_back(i);
  }
}

StatusOr<Config> load_config() {
  Config c;
  std::string soc = env("ACLVMM_SOC");
  ACLVMM_ASSIGN_OR_RETURN(c.product, find_product(soc.empty() ? "Ascend910B1" : soc));

  if (std::string v = env("ACLVMM_DEVICE_COUNT"); !v.empty()) {
    uint64_t n = 0;
    if (!parse_uint(v, &n) || n < 1 || n > 64) return bad("ACLVMM_DEVICE_COUNT", v, "1..64");
    c.device_count = static_cast<int>(n);
  }
  c.device_memory = c.product.memory_bytes;
  if (std::string v = env("ACLVMM_DEVICE_MEMORY"); !v.empty()) {
    c.device_memory_set = true;
    if (!parse_size(v, &c.device_memory) || c.device_memory < (2ull << 20)) {
      return bad("ACLVMM_DEVICE_MEMORY", v, "a byte count of at least 2M, with optional suffix K, M, G or T");
    }
  }
  if (std::string v = env("ACLVMM_HOST_ACCESS"); !v.empty()) {
    if (v != "strict" && v != "open") return bad("ACLVMM_HOST_ACCESS", v, "strict, open");
    c.host_access_open = v == "open";
  }
  if (std::string v = env("ACLVMM_QUIRKS"); !v.empty()) {
    if (v != "none" && v != "vendor") return bad("ACLVMM_QUIRKS", v, "none, vendor");
    c.quirks_vendor = v == "vendor";
  }
  if (std::string v = env("ACLVMM_INTERCONNECT"); !v.empty()) {
    if (v != "hccs" && v != "pcie") return bad("ACLVMM_INTERCONNECT", v, "hccs, pcie");
    c.interconnect = v == "pcie" ? Interconnect::kPcie : Interconnect::kHccs;
  }
  if (std::string v = env("ACLVMM_HOST_NUMA"); !v.empty()) {
    if (v != "on" && v != "off") return bad("ACLVMM_HOST_NUMA", v, "on, off");
    c.host_numa = v == "on";
  }
  if (std::string v = env("ACLVMM_FAULTS"); !v.empty()) {
    ACLVMM_ASSIGN_OR_RETURN(c.injections, parse_injections(v));
  }
  c.stats_file = env("ACLVMM_STATS_FILE");
  c.trace_file = env("ACLVMM_TRACE_FILE");
  if (std::string v = env("ACLVMM_KERNEL_LIBS"); !v.empty()) {
    ACLVMM_ASSIGN_OR_RETURN(c.kernel_libs, parse_kernel_libs(v));
  }
  if (std::string v = env("ACLVMM_DRIVER"); !v.empty()) {
    if (v != "emu" && v != "hal") return bad("ACLVMM_DRIVER", v, "emu, hal");
    c.driver = v;
  }
  if (std::string v = env("ACLVMM_SERVER_ID"); !v.empty()) {
    uint64_t id = 0;
    if (!parse_uint(v, &id) || id > kMaxServerId) return bad("ACLVMM_SERVER_ID", v, "0..1022");
    c.server_id = static_cast<int>(id);
  }
  if (std::string v = env("ACLVMM_POD_FILE"); !v.empty()) {
    std::ifstream in(v);
    std::stringstream content;
    if (!in || !(content << in.rdbuf())) {
      return bad("ACLVMM_POD_FILE", v, "a readable file of `server_id address` lines");
    }
    c.pod_file = v;
    ACLVMM_ASSIGN_OR_RETURN(c.pod, parse_pod(content.str(), c.server_id));
  }
  c.hal_library = env("ACLVMM_HAL_LIBRARY");
  c.hal_hide = env("ACLVMM_HAL_HIDE");
  resolve_visible_devices(c);
  return c;
}

Status adopt_driver_machine(Config& config, int device_count, const std::string& soc) {
  if (!soc.empty() && soc != config.product.soc) {
    auto product = find_product(soc);
    if (!product.ok()) {
      return Error(kAclInternalError, "the driver reports SoC " + soc +
                                          ", which aclvmm's product table does not know");
    }
    config.product = *product;
    if (!config.device_memory_set) config.device_memory = config.product.memory_bytes;
  }
  config.device_count = device_count;
  resolve_visible_devices(config);
  return Status::Ok();
}

}  // namespace aclvmm
