// Mappings, access rights and address queries (behavior.md §3, §6, §8, §9).
#include <cstring>

#include "acl/acl.h"
#include "harness.h"

namespace fuzz {
namespace {

bool is_reservation(const Region* r) { return r && r->kind == Kind::kReservation; }

// The location check of access descriptors: 0 when valid (sets host/device), else the code.
int check_location(int type, uint32_t id, bool* host, int* device) {
  if (type == 0) {
    *host = true;
    return id == 0 ? 0 : kRtParam;
  }
  if (type == 1) {
    *host = false;
    *device = static_cast<int>(id);
    return id < static_cast<uint32_t>(kDevices) ? 0 : kRtParam;
  }
  return kRtParam;
}

}  // namespace

void op_map(Input& in) {
  Model& m = model();
  const uint64_t va = pick_addr(in, Want::kReservation);
  const uint8_t ms = in.u8();
  const uint64_t token = pick_handle(in);
  const uint8_t misc = in.u8();
  const bool no_access = misc & 1;
  const uint64_t offset = (misc & 2) ? (uint64_t{in.u8()} + 1) * kChunk : 0;
  const uint64_t flags = (misc & 4) ? flags_arg(in) : 0;
  Handle* h = m.handle(token);
  uint64_t size;
  if (ms < 0x80) {
    size = h ? h->size : kChunk;
  } else if (ms < 0xC0) {
    size = (uint64_t{ms & 0x3fu} + 1) * kChunk;
  } else {
    size = size_arg(in);
  }
  Region* r = m.region_at(va);
  Expect e = Expect::Ok();
  if (va == 0 || token == 0 || size == 0 || flags != 0) {
    e = Expect::Fail(kParam);
  } else if (offset != 0 || !h) {
    e = Expect::Fail(kRtParam);
  } else {
    const uint64_t granule = h->page == 2 ? kGiB : kChunk;
    bool overlap = false;
    if (is_reservation(r)) {
      for (auto& [start, mp] : r->maps) overlap |= start < va + size && va < start + mp.size;
    }
    if (!is_reservation(r) || va % granule != 0 || size % granule != 0 || va - r->base >= r->size ||
        size > r->base + r->size - va || overlap ||
        (r->bound && (r->bound_side != h->side ||
                      (h->side == kDeviceSide && r->bound_device != h->device)))) {
      e = Expect::Fail(kDrv);
    } else if (size > h->size) {
      e = Expect::Fail(kNoMemory);
    }
  }
  const char* api = no_access ? "aclrtMemMapNoAccess" : "aclrtMapMem";
  void* p = reinterpret_cast<void*>(va);
  void* hp = reinterpret_cast<void*>(token);
  int rc = no_access ? aclrtMemMapNoAccess(p, size, offset, hp, flags)
                     : aclrtMapMem(p, size, offset, hp, flags);
  if (!verify(api, e, rc)) return;
  Mapping mp;
  mp.va = va;
  mp.size = size;
  mp.handle = token;
  mp.side = h->side;
  mp.device = h->device;
  mp.data = h->data;
  if (!no_access) {
    if (h->side == kDeviceSide) {
      mp.access.dev[h->device] = 3;
    } else {
      mp.access.host = 3;
    }
  }
  r->maps[va] = mp;
  r->bound = true;
  r->bound_side = h->side;
  r->bound_device = h->device;
  ++h->ref;
  ++h->map_ref;
}

void op_unmap(Input& in) {
  Model& m = model();
  const uint64_t va = pick_addr(in, Want::kMapping);
  Region* r = m.region_at(va);
  const bool mapped = is_reservation(r) && r->maps.count(va);
  Expect e = va == 0 ? Expect::Fail(kParam) : mapped ? Expect::Ok() : Expect::Fail(kDrv);
  if (!verify("aclrtUnmapMem", e, aclrtUnmapMem(reinterpret_cast<void*>(va)))) return;
  const uint64_t token = r->maps[va].handle;
  r->maps.erase(va);
  m.stale_addrs.push_back(va);
  Handle* h = m.handle(token);
  FUZZ_CHECK(h != nullptr, "model: mapping of a handle that is gone");
  --h->map_ref;
  if (--h->ref == 0) m.drop_handle(token);
}

void op_set_access(Input& in) {
  Model& m = model();
  const uint64_t va = pick_addr(in, Want::kMapping);
  Region* r = m.region_at(va);
  Mapping* target = is_reservation(r) ? m.mapping_at(*r, va) : nullptr;
  const uint8_t ss = in.u8();
  const uint64_t size = ss < 0x80 ? (target ? target->size : kChunk) : size_arg(in);
  const uint8_t c = in.u8();
  const size_t count = c >= 0xF0 ? 0 : 1 + c % 3;
  static const int kFlags[] = {0, 1, 3, 2, 4};
  aclrtMemAccessDesc desc[3];
  std::memset(desc, 0, sizeof desc);
  int code = 0;
  bool host[3] = {};
  int device[3] = {}, flags[3] = {};
  for (size_t i = 0; i < count; ++i) {
    const int f = int_arg(in, 5);
    flags[i] = f >= 0 && f < 5 ? kFlags[f] : f;
    const int type = int_arg(in, 4);
    const uint32_t id = static_cast<uint32_t>(int_arg(in, 4));
    std::memcpy(&desc[i].flags, &flags[i], sizeof(int));
    std::memcpy(&desc[i].location.type, &type, sizeof(int));
    desc[i].location.id = id;
    if (code) continue;
    if (flags[i] != 0 && flags[i] != 1 && flags[i] != 3) code = kRtParam;
    if (!code) code = check_location(type, id, &host[i], &device[i]);
  }
  const bool null_desc = in.u8() & 1;
  Expect e = Expect::Ok();
  if (va == 0 || null_desc || count == 0) {
    e = Expect::Fail(kRtParam);
  } else if (code) {
    e = Expect::Fail(code);
  } else if (!target || target->va != va || target->size != size) {
    e = Expect::Fail(kDrv);
  }
  int rc = aclrtMemSetAccess(reinterpret_cast<void*>(va), size, null_desc ? nullptr : desc, count);
  if (!verify("aclrtMemSetAccess", e, rc)) return;
  for (size_t i = 0; i < count; ++i) {
    if (host[i]) {
      target->access.host = flags[i];
    } else {
      target->access.dev[device[i]] = flags[i];
    }
  }
}

void op_get_access(Input& in) {
  Model& m = model();
  const uint64_t va = pick_addr(in, Want::kMapping);
  const int type = int_arg(in, 4);
  const uint32_t id = static_cast<uint32_t>(int_arg(in, 4));
  const uint8_t misc = in.u8();
  aclrtMemLocation loc;
  std::memcpy(&loc.type, &type, sizeof(int));
  loc.id = id;
  bool host = false;
  int device = 0;
  Region* r = m.region_at(va);
  Mapping* mp = is_reservation(r) ? m.mapping_at(*r, va) : nullptr;
  Expect e = Expect::Ok();
  if (va == 0 || (misc & 3)) {
    e = Expect::Fail(kParam);
  } else if (int code = check_location(type, id, &host, &device)) {
    e = Expect::Fail(code);
  } else if (!mp) {
    e = Expect::Fail(kDrv);
  }
  uint64_t flags = 0xdead;
  int rc = aclrtMemGetAccess(reinterpret_cast<void*>(va), (misc & 1) ? nullptr : &loc,
                             (misc & 2) ? nullptr : &flags);
  if (!verify("aclrtMemGetAccess", e, rc)) return;
  const uint64_t want = static_cast<uint64_t>(host ? mp->access.host : mp->access.dev[device]);
  FUZZ_CHECK(flags == want, "aclrtMemGetAccess: flags %llu, the model says %llu",
             static_cast<unsigned long long>(flags), static_cast<unsigned long long>(want));
}

void op_retain(Input& in) {
  Model& m = model();
  const uint64_t va = pick_addr(in, Want::kMapping);
  const bool null_out = in.u8() & 1;
  Region* r = m.region_at(va);
  Mapping* mp = is_reservation(r) ? m.mapping_at(*r, va) : nullptr;
  Expect e = (va == 0 || null_out) ? Expect::Fail(kParam)
             : !is_reservation(r)  ? Expect::Fail(kDrv)
             : !mp                 ? Expect::Fail(kBadHandle)
             : mp->va != va        ? Expect::Fail(kDrv)
                                   : Expect::Ok();
  aclrtDrvMemHandle out = nullptr;
  int rc = aclrtMemRetainAllocationHandle(reinterpret_cast<void*>(va), null_out ? nullptr : &out);
  if (!verify("aclrtMemRetainAllocationHandle", e, rc)) return;
  FUZZ_CHECK(reinterpret_cast<uint64_t>(out) == mp->handle, "retain returned another handle than mapped");
  ++m.handle(mp->handle)->ref;
}

void op_address_range(Input& in) {
  Model& m = model();
  const uint64_t ptr = pick_addr(in, Want::kAny);
  const uint8_t misc = in.u8();
  Region* r = m.region_at(ptr);
  if (r && r->kind == Kind::kHostBuffer) r = nullptr;  // plain process memory
  uint64_t base = 0, size = 0;
  Expect e = Expect::Fail(kRtParam);
  if (ptr == 0) {
    e = Expect::Fail(kParam);
  } else if ((misc & 3) == 3) {
    e = Expect::Fail(kRtParam);
  } else if (r && r->kind == Kind::kReservation) {
    if (Mapping* mp = m.mapping_at(*r, ptr)) {
      e = Expect::Ok();
      base = mp->va;
      size = mp->size;
    }
  } else if (r) {
    const uint64_t extent = r->span >= kGiB ? r->span : r->size;
    if (ptr - r->base < extent) {
      e = Expect::Ok();
      base = r->base;
      size = extent;
    }
  }
  void* got_base = nullptr;
  size_t got_size = 0;
  int rc = aclrtMemGetAddressRange(reinterpret_cast<void*>(ptr), (misc & 1) ? nullptr : &got_base,
                                   (misc & 2) ? nullptr : &got_size);
  if (!verify("aclrtMemGetAddressRange", e, rc)) return;
  FUZZ_CHECK(((misc & 1) || reinterpret_cast<uint64_t>(got_base) == base) && ((misc & 2) || got_size == size),
             "aclrtMemGetAddressRange(0x%llx) = 0x%llx + %zu, the model says 0x%llx + %llu",
             static_cast<unsigned long long>(ptr),
             static_cast<unsigned long long>(reinterpret_cast<uint64_t>(got_base)),
             got_size, static_cast<unsigned long long>(base), static_cast<unsigned long long>(size));
}

void op_pointer_attributes(Input& in) {
  Model& m = model();
  const uint64_t ptr = pick_addr(in, Want::kAny);
  const bool null_attr = in.u8() & 1;
  Region* r = m.region_at(ptr);
  if (r && r->kind == Kind::kHostBuffer) r = nullptr;
  int type = 2, id = 0;
  uint32_t page = static_cast<uint32_t>(kHostPage);
  Expect e = Expect::Ok();
  if (ptr == 0 || null_attr) {
    e = Expect::Fail(kParam);
  } else if (m.in_uvm(ptr)) {
    if (r) {
      type = 3;
      page = static_cast<uint32_t>(kChunk);
    } else {
      e = Expect::Fail(kDrv);
    }
  } else if (!r) {
    if (m.in_windows(ptr)) e = Expect::Fail(kDrv);
  } else if (r->kind == Kind::kPinned || r->kind == Kind::kMalloc) {
    if (ptr - r->base >= r->size) {
      e = Expect::Fail(kDrv);
    } else if (r->kind == Kind::kPinned) {
      type = 0;
    } else {
      type = 1;
      id = r->device;
      page = r->page_size;
    }
  } else if (Mapping* mp = m.mapping_at(*r, ptr)) {
    type = mp->side == kDeviceSide ? 1 : 0;
    id = mp->side == kDeviceSide ? mp->device : 0;
    page = mp->side == kDeviceSide ? static_cast<uint32_t>(kChunk) : static_cast<uint32_t>(kHostPage);
  } else {
    e = Expect::Fail(kBadHandle);
  }
  aclrtPtrAttributes attr;
  std::memset(&attr, 0xab, sizeof attr);
  int rc = aclrtPointerGetAttributes(reinterpret_cast<void*>(ptr), null_attr ? nullptr : &attr);
  if (!verify("aclrtPointerGetAttributes", e, rc)) return;
  int got_type;
  std::memcpy(&got_type, &attr.location.type, sizeof(int));
  FUZZ_CHECK(got_type == type && attr.location.id == static_cast<uint32_t>(id) && attr.pageSize == page,
             "aclrtPointerGetAttributes(0x%llx) = type %d id %u page %u, the model says %d/%d/%u",
             static_cast<unsigned long long>(ptr), got_type, attr.location.id, attr.pageSize, type, id, page);
}

}  // namespace fuzz
