// aclrtMalloc / aclrtMallocHost, copies and fills between live objects, and the byte checks
// (behavior.md §13, emulation.md §4).
#include <algorithm>
#include <cstring>

#include "acl/acl.h"
#include "harness.h"
#include "raw_calls.h"

namespace fuzz {
namespace {

// Keeps a range that starts in one of the harness's own buffers inside it: the CPU path of a copy
// does not (and cannot) bound plain process memory, so the harness must.
void clamp_to_buffer(uint64_t addr, uint64_t* len) {
  for (const Region& b : model().buffers) {
    if (addr - b.base < b.size) *len = std::min(*len, b.base + b.size - addr);
  }
}

Region* buffer_at(uint64_t addr) {
  Region* r = model().region_at(addr);
  return r && r->kind == Kind::kHostBuffer ? r : nullptr;
}

// After a successful write into a harness buffer: its bytes must be what the model computed; then
// the model takes the real bytes (they are the truth for untracked ones).
void check_buffer(uint64_t addr, uint64_t len, const char* api) {
  Region* b = buffer_at(addr);
  if (!b) return;
  const uint8_t* real = reinterpret_cast<const uint8_t*>(b->base);
  const uint64_t off = addr - b->base;
  for (uint64_t i = 0; i < len; ++i) {
    const uint64_t at = off + i;
    FUZZ_CHECK(!b->data->known[at] || real[at] == b->data->bytes[at],
               "%s: byte %llu read back as 0x%02x, the model says 0x%02x", api,
               static_cast<unsigned long long>(i), real[at], b->data->bytes[at]);
    b->data->bytes[at] = real[at];
    b->data->known[at] = 1;
  }
}

bool touches_managed(uint64_t a, uint64_t b) { return model().in_uvm(a) || model().in_uvm(b); }

}  // namespace

void op_malloc(Input& in) {
  Model& m = model();
  const uint64_t size = size_arg(in);
  static const int kPolicies[] = {0, 1, 2, 3, 4, 5, 6, 7, 0x101, 0x1002};
  const int p = int_arg(in, 10);
  const int policy = p >= 0 && p < 10 ? kPolicies[p] : p;
  const bool null_out = in.u8() & 1;
  Expect e = Expect::Ok();
  uint64_t bytes = 0, page = 4096, span = 0;
  const int base_policy = policy & 0xff;
  const bool huge1g = base_policy == 6 || base_policy == 7;
  uint64_t padded;
  if (null_out || size == 0) {
    e = Expect::Fail(kParam);
  } else if (!round_up_ok(size, 32, &padded) || padded > UINT64_MAX - 32) {
    e = Expect::Fail(kNoMemory);
  } else {
    padded += huge1g ? 0 : 32;
    if (base_policy == 1 || base_policy == 4) page = kChunk;
    else if (base_policy == 2 || base_policy == 5) page = 4096;
    else if (huge1g) page = kGiB;
    else page = padded >= kMiB ? kChunk : 4096;
    if (!round_up_ok(padded, page, &bytes) ||
        bytes > kDeviceMemory - static_cast<uint64_t>(g_before.used[m.current])) {
      e = Expect::Fail(kNoMemory);
    } else {
      const uint64_t align = bytes >= kGiB ? kGiB : kChunk;
      span = round_up(bytes, align);
      if (!m.svm_fits(span, align)) e = Expect::Fail(kNoMemory);
    }
  }
  void* out = nullptr;
  if (!verify("aclrtMalloc", e, fz_malloc(null_out ? nullptr : &out, size, policy))) return;
  const uint64_t base = reinterpret_cast<uint64_t>(out);
  FUZZ_CHECK(m.svm_free(base, span), "aclrtMalloc returned 0x%llx where the model has no room",
             static_cast<unsigned long long>(base));
  Region r;
  r.kind = Kind::kMalloc;
  r.base = base;
  r.size = bytes;
  r.span = span;
  r.device = m.current;
  r.page_size = static_cast<uint32_t>(page);
  r.data = std::make_shared<Mem>(bytes);
  m.regions[base] = r;
}

void op_free(Input& in) {
  Model& m = model();
  const uint64_t ptr = pick_addr(in, Want::kAllocation);
  auto it = m.regions.find(ptr);
  const Kind want = m.in_uvm(ptr) ? Kind::kManaged : Kind::kMalloc;
  const bool live = it != m.regions.end() && it->second.kind == want;
  Expect e = ptr == 0 ? Expect::Fail(kParam) : live ? Expect::Ok() : Expect::Fail(kRtParam);
  if (!verify("aclrtFree", e, aclrtFree(reinterpret_cast<void*>(ptr)))) return;
  m.regions.erase(it);
  m.stale_addrs.push_back(ptr);
}

void op_malloc_host(Input& in) {
  Model& m = model();
  const uint64_t size = size_arg(in);
  const bool null_out = in.u8() & 1;
  uint64_t bytes = 0;
  Expect e = Expect::Ok();
  if (null_out || size == 0) {
    e = Expect::Fail(kParam);
  } else if (!round_up_ok(size, 32, &bytes) || !round_up_ok(bytes, kHostPage, &bytes) || bytes > kTiB) {
    e = Expect::Fail(kNoMemory);
  } else if (m.host_used() + bytes > m.host_limit) {
    e = Expect::OkOr({kNoMemory});
  }
  void* out = nullptr;
  if (!verify("aclrtMallocHost", e, aclrtMallocHost(null_out ? nullptr : &out, size))) return;
  const uint64_t base = reinterpret_cast<uint64_t>(out);
  FUZZ_CHECK(base - m.host_begin < m.host_end - m.host_begin && !m.region_at(base),
             "aclrtMallocHost returned 0x%llx: outside the host window or on a live object",
             static_cast<unsigned long long>(base));
  Region r;
  r.kind = Kind::kPinned;
  r.base = base;
  r.size = bytes;
  r.span = round_up(bytes, kChunk);
  r.data = std::make_shared<Mem>(bytes);
  m.regions[base] = r;
}

void op_free_host(Input& in) {
  Model& m = model();
  const uint64_t ptr = pick_addr(in, Want::kPinned);
  auto it = m.regions.find(ptr);
  const bool live = it != m.regions.end() && it->second.kind == Kind::kPinned;
  Expect e = ptr == 0 ? Expect::Fail(kParam) : live ? Expect::Ok() : Expect::Fail(kRtParam);
  if (!verify("aclrtFreeHost", e, aclrtFreeHost(reinterpret_cast<void*>(ptr)))) return;
  m.regions.erase(it);
  m.stale_addrs.push_back(ptr);
}

namespace {

void copy(uint64_t dst, uint64_t src, uint64_t len, int kind, bool short_dest) {
  Model& m = model();
  clamp_to_buffer(dst, &len);
  clamp_to_buffer(src, &len);
  const uint64_t dest_max = short_dest && len > 0 ? len - 1 : len;
  std::vector<Piece> dp, sp;
  Expect e = Expect::Ok();
  if (len == 0) {
    e = Expect::Ok();
  } else if (dst == 0 || src == 0 || kind < 0 || kind > 5) {
    e = Expect::Fail(kParam);
  } else if (dest_max < len) {
    e = Expect::Fail(kRtParam);
  } else if (int code = m.device_access(dst, len, true, &dp)) {
    e = Expect::Fail(code);
  } else if (int code2 = m.device_access(src, len, false, &sp)) {
    e = Expect::Fail(code2);
  } else if (pieces_alias(dp, sp)) {
    return;  // overlapping copies have no defined result: not issued
  } else if (touches_managed(dst, src)) {
    e = Expect::OkOr({kNoMemory});  // migrating a managed page needs room on the device
  }
  int rc = fz_memcpy(reinterpret_cast<void*>(dst), dest_max, reinterpret_cast<const void*>(src), len, kind);
  if (!verify("aclrtMemcpy", e, rc) || len == 0) return;
  std::vector<uint8_t> bytes;
  std::vector<bool> known;
  read_pieces(sp, &bytes, &known);
  write_pieces(dp, bytes.data(), &known);
  check_buffer(dst, len, "aclrtMemcpy");
}

}  // namespace

void op_memcpy(Input& in) {
  uint64_t dst, src, len, unused;
  pick_data(in, &dst, &len);
  pick_data(in, &src, &unused);
  const int kind = int_arg(in, 8);
  copy(dst, src, len, kind, in.u8() & 1);
}

void op_read_check(Input& in) {
  uint64_t src, len;
  pick_data(in, &src, &len);
  const Region& scratch = model().buffers[1];
  copy(scratch.base, src, std::min(len, scratch.size), 4, false);
}

void op_memset(Input& in) {
  Model& m = model();
  uint64_t dst, len;
  pick_data(in, &dst, &len);
  const int value = in.u8();
  const bool short_max = in.u8() & 1;
  clamp_to_buffer(dst, &len);
  const uint64_t max_count = short_max && len > 0 ? len - 1 : len;
  std::vector<Piece> dp;
  Expect e = Expect::Ok();
  if (len == 0) {
    e = Expect::Ok();
  } else if (dst == 0) {
    e = Expect::Fail(kParam);
  } else if (max_count < len) {
    e = Expect::Fail(kRtParam);
  } else if (int code = m.device_access(dst, len, true, &dp)) {
    e = Expect::Fail(code);
  } else if (m.in_uvm(dst)) {
    e = Expect::OkOr({kNoMemory});
  }
  int rc = aclrtMemset(reinterpret_cast<void*>(dst), max_count, value, len);
  if (!verify("aclrtMemset", e, rc) || len == 0) return;
  write_pieces(dp, nullptr, nullptr, value);
  check_buffer(dst, len, "aclrtMemset");
}

}  // namespace fuzz
