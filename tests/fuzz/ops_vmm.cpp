// Operations on physical handles, reservations and mappings (behavior.md §1-3, §5, §6, §8).
#include <cstring>

#include "acl/acl.h"
#include "harness.h"

namespace fuzz {
namespace {

// aclrtMemAttr → (page type, memory type) for a device or a host location (behavior.md §1);
// false when the ACL layer rejects the attribute for that location.
bool attr_table(int attr, bool host, int* page, int* mem) {
  const int kHbm = 0, kDdr = 1, kP2PHbm = 2, kP2PDdr = 3;
  switch (attr) {
    case 4: *page = 1; *mem = kHbm; return true;
    case 5: *page = 0; *mem = kHbm; return true;
    case 10: *page = 2; *mem = kHbm; return true;
    case 2: *page = 1; *mem = kDdr; return host;
    case 3: *page = 0; *mem = kDdr; return host;
    case 6: *page = 1; *mem = kP2PDdr; return host;
    case 7: *page = 0; *mem = kP2PDdr; return host;
    case 12: case 13: case 14: *page = attr - 12; *mem = host ? kDdr : kHbm; return true;
    case 15: case 16: case 17: *page = attr - 15; *mem = host ? kP2PDdr : kP2PHbm; return true;
    default: return false;
  }
}

// The aclrtMemAttr that properties report for (page, mem) (behavior.md §6).
// Device and host agree except for P2P DDR, which only host memory has.
int reverse_attr(int page, int mem) {
  if (mem == 0) return page == 1 ? 4 : page == 0 ? 5 : 10;
  if (mem == 1) return 12 + page;
  if (mem == 2) return 15 + page;
  return page == 0 ? 7 : 15 + page;  // host P2P DDR
}

bool ddr_only(int attr) { return attr == 2 || attr == 3 || attr == 6 || attr == 7; }

Expect expect_physical(uint64_t size, int type, uint32_t id, int attr, int handle_type, int alloc_type,
                       uint64_t reserve, uint64_t flags, bool null_out, bool null_prop, Handle* out) {
  Model& m = model();
  if (null_out || null_prop || size == 0 || flags != 0 || handle_type != 0 || alloc_type != 0 ||
      type == 2 || type == 3 || (type == 1 && ddr_only(attr)) ||
      !attr_table(attr, type != 1, &out->page, &out->mem)) {
    return Expect::Fail(kParam);
  }
  if (type == 1) {
    if (static_cast<int32_t>(id) < 0 || static_cast<int32_t>(id) >= kDevices) return Expect::Fail(kBadDevice);
    if (attr == 17) return Expect::Fail(kNotSupported);  // ACL_MEM_P2P_HUGE1G: A3 only
    out->side = kDeviceSide;
  } else if (type == 4) {
    out->side = kNumaSide;
  } else if (type == 0) {
    out->side = kHostSide;
  } else {
    return Expect::Fail(kRtParam);
  }
  if (type == 4 && m.numa_nodes == 0) return Expect::Fail(kNotSupported);
  if (reserve != 0) return Expect::Fail(kRtParam);
  if (type == 0 && id != 0) return Expect::Fail(id < 64 ? kNotSupported : kRtParam);
  if (type == 4 && id >= static_cast<uint32_t>(m.numa_nodes)) return Expect::Fail(kRtParam);
  out->device = type == 0 ? 0 : static_cast<int>(id);
  uint64_t rounded;
  if (out->page == 2) {
    if (out->side != kDeviceSide && out->mem != 3) return Expect::Fail(kNotSupported);
    if (!round_up_ok(size, kGiB, &rounded)) return Expect::Fail(kNoMemory);
  } else if (!round_up_ok(size, kChunk, &rounded)) {
    return Expect::Fail(kNoMemory);
  }
  out->size = rounded;
  if (out->side == kDeviceSide) {
    out->charged = true;
    const uint64_t used = static_cast<uint64_t>(g_before.used[out->device]);
    return rounded > kDeviceMemory - used ? Expect::Fail(kNoMemory) : Expect::Ok();
  }
  if (rounded > kTiB) return Expect::Fail(kNoMemory);
  return m.host_used() + rounded <= m.host_limit ? Expect::Ok() : Expect::OkOr({kNoMemory});
}

}  // namespace

void op_malloc_physical(Input& in) {
  const uint64_t size = size_arg(in);
  const int type = int_arg(in, 6);
  const uint32_t id = static_cast<uint32_t>(int_arg(in, 4));
  const int attr = int_arg(in, 20);
  const uint8_t misc = in.u8();
  const int handle_type = (misc & 4) ? int_arg(in, 4) : 0;
  const int alloc_type = (misc & 8) ? int_arg(in, 3) : 0;
  const uint64_t reserve = (misc & 16) ? in.u8() : 0;
  const uint64_t flags = (misc & 32) ? flags_arg(in) : 0;
  aclrtPhysicalMemProp prop;
  std::memset(&prop, 0, sizeof prop);
  std::memcpy(&prop.handleType, &handle_type, sizeof(int));
  std::memcpy(&prop.allocationType, &alloc_type, sizeof(int));
  std::memcpy(&prop.memAttr, &attr, sizeof(int));
  std::memcpy(&prop.location.type, &type, sizeof(int));
  prop.location.id = id;
  prop.reserve = reserve;
  Handle h;
  Expect e = expect_physical(size, type, id, attr, handle_type, alloc_type, reserve, flags, misc & 1,
                             misc & 2, &h);
  aclrtDrvMemHandle out = nullptr;
  int rc = aclrtMallocPhysical((misc & 1) ? nullptr : &out, size, (misc & 2) ? nullptr : &prop, flags);
  if (!verify("aclrtMallocPhysical", e, rc)) return;
  h.token = reinterpret_cast<uint64_t>(out);
  FUZZ_CHECK(h.token != 0 && !model().handle(h.token), "aclrtMallocPhysical returned handle 0x%llx, "
             "zero or already live", static_cast<unsigned long long>(h.token));
  h.data = std::make_shared<Mem>(h.size);
  model().handles.push_back(h);
}

void op_free_physical(Input& in) {
  Model& m = model();
  const uint64_t token = pick_handle(in);
  Handle* h = m.handle(token);
  Expect e = token == 0 ? Expect::Fail(kParam)
             : !h       ? Expect::Fail(kRtParam)
             : (h->map_ref != 0 && h->ref <= h->map_ref) ? Expect::Fail(kRtParam)
                                                         : Expect::Ok();
  if (!verify("aclrtFreePhysical", e, aclrtFreePhysical(reinterpret_cast<void*>(token)))) return;
  if (--h->ref == 0) m.drop_handle(token);
}

void op_properties(Input& in) {
  Model& m = model();
  const uint64_t token = pick_handle(in);
  const bool null_prop = in.u8() & 1;
  Handle* h = m.handle(token);
  Expect e = (token == 0 || null_prop) ? Expect::Fail(kParam) : !h ? Expect::Fail(kRtParam) : Expect::Ok();
  aclrtPhysicalMemProp prop;
  std::memset(&prop, 0xab, sizeof prop);
  int rc = aclrtMemGetAllocationPropertiesFromHandle(reinterpret_cast<void*>(token),
                                                     null_prop ? nullptr : &prop);
  if (!verify("aclrtMemGetAllocationPropertiesFromHandle", e, rc)) return;
  int got[4];
  std::memcpy(&got[0], &prop.handleType, sizeof(int));
  std::memcpy(&got[1], &prop.allocationType, sizeof(int));
  std::memcpy(&got[2], &prop.memAttr, sizeof(int));
  std::memcpy(&got[3], &prop.location.type, sizeof(int));
  const int want_attr = reverse_attr(h->page, h->mem);
  const int want_type = h->side == kDeviceSide ? 1 : h->side == kHostSide ? 0 : 4;
  const uint32_t want_id = static_cast<uint32_t>(h->reported >= 0 ? h->reported : h->device);
  FUZZ_CHECK(got[0] == 0 && got[1] == 0 && got[2] == want_attr && got[3] == want_type &&
                 prop.location.id == want_id && prop.reserve == 0,
             "properties of 0x%llx: handleType %d allocationType %d memAttr %d (want %d) location "
             "%d/%u (want %d/%u) reserve %llu", static_cast<unsigned long long>(token), got[0], got[1],
             got[2], want_attr, got[3], prop.location.id, want_type, want_id,
             static_cast<unsigned long long>(prop.reserve));
}

void op_reserve(Input& in) {
  Model& m = model();
  const uint64_t size = size_arg(in);
  const uint8_t sel = in.u8();
  const uint8_t misc = in.u8();
  const uint64_t alignment = (misc & 2) ? uint64_t{in.u8()} + 1 : 0;
  const uint64_t flags = (misc & 4) ? flags_arg(in) : (misc >> 3) & 1;
  uint64_t expect = 0;
  if (sel >= 0x80 && sel < 0xA0 && !m.regions.empty()) {
    auto it = m.regions.begin();
    std::advance(it, sel % m.regions.size());
    expect = it->first;
  } else if (sel >= 0xA0 && sel < 0xC0 && !m.stale_addrs.empty()) {
    expect = m.stale_addrs[sel % m.stale_addrs.size()];
  } else if (sel >= 0xC0 && sel < 0xE0) {
    expect = m.svm_general + uint64_t{sel & 0x1fu} * kGiB;
  } else if (sel >= 0xE0 && sel < 0xF0) {
    const uint64_t edge[] = {m.svm_end - kChunk, m.svm_end, m.svm_begin, m.svm_general - kGiB,
                             m.svm_general + kMiB};
    expect = edge[sel % 5];
  } else if (sel >= 0xF0) {
    expect = in.u64();
  }
  Expect e = Expect::Ok();
  uint64_t rsize = 0, span = 0, align = kChunk;
  if ((misc & 1) || size == 0 || flags > 1) {
    e = Expect::Fail(kParam);
  } else if (alignment != 0 || !round_up_ok(size < kChunk ? kChunk : size, kChunk, &rsize)) {
    e = Expect::Fail(kRtParam);
  } else {
    align = rsize > 512 * kMiB ? kGiB : kChunk;
    if (!round_up_ok(rsize, align, &span)) {
      e = Expect::Fail(kRtParam);  // too large, as when rounding to 2 MiB overflows
    } else if (expect != 0) {
      uint64_t need = kGiB;
      if (rsize <= 512 * kMiB) {
        need = kChunk;
        while (need < rsize) need <<= 1;
      }
      if (expect % need != 0 || expect - m.svm_begin >= m.svm_end - m.svm_begin) {
        e = Expect::Fail(kRtParam);
      } else if (!m.svm_free(expect, span)) {
        e = Expect::Fail(kDrv);
      }
    } else if (!m.svm_fits(span, align)) {
      e = Expect::Fail(kNoMemory);
    }
  }
  void* out = nullptr;
  int rc = aclrtReserveMemAddress((misc & 1) ? nullptr : &out, size, alignment,
                                  reinterpret_cast<void*>(expect), flags);
  if (!verify("aclrtReserveMemAddress", e, rc)) return;
  const uint64_t base = reinterpret_cast<uint64_t>(out);
  FUZZ_CHECK((expect == 0 || base == expect) && base % align == 0 && m.svm_free(base, span),
             "aclrtReserveMemAddress(size %llu, expect 0x%llx) returned 0x%llx: not where the "
             "model has room", static_cast<unsigned long long>(size),
             static_cast<unsigned long long>(expect), static_cast<unsigned long long>(base));
  Region r;
  r.kind = Kind::kReservation;
  r.base = base;
  r.size = rsize;
  r.span = span;
  m.regions[base] = r;
}

void op_reserve_no_uc(Input& in) {
  const uint64_t size = size_arg(in);
  const uint8_t misc = in.u8();
  const uint64_t flags = (misc & 4) ? flags_arg(in) : 0;
  const uint64_t expect = (misc & 2) ? in.u64() : 0x180000000000ull;
  Expect e = ((misc & 1) || size == 0 || flags > 1) ? Expect::Fail(kParam) : Expect::Fail(kNotSupported);
  void* out = nullptr;
  verify("aclrtReserveMemAddressNoUCMemory", e,
         aclrtReserveMemAddressNoUCMemory((misc & 1) ? nullptr : &out, size, 0,
                                          reinterpret_cast<void*>(expect), flags));
}

void op_release(Input& in) {
  Model& m = model();
  const uint64_t va = pick_addr(in, Want::kReservation);
  auto it = m.regions.find(va);
  const bool reservation = it != m.regions.end() && it->second.kind == Kind::kReservation;
  Expect e = va == 0 ? Expect::Fail(kParam)
             : !reservation ? Expect::Fail(kRtParam)
             : !it->second.maps.empty() ? Expect::Fail(kDrv)
                                        : Expect::Ok();
  if (!verify("aclrtReleaseMemAddress", e, aclrtReleaseMemAddress(reinterpret_cast<void*>(va)))) return;
  m.regions.erase(it);
  m.stale_addrs.push_back(va);
}

}  // namespace fuzz
