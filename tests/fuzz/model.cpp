#include "model.h"

#include <algorithm>

namespace fuzz {

Model& model() {
  static Model m;
  return m;
}

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool round_up_ok(uint64_t v, uint64_t a, uint64_t* out) {
  if (v > UINT64_MAX - (a - 1)) return false;
  *out = round_up(v, a);
  return true;
}

bool Expect::allows(int rc) const {
  if (rc == 0) return ok;
  return std::find(codes.begin(), codes.end(), rc) != codes.end();
}

void Model::reset_objects() {
  handles.clear();
  regions.clear();
  exports.clear();
  imports.clear();
  streams.clear();
  stale_handles.clear();
  stale_addrs.clear();
  stale_streams.clear();
  stale_tokens.clear();
}

Handle* Model::handle(uint64_t token) {
  for (Handle& h : handles) {
    if (h.token == token) return &h;
  }
  return nullptr;
}

void Model::drop_handle(uint64_t token) {
  for (size_t i = 0; i < handles.size(); ++i) {
    if (handles[i].token != token) continue;
    handles.erase(handles.begin() + static_cast<long>(i));
    break;
  }
  stale_handles.push_back(token);
  for (size_t i = 0; i < exports.size();) {
    if (exports[i].handle == token) {
      stale_tokens.push_back(exports[i].token);
      exports.erase(exports.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  for (auto it = imports.begin(); it != imports.end();) {
    it = it->second == token ? imports.erase(it) : std::next(it);
  }
}

Export* Model::export_of_handle(uint64_t token) {
  for (Export& e : exports) {
    if (e.handle == token) return &e;
  }
  return nullptr;
}

Export* Model::export_by_token(uint64_t token) {
  for (Export& e : exports) {
    if (e.token == token) return &e;
  }
  return nullptr;
}

Region* Model::region_at(uint64_t va) {
  for (Region& b : buffers) {
    if (va - b.base < b.span) return &b;
  }
  auto it = regions.upper_bound(va);
  if (it == regions.begin()) return nullptr;
  --it;
  return va - it->second.base < it->second.span ? &it->second : nullptr;
}

Mapping* Model::mapping_at(Region& r, uint64_t va) {
  auto it = r.maps.upper_bound(va);
  if (it == r.maps.begin()) return nullptr;
  --it;
  return va - it->second.va < it->second.size ? &it->second : nullptr;
}

bool Model::in_windows(uint64_t va) const {
  return va - svm_begin < svm_end - svm_begin || va - uvm_begin < uvm_end - uvm_begin ||
         va - host_begin < host_end - host_begin;
}

bool Model::managed_pages(uint64_t va, uint64_t n) {
  if (n > uvm_end - uvm_begin || va + n < va) return false;
  const uint64_t end = round_up(va + n, kChunk);
  for (uint64_t page = va / kChunk * kChunk; page < end; page += kChunk) {
    Region* r = region_at(page);
    if (!r || r->kind != Kind::kManaged) return false;
  }
  return true;
}

namespace {

bool permits(int flags, bool write) { return write ? flags == 3 : (flags & 1) != 0; }

void add_piece(std::vector<Piece>* out, const std::shared_ptr<Mem>& data, uint64_t off, uint64_t len) {
  if (out) out->push_back(Piece{data, off, len});
}

}  // namespace

int Model::device_access(uint64_t va, uint64_t n, bool write, std::vector<Piece>* out) {
  if (in_uvm(va)) {
    if (!managed_pages(va, n)) return kDrv;
    for (uint64_t cur = va, left = n; left > 0;) {
      Region* r = region_at(cur);
      const uint64_t len = std::min(left, r->base + r->size - cur);
      add_piece(out, r->data, cur - r->base, len);
      cur += len;
      left -= len;
    }
    return 0;
  }
  Region* r = region_at(va);
  // Outside every region: window addresses are unallocated device memory; anything else the
  // harness passes is unmapped process memory (forged pointers), which the copy cannot reach.
  if (!r) return kDrv;
  if (r->kind == Kind::kHostBuffer) {
    add_piece(out, r->data, va - r->base, n);
    return 0;
  }
  // The device MMU translates page by page (emulation.md §4): a range runs on from one block or
  // mapping into whatever is mapped right after it, another allocation or reservation included,
  // as long as the executing device may reach every byte.
  for (uint64_t cur = va, left = n; left > 0;) {
    r = region_at(cur);
    if (!r || r->kind == Kind::kHostBuffer) return kDrv;
    uint64_t len = 0;
    if (r->kind == Kind::kPinned || r->kind == Kind::kMalloc) {
      if (cur - r->base >= r->size) return kDrv;  // the block's rounded span is not mapped
      if (r->kind == Kind::kMalloc && r->device != current && !peer[current][r->device]) return kDrv;
      len = std::min(left, r->base + r->size - cur);
      add_piece(out, r->data, cur - r->base, len);
    } else {
      Mapping* m = mapping_at(*r, cur);
      if (!m) return kDrv;
      const int flags = m->side == kDeviceSide ? m->access.dev[current] : m->access.host;
      if (!permits(flags, write)) return kDrv;
      len = std::min(left, m->va + m->size - cur);
      add_piece(out, m->data, cur - m->va, len);
    }
    cur += len;
    left -= len;
  }
  return 0;
}

uint64_t Model::device_fixed_used(int device) const {
  uint64_t used = 0;
  for (const Handle& h : handles) {
    if (h.charged && h.device == device) used += h.size;
  }
  for (const auto& [base, r] : regions) {
    if (r.kind == Kind::kMalloc && r.device == device) used += r.size;
  }
  return used;
}

uint64_t Model::host_used() const {
  uint64_t used = 0;
  for (const Handle& h : handles) {
    if (h.side != kDeviceSide && !h.imported) used += h.size;
  }
  for (const auto& [base, r] : regions) {
    if (r.kind == Kind::kPinned) used += r.size;
  }
  return used;
}

uint64_t Model::managed_bytes() const {
  uint64_t n = 0;
  for (const auto& [base, r] : regions) {
    if (r.kind == Kind::kManaged) n += r.size;
  }
  return n;
}

bool Model::svm_free(uint64_t base, uint64_t span) const {
  if (base < svm_general || base > svm_end || span > svm_end - base) return false;
  for (const auto& [b, r] : regions) {
    if (r.kind != Kind::kReservation && r.kind != Kind::kMalloc) continue;
    if (b < base + span && base < b + r.span) return false;
  }
  return true;
}

bool Model::svm_fits(uint64_t span, uint64_t align) const {
  uint64_t cursor = svm_general;
  auto gap_fits = [&](uint64_t end) {
    uint64_t start;
    if (!round_up_ok(cursor, align, &start) || start >= end) return false;
    return end - start >= span;
  };
  for (const auto& [b, r] : regions) {
    if ((r.kind != Kind::kReservation && r.kind != Kind::kMalloc) || b < svm_general) continue;
    if (b > cursor && gap_fits(b)) return true;
    cursor = std::max(cursor, b + r.span);
  }
  return gap_fits(svm_end);
}

size_t Model::count(Kind kind) const {
  size_t n = 0;
  for (const auto& [b, r] : regions) n += r.kind == kind;
  return n;
}

size_t Model::mapping_count() const {
  size_t n = 0;
  for (const auto& [b, r] : regions) n += r.maps.size();
  return n;
}

}  // namespace fuzz
