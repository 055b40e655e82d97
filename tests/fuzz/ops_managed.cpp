// Managed memory and streams (behavior.md §10, §13).
#include <cstring>

#include "acl/acl.h"
#include "harness.h"
#include "raw_calls.h"

namespace fuzz {
namespace {

bool stream_known(uint64_t token) {
  for (uint64_t s : model().streams) {
    if (s == token) return true;
  }
  return false;
}

}  // namespace

void op_alloc_managed(Input& in) {
  Model& m = model();
  const uint64_t size = size_arg(in);
  const uint8_t misc = in.u8();
  const uint32_t flag = (misc & 2) ? static_cast<uint32_t>(int_arg(in, 3)) : 1;
  const uint64_t window = m.uvm_end - m.uvm_begin;
  uint64_t bytes = 0;
  Expect e = Expect::Ok();
  if ((misc & 1) || flag != 1) {
    e = Expect::Fail(kParam);
  } else if (size == 0) {
    e = Expect::Fail(kRtParam);
  } else if (!round_up_ok(size, kChunk, &bytes) || bytes > window - m.managed_bytes()) {
    e = Expect::Fail(kNoMemory);
  } else if (bytes > 64 * kGiB) {
    e = Expect::OkOr({kNoMemory});  // the host may refuse that much backing
  }
  void* out = nullptr;
  if (!verify("aclrtMemAllocManaged", e, aclrtMemAllocManaged((misc & 1) ? nullptr : &out, size, flag))) {
    return;
  }
  const uint64_t base = reinterpret_cast<uint64_t>(out);
  FUZZ_CHECK(m.in_uvm(base) && base % kChunk == 0 && !m.region_at(base),
             "aclrtMemAllocManaged returned 0x%llx: outside the managed window or on a live object",
             static_cast<unsigned long long>(base));
  Region r;
  r.kind = Kind::kManaged;
  r.base = base;
  r.size = r.span = bytes;
  r.data = std::make_shared<Mem>(bytes);
  m.regions[base] = r;
}

void op_managed_advise(Input& in) {
  Model& m = model();
  const uint64_t ptr = pick_addr(in, Want::kManaged);
  const uint64_t size = size_arg(in);
  const int advice = int_arg(in, 7);
  const int type = int_arg(in, 6);
  const int id = int_arg(in, 3);
  Expect e = Expect::Ok();
  if (ptr == 0 || size == 0) {
    e = Expect::Fail(kParam);
  } else if (advice < 0 || advice > 5 || (type == 1 && (id < 0 || id >= kDevices)) || !m.in_uvm(ptr)) {
    e = Expect::Fail(kRtParam);
  } else if (advice >= 2 && !(type == 1 || type == 2 ||
                              (type == 3 && id >= 0 && id < (m.numa_nodes > 0 ? m.numa_nodes : 1)))) {
    e = Expect::Fail(kDrv);  // no valid location for this advice
  } else if (!m.managed_pages(ptr, size)) {
    e = Expect::Fail(kDrv);
  }
  verify("aclrtMemManagedAdvise", e, fz_advise(reinterpret_cast<void*>(ptr), size, advice, type, id));
}

void op_managed_prefetch(Input& in) {
  const uint64_t ptr = pick_addr(in, Want::kManaged);
  const uint64_t size = size_arg(in);
  const int type = int_arg(in, 6);
  const int id = int_arg(in, 3);
  const uint64_t stream = pick_stream(in);
  const uint32_t flags = static_cast<uint32_t>(flags_arg(in));
  Expect e = Expect::Ok();
  if (ptr == 0 || size == 0 || flags != 0) {
    e = Expect::Fail(kParam);
  } else if (type < 1 || type > 4 || (type == 1 && (id < 0 || id >= kDevices))) {
    e = Expect::Fail(kRtParam);
  } else if (stream != 0 && !stream_known(stream)) {
    e = Expect::Fail(kRtParam);
  }
  // Driver-side failures are only logged: the call itself succeeds (behavior.md §10).
  int rc = fz_prefetch(reinterpret_cast<void*>(ptr), size, type, id, flags, reinterpret_cast<void*>(stream));
  if (!verify("aclrtMemManagedPrefetchAsync", e, rc)) return;
  // Stream order: once synchronised, the prefetch is done and the next step sees a settled state.
  FUZZ_CHECK(aclrtSynchronizeStream(reinterpret_cast<void*>(stream)) == 0,
             "aclrtSynchronizeStream after a prefetch failed");
}

void op_managed_get_attr(Input& in) {
  Model& m = model();
  const uint64_t ptr = pick_addr(in, Want::kManaged);
  const uint64_t size = size_arg(in);
  const int attr = int_arg(in, 10);
  static const size_t kSizes[] = {4, 8, 0, 3, 12};
  const uint8_t ds = in.u8();
  const size_t data_size = kSizes[ds % 5];
  const bool null_data = ds >= 0xF0;
  Expect e = Expect::Ok();
  const bool list = attr == 3;
  if (ptr == 0 || null_data || size == 0) {
    e = Expect::Fail(kParam);
  } else if (attr < 1 || attr > 8 || !m.in_uvm(ptr) ||
             (list ? (data_size == 0 || data_size % 4 != 0) : data_size != 4)) {
    e = Expect::Fail(kRtParam);
  } else if (!m.managed_pages(ptr, size)) {
    e = Expect::Fail(kDrv);
  }
  int32_t data[4] = {0, 0, 0, 0};
  verify("aclrtMemManagedGetAttr", e,
         fz_get_attr(attr, reinterpret_cast<void*>(ptr), size, null_data ? nullptr : data, data_size));
}

void op_create_stream(Input& in) {
  Model& m = model();
  const bool null_out = in.u8() & 1;
  aclrtStream s = nullptr;
  if (!verify("aclrtCreateStream", null_out ? Expect::Fail(kParam) : Expect::Ok(),
              aclrtCreateStream(null_out ? nullptr : &s))) {
    return;
  }
  FUZZ_CHECK(s != nullptr && !stream_known(reinterpret_cast<uint64_t>(s)),
             "aclrtCreateStream returned NULL or a live stream");
  m.streams.push_back(reinterpret_cast<uint64_t>(s));
}

void op_destroy_stream(Input& in) {
  Model& m = model();
  const uint64_t s = pick_stream(in);
  const bool force = in.u8() & 1;
  Expect e = s == 0 ? Expect::Fail(kParam) : stream_known(s) ? Expect::Ok() : Expect::Fail(kRtParam);
  void* p = reinterpret_cast<void*>(s);
  if (!verify("aclrtDestroyStream", e, force ? aclrtDestroyStreamForce(p) : aclrtDestroyStream(p))) return;
  for (size_t i = 0; i < m.streams.size(); ++i) {
    if (m.streams[i] == s) m.streams.erase(m.streams.begin() + static_cast<long>(i));
  }
  m.stale_streams.push_back(s);
}

void op_synchronize_stream(Input& in) {
  const uint64_t s = pick_stream(in);
  Expect e = (s == 0 || stream_known(s)) ? Expect::Ok() : Expect::Fail(kRtParam);
  verify("aclrtSynchronizeStream", e, aclrtSynchronizeStream(reinterpret_cast<void*>(s)));
}

}  // namespace fuzz
