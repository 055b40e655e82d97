// Argument decoding and result checking of the fuzz harness.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness.h"

namespace fuzz {

Snapshot g_before;

uint64_t size_arg(Input& in) {
  const uint8_t c = in.u8();
  if (c < 0x40) return (uint64_t{c} + 1) * kChunk;                 // 2 MiB .. 128 MiB
  if (c < 0x80) return 1 + uint64_t{c & 0x3fu} * 65536;            // odd sizes below 4 MiB
  if (c < 0xA0) return 0;
  if (c < 0xC0) return (uint64_t{c & 0x1fu} + 1) * 512 * kMiB;     // 512 MiB steps
  if (c < 0xE0) return uint64_t{1} << (32 + (c & 0x1f));           // 4 GiB .. 2^63
  return in.u64();
}

int int_arg(Input& in, int range) {
  const uint8_t b = in.u8();
  return b < 0xF0 ? b % range : static_cast<int>(in.u32());
}

uint64_t flags_arg(Input& in) {
  const uint8_t b = in.u8();
  if (b < 0xE0) return 0;
  return b < 0xF0 ? uint64_t{b} - 0xE0 : in.u64();
}

uint64_t forged_addr(Input& in) {
  const Model& m = model();
  const uint8_t c = in.u8();
  const uint64_t r = in.u64();
  // Never an address of the harness's own memory: low pages (below mmap_min_addr), non-canonical
  // values, or addresses inside the library's windows.
  switch (c % 6) {
    case 0: return 0x1000 + (r & 0xeff0);
    case 1: return 0x8000000000000000ull | r;
    case 2: return m.svm_begin + r % (m.svm_end - m.svm_begin);
    case 3: return m.uvm_begin + r % (m.uvm_end - m.uvm_begin);
    case 4: return m.host_begin + r % (m.host_end - m.host_begin);
    default: return m.svm_general + (r % 64) * kChunk + ((c & 0x80) ? (r >> 32) % kChunk : uint64_t{0});
  }
}

namespace {

uint64_t pick(const std::vector<uint64_t>& v, uint8_t s) { return v[s % v.size()]; }

// A forged handle-like value: raw, a live or stale token with another generation, or a token of
// another table.
uint64_t forged_token(Input& in, const std::vector<uint64_t>& live, const std::vector<uint64_t>& other) {
  const uint8_t c = in.u8();
  const uint64_t r = in.u64();
  switch (c % 4) {
    case 0: return r;
    case 1: return live.empty() ? r : live[r % live.size()] ^ (uint64_t{1} << (24 + c % 24));
    case 2: return other.empty() ? r : other[r % other.size()];
    default: return (r & 0xffff000000000000ull) | (live.empty() ? r & 0xffff : live[0] & 0xffffffffffffull);
  }
}

std::vector<uint64_t> handle_tokens() {
  std::vector<uint64_t> v;
  for (const Handle& h : model().handles) v.push_back(h.token);
  return v;
}

// Addresses of objects of the wanted kind (for mappings: every mapping start).
std::vector<uint64_t> addresses(Want want) {
  Model& m = model();
  std::vector<uint64_t> v;
  for (auto& [base, r] : m.regions) {
    const bool data = r.kind != Kind::kReservation;
    if (want == Want::kAny || (want == Want::kReservation && r.kind == Kind::kReservation) ||
        (want == Want::kAllocation && (r.kind == Kind::kMalloc || r.kind == Kind::kManaged)) ||
        (want == Want::kPinned && r.kind == Kind::kPinned) ||
        (want == Want::kManaged && r.kind == Kind::kManaged) || (want == Want::kData && data)) {
      v.push_back(base);
    }
    if (want == Want::kMapping || want == Want::kAny || want == Want::kData) {
      for (auto& [va, mp] : r.maps) v.push_back(va);
    }
  }
  if (want == Want::kData || want == Want::kAny) {
    for (const Region& b : m.buffers) v.push_back(b.base);
  }
  return v;
}

}  // namespace

uint64_t pick_handle(Input& in) {
  Model& m = model();
  const uint8_t s = in.u8();
  std::vector<uint64_t> live = handle_tokens();
  if (s < 0xC0 && !live.empty()) return pick(live, s);
  if (s < 0xE0 && !m.stale_handles.empty()) return pick(m.stale_handles, s);
  if (s >= 0xE0 && s < 0xF0) return 0;
  return forged_token(in, live.empty() ? m.stale_handles : live, m.streams);
}

uint64_t pick_stream(Input& in) {
  Model& m = model();
  const uint8_t s = in.u8();
  if (s < 0xC0 && !m.streams.empty()) return pick(m.streams, s);
  if (s < 0xE0 && !m.stale_streams.empty()) return pick(m.stale_streams, s);
  if (s < 0xF0) return 0;  // the default stream
  return forged_token(in, m.streams.empty() ? m.stale_streams : m.streams, handle_tokens());
}

uint64_t pick_token(Input& in) {
  Model& m = model();
  const uint8_t s = in.u8();
  std::vector<uint64_t> live;
  for (const Export& e : m.exports) live.push_back(e.token);
  if (s < 0xC0 && !live.empty()) return pick(live, s);
  if (s < 0xE0 && !m.stale_tokens.empty()) return pick(m.stale_tokens, s);
  if (s >= 0xE0 && s < 0xF0) return 0;
  const uint8_t c = in.u8();
  const uint64_t r = in.u64();
  switch (c % 3) {
    case 0: return r;                                     // anything, bits 40..63 included
    case 1: return r & 0xffffffffffull;                   // well formed, unknown share id
    default: return live.empty() ? (r & 0xffffffffull) : live[0] ^ (static_cast<uint64_t>(1 + c % 3) << 32);
  }
}

uint64_t pick_addr(Input& in, Want want) {
  Model& m = model();
  const uint8_t s = in.u8();
  uint64_t base;
  if (s >= 0xE0 && s < 0xF0) return 0;
  if (s >= 0xF0) return forged_addr(in);
  std::vector<uint64_t> v = addresses(s < 0xA0 ? want : Want::kAny);
  if (s >= 0xC0 || v.empty()) {
    if (m.stale_addrs.empty()) return v.empty() ? forged_addr(in) : pick(v, s);
    base = pick(m.stale_addrs, s);
  } else {
    base = pick(v, s);
  }
  const uint8_t w = in.u8();
  // The harness's own buffers are plain process memory that no call bounds: stay inside them.
  for (const Region& b : m.buffers) {
    if (base == b.base) return base + (w & 0x3f);
  }
  if (w < 0x40) return base;
  if (w >= 0x78 && w < 0x80) {
    // Around the object's end: the last chunks, the end itself, and past it (still inside the
    // span of a reservation rounded up to 1 GiB).
    Region* r = m.region_at(base);
    Mapping* mp = r ? m.mapping_at(*r, base) : nullptr;
    const uint64_t size = mp && mp->va == base ? mp->size : (r ? r->size : kChunk);
    return base + size + (uint64_t{w} - 0x7c) * kChunk;
  }
  if (w < 0x80) return base + (uint64_t{w} - 0x40) * kChunk;
  if (w < 0xC0) return base + uint64_t{w & 0x3fu} * 4096;
  return base + uint64_t{w & 0x3fu} * 37 + 1;
}

void pick_data(Input& in, uint64_t* addr, uint64_t* len) {
  Model& m = model();
  const uint8_t s = in.u8();
  std::vector<uint64_t> v = addresses(Want::kData);
  uint64_t base = 0, size = 0;
  if (s < 0xC0 && !v.empty()) {
    base = pick(v, s);
    Region* r = m.region_at(base);
    Mapping* mp = r ? m.mapping_at(*r, base) : nullptr;
    size = mp ? mp->size : r->size;
  } else if (s < 0xE0 && !m.stale_addrs.empty()) {
    base = pick(m.stale_addrs, s);
  } else if (s >= 0xF0 || s < 0xE0) {
    base = forged_addr(in);
  }
  const uint16_t o = in.u16();
  uint64_t off = 0;
  if (size != 0) {
    off = o >= 0xFF00 ? size - std::min<uint64_t>(size, o & 0xff) : (o * 5ull) % std::min(size, kShadow);
  }
  // Ranges in the harness's own buffers must start inside them (see clamp_to_buffer).
  for (const Region& b : m.buffers) {
    if (base == b.base) off = std::min(off, b.size - 1);
  }
  *addr = base ? base + off : 0;
  const uint16_t l = in.u16();
  *len = l < 0xF000 ? l % 0x4000 : uint64_t{l & 0xffu} * 65536;
}

bool verify(const char* api, const Expect& e, int rc) {
  std::string allowed = e.ok ? "0" : "";
  for (int c : e.codes) allowed += (allowed.empty() ? "" : "/") + std::to_string(c);
  static const bool trace = std::getenv("ACLVMM_FUZZ_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "step %d: %s -> %d (model: %s)\n", g_step_index, api, rc, allowed.c_str());
  FUZZ_CHECK(e.allows(rc), "%s returned %d; the model allows only %s", api, rc, allowed.c_str());
  if (rc == 0) return true;
  Snapshot now = snapshot();
  if (!e.ok) {
    // Managed pages may move between devices even in a failing copy: residency is not an object.
    const bool managed = model().managed_bytes() != 0;
    FUZZ_CHECK(managed ? now.same_counts(g_before) : now == g_before,
               "%s failed with %d but changed the state: before %s / after %s", api, rc,
               g_before.describe().c_str(), now.describe().c_str());
  } else {
    FUZZ_CHECK(now.same_counts(g_before), "%s failed with %d but changed the live counts: %s / %s",
               api, rc, g_before.describe().c_str(), now.describe().c_str());
  }
  return false;
}

void write_pieces(const std::vector<Piece>& pieces, const uint8_t* src, const std::vector<bool>* known,
                  int value) {
  uint64_t pos = 0;
  for (const Piece& p : pieces) {
    Mem& mem = *p.data;
    for (uint64_t i = 0; i < p.len && p.offset + i < mem.bytes.size(); ++i) {
      mem.bytes[p.offset + i] = src ? src[pos + i] : static_cast<uint8_t>(value);
      mem.known[p.offset + i] = !src || (*known)[pos + i];
    }
    pos += p.len;
  }
}

void read_pieces(const std::vector<Piece>& pieces, std::vector<uint8_t>* out, std::vector<bool>* known) {
  out->clear();
  known->clear();
  for (const Piece& p : pieces) {
    const Mem& mem = *p.data;
    for (uint64_t i = 0; i < p.len; ++i) {
      const bool tracked = p.offset + i < mem.bytes.size();
      out->push_back(tracked ? mem.bytes[p.offset + i] : 0);
      known->push_back(tracked && mem.known[p.offset + i]);
    }
  }
}

bool pieces_alias(const std::vector<Piece>& a, const std::vector<Piece>& b) {
  for (const Piece& x : a) {
    for (const Piece& y : b) {
      if (x.data == y.data && x.offset < y.offset + y.len && y.offset < x.offset + x.len) return true;
    }
  }
  return false;
}

}  // namespace fuzz
