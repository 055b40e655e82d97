// The emu harness's second process (PeerProcess, pipe_peer.h): the forked child's body, which
// opens an emu backend of its own and reaches an import's bytes through its memfd.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "conformance/harness.h"
#include "conformance/pipe_peer.h"
#include "drivers/emu/device/physical_object.h"

namespace aclvmm::conformance {
namespace {

using pipe_peer::Answer;
using pipe_peer::Call;
using pipe_peer::Op;
using pipe_peer::read_all;
using pipe_peer::write_all;

// The child's side (pipe_peer::Serve): its pid first (emu whitelists the pid the kernel gives
// the process), then calls until kExit or the parent goes.
[[noreturn]] void serve(const BackendSetup& setup, int in, int out) {
  testing::RecordingListener listener;
  std::unique_ptr<dev::DeviceBackend> be;
  dev::BackendOptions options;
  options.emulation.device_count = setup.device_count;
  options.emulation.device_memory = setup.device_memory;
  const dev::Result opened = dev::open_device_backend("emu", options, &listener, &be);
  Answer hello{};
  hello.result = opened.raw();
  hello.value = static_cast<uint64_t>(::getpid());
  if (!write_all(out, &hello, sizeof hello) || !opened.ok()) ::_exit(2);
  dev::PhysicalId imported;
  std::vector<dev::PhysicalId> made;
  Call call{};
  while (read_all(in, &call, sizeof call)) {
    Answer answer{};
    dev::Result r;
    switch (call.op) {
      case Op::kImport: {
        dev::ImportedMemory got;
        r = be->sharing().import_memory(dev::ShareToken{call.token}, call.device, &got);
        if (r.ok()) imported = got.memory;
        break;
      }
      case Op::kRead:
        r = dev::Result::from_raw(dev::emu::EmuPhysical::from_id(imported)->memory().read(
            call.offset, answer.bytes, call.size));
        break;
      case Op::kFill: {
        std::vector<uint8_t> bytes(call.size, call.value);
        r = dev::Result::from_raw(dev::emu::EmuPhysical::from_id(imported)->memory().write(
            call.offset, bytes.data(), bytes.size()));
        break;
      }
      case Op::kSetPids:
        r = be->sharing().set_pids(dev::ShareToken{call.token}, &call.pid, 1);
        break;
      case Op::kExportNew: {
        dev::PhysicalId id;
        r = be->physical().create(dev::PhysicalSpec{dev::Location::device(call.device),
                                                     dev::PageType::kHuge, dev::MemType::kHbm,
                                                     call.size},
                                  &id);
        if (!r.ok()) break;
        made.push_back(id);
        std::vector<uint8_t> bytes(call.size, call.value);
        (void)dev::emu::EmuPhysical::from_id(id)->memory().write(0, bytes.data(), bytes.size());
        dev::ShareToken token;
        r = be->sharing().export_memory(id, &token);
        if (r.ok()) r = be->sharing().set_pids(token, &call.pid, 1);
        answer.value = token.value;
        break;
      }
      case Op::kImportKey: {
        dev::IpcImported got;
        r = be->sharing().ipc_import(call.key, call.device, &got);
        if (r.ok()) {
          imported = got.memory.memory;
          answer.value = got.offset;
        }
        break;
      }
      case Op::kSetKeyPids:
        r = be->sharing().ipc_set_pids(call.key, &call.pid, 1);
        break;
      case Op::kCloseKey:
        r = be->sharing().ipc_close_export(call.key);
        break;
      case Op::kExit:
        ::_exit(0);  // nothing released: the process just ends
    }
    answer.result = r.raw();
    if (!write_all(out, &answer, sizeof answer)) break;
  }
  ::_exit(0);
}

}  // namespace

std::unique_ptr<PeerProcess> start_emu_peer(const BackendSetup& setup, dev::DeviceBackend& current) {
  return pipe_peer::start(current, [&setup](int in, int out) { serve(setup, in, out); });
}

}  // namespace aclvmm::conformance
