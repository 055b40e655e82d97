// Export / set-pid / import inside this process, devices and peer access (behavior.md §7, §13).
#include <unistd.h>

#include <cstring>

#include "acl/acl.h"
#include "harness.h"
#include "raw_calls.h"

namespace fuzz {
namespace {

constexpr int kNoPermission = 207006, kFeatureUnsupported = 200006;

bool well_formed(uint64_t token) { return (token >> 40) == 0 && static_cast<uint32_t>(token) != 0; }

// The share-type check of the V2 calls: DEFAULT only on this product (FABRIC is A3's).
int share_type_code(int type) { return type == 1 ? 0 : type == 2 ? kNotSupported : kRtParam; }

}  // namespace

void op_export(Input& in) {
  Model& m = model();
  const uint64_t token = pick_handle(in);
  const uint8_t misc = in.u8();
  const bool v2 = misc & 1, null_out = misc & 2;
  const int type = (misc & 4) ? int_arg(in, 4) : (v2 ? 1 : 0);
  const uint64_t flags = flags_arg(in);
  Handle* h = m.handle(token);
  Expect e = Expect::Ok();
  if (token == 0 || null_out || (!v2 && type != 0)) {
    e = Expect::Fail(kParam);
  } else if (v2 && share_type_code(type)) {
    e = Expect::Fail(share_type_code(type));
  } else if (flags > 1 || !h) {
    e = Expect::Fail(kRtParam);
  } else if (h->imported || m.export_of_handle(token)) {
    e = Expect::Fail(kDrv);
  }
  uint64_t out = 0;
  int rc = v2 ? fz_export_v2(reinterpret_cast<void*>(token), flags, type, null_out ? nullptr : &out)
              : fz_export_v1(reinterpret_cast<void*>(token), type, flags, null_out ? nullptr : &out);
  if (!verify(v2 ? "aclrtMemExportToShareableHandleV2" : "aclrtMemExportToShareableHandle", e, rc)) return;
  const uint64_t want_device = h->side == kDeviceSide ? static_cast<uint64_t>(h->device) : 0;
  FUZZ_CHECK(well_formed(out) && ((out >> 32) & 0xff) == want_device && !m.export_by_token(out),
             "export returned token 0x%llx (device field should be %llu)",
             static_cast<unsigned long long>(out),
             static_cast<unsigned long long>(want_device));
  m.exports.push_back(Export{out, token, (flags & 1) == 0});
}

void op_set_pid(Input& in) {
  Model& m = model();
  uint64_t token = pick_token(in);
  const uint8_t misc = in.u8();
  const bool v2 = misc & 1, null_pid = misc & 2, zero_pids = misc & 8;
  size_t n = (misc & 4) ? 0 : 1 + (misc >> 6);
  if (misc & 16) n = 70000;  // over the limit: must be refused before the array is read
  const int type = (v2 && (misc & 32)) ? int_arg(in, 4) : 1;
  int32_t pids[4] = {zero_pids ? 0 : static_cast<int32_t>(getpid()), 0, zero_pids ? 0 : 1, 0};
  Expect e = Expect::Ok();
  Export* ex = m.export_by_token(token);
  if (null_pid || n == 0) {
    e = Expect::Fail(kParam);
  } else if (v2 && share_type_code(type)) {
    e = Expect::Fail(share_type_code(type));
  } else if (n > 65535) {
    e = Expect::Fail(kRtParam);
  } else if (!well_formed(token) || ((token >> 32) & 0xff) >= static_cast<uint64_t>(kDevices) || !ex) {
    e = Expect::Fail(kBadHandle);
  } else if (!ex->validate_pids) {
    e = Expect::Fail(kNoPermission);
  } else if (zero_pids) {
    e = Expect::Fail(kDrv);  // every pid in the list is 0
  }
  int rc = v2 ? fz_set_pid_v2(&token, type, null_pid ? nullptr : pids, n)
              : aclrtMemSetPidToShareableHandle(token, null_pid ? nullptr : pids, n);
  verify(v2 ? "aclrtMemSetPidToShareableHandleV2" : "aclrtMemSetPidToShareableHandle", e, rc);
}

void op_import(Input& in) {
  Model& m = model();
  uint64_t token = pick_token(in);
  const int dev_arg = int_arg(in, 3);
  const uint8_t misc = in.u8();
  const bool v2 = misc & 1, null_out = misc & 2;
  const uint64_t flags = (v2 && (misc & 4)) ? flags_arg(in) : 0;
  const int device = v2 ? m.current : dev_arg;
  Expect e = Expect::Ok();
  // The same token (all of it: another device field is another token) on the same device.
  const auto record = m.imports.find({token, device});
  const bool known = well_formed(token) && record != m.imports.end();
  Export* ex = m.export_by_token(token);
  Handle* exporter = ex ? m.handle(ex->handle) : nullptr;
  if (null_out || (v2 && flags != 0)) {
    e = Expect::Fail(kParam);
  } else if (device < 0 || device >= kDevices) {
    e = Expect::Fail(kBadDevice);
  } else if (!well_formed(token)) {
    e = Expect::Fail(kBadHandle);
  } else if (known) {
    e = Expect::Ok();  // the same token on the same device again: the same handle
  } else if (!exporter) {
    e = Expect::Fail(kBadHandle);
  } else if (exporter->side != kDeviceSide || exporter->device == device) {
    e = Expect::Fail(kDrv);  // one's own export onto the same device
  }
  aclrtDrvMemHandle out = nullptr;
  int rc = v2 ? fz_import_v2(&token, 1, flags, null_out ? nullptr : &out)
              : aclrtMemImportFromShareableHandle(token, dev_arg, null_out ? nullptr : &out);
  if (!verify(v2 ? "aclrtMemImportFromShareableHandleV2" : "aclrtMemImportFromShareableHandle", e, rc)) {
    return;
  }
  const uint64_t got = reinterpret_cast<uint64_t>(out);
  if (known) {
    FUZZ_CHECK(got == record->second, "a repeated import returned another handle");
    ++m.handle(got)->ref;
    return;
  }
  FUZZ_CHECK(got != 0 && !m.handle(got), "import returned a NULL or live handle");
  Handle h;
  h.token = got;
  h.size = exporter->size;
  h.side = kDeviceSide;
  h.device = device;
  h.reported = exporter->device;
  h.page = exporter->page == 0 ? 1 : exporter->page;  // "normal" pages are really huge
  h.mem = exporter->mem;
  h.imported = true;
  h.data = exporter->data;
  m.imports[{token, device}] = got;
  m.peer[device][h.reported] = m.peer[h.reported][device] = true;
  m.handles.push_back(h);
}

void op_set_device(Input& in) {
  Model& m = model();
  const int d = int_arg(in, 3);
  Expect e = d >= 0 && d < kDevices ? Expect::Ok() : Expect::Fail(kBadDevice);
  if (verify("aclrtSetDevice", e, aclrtSetDevice(d))) m.current = d;
}

void op_peer_access(Input& in) {
  Model& m = model();
  const int peer = int_arg(in, 3);
  const uint8_t misc = in.u8();
  const bool disable = misc & 1;
  const uint32_t flags = (misc & 2) ? static_cast<uint32_t>(flags_arg(in)) : 0;
  Expect e = Expect::Ok();
  if (!disable && flags != 0) {
    e = Expect::Fail(kFeatureUnsupported);
  } else if (peer == m.current) {
    e = Expect::Fail(kParam);
  } else if (peer < 0 || peer >= kDevices) {
    e = Expect::Fail(kBadDevice);
  }
  int rc = disable ? aclrtDeviceDisablePeerAccess(peer) : aclrtDeviceEnablePeerAccess(peer, flags);
  if (verify(disable ? "aclrtDeviceDisablePeerAccess" : "aclrtDeviceEnablePeerAccess", e, rc)) {
    m.peer[m.current][peer] = !disable;
  }
}

}  // namespace fuzz
