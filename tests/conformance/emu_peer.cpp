// The emu harness's second process (PeerProcess): a forked child that opens an emu backend of
// its own and obeys the parent's calls, one fixed-size message each way over two pipes. The
// parent's backend goes through its fork hooks as the core's atfork handlers call them; the
// child then never touches it again.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "conformance/harness.h"
#include "drivers/emu/device/physical_object.h"

namespace aclvmm::conformance {
namespace {

enum class Op : uint32_t {
  kImport,
  kRead,
  kFill,
  kSetPids,
  kExportNew,
  kImportKey,
  kSetKeyPids,
  kCloseKey,
  kExit
};

struct Call {
  Op op;
  int32_t device;
  uint64_t token;
  uint64_t offset;
  uint64_t size;
  int32_t pid;
  uint8_t value;
  dev::IpcKey key;
};

struct Answer {
  int32_t result;
  uint64_t token;
  uint8_t bytes[256];
};

bool read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t got = ::read(fd, c, n);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return false;
    }
    c += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t put = ::write(fd, c, n);
    if (put <= 0) {
      if (put < 0 && errno == EINTR) continue;
      return false;
    }
    c += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

// The child's side: serves calls until kExit or the parent goes.
[[noreturn]] void serve(const BackendSetup& setup, int in, int out) {
  testing::RecordingListener listener;
  std::unique_ptr<dev::DeviceBackend> be;
  dev::BackendOptions options;
  options.emulation.device_count = setup.device_count;
  options.emulation.device_memory = setup.device_memory;
  if (!dev::open_device_backend("emu", options, &listener, &be).ok()) ::_exit(2);
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
        answer.token = token.value;
        break;
      }
      case Op::kImportKey: {
        dev::IpcImported got;
        r = be->sharing().ipc_import(call.key, call.device, &got);
        if (r.ok()) {
          imported = got.memory.memory;
          answer.token = got.offset;
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

class EmuPeer final : public PeerProcess {
 public:
  EmuPeer(pid_t child, int to, int from) : child_(child), to_(to), from_(from) {}
  ~EmuPeer() override { exit(); }

  int32_t pid() override { return static_cast<int32_t>(child_); }
  dev::Result import(dev::ShareToken token, dev::DeviceIndex device) override {
    return call({Op::kImport, device, token.value, 0, 0, 0, 0, {}}, nullptr);
  }
  dev::Result read(uint64_t offset, void* dst, size_t n) override {
    Answer a{};
    if (n > sizeof a.bytes) return dev::Result::from_errno(EINVAL);
    const dev::Result r = call({Op::kRead, 0, 0, offset, n, 0, 0, {}}, &a);
    std::memcpy(dst, a.bytes, n);
    return r;
  }
  dev::Result fill(uint64_t offset, size_t n, uint8_t value) override {
    return call({Op::kFill, 0, 0, offset, n, 0, value, {}}, nullptr);
  }
  dev::Result set_pids(dev::ShareToken token, int32_t pid) override {
    return call({Op::kSetPids, 0, token.value, 0, 0, pid, 0, {}}, nullptr);
  }
  dev::Result export_new(dev::DeviceIndex device, uint64_t size, uint8_t value, int32_t pid,
                         dev::ShareToken* out) override {
    Answer a{};
    const dev::Result r = call({Op::kExportNew, device, 0, 0, size, pid, value, {}}, &a);
    out->value = a.token;
    return r;
  }
  dev::Result import_key(const dev::IpcKey& key, dev::DeviceIndex device,
                         uint64_t* offset) override {
    Answer a{};
    const dev::Result r = call({Op::kImportKey, device, 0, 0, 0, 0, 0, key}, &a);
    *offset = a.token;
    return r;
  }
  dev::Result set_key_pids(const dev::IpcKey& key, int32_t pid) override {
    return call({Op::kSetKeyPids, 0, 0, 0, 0, pid, 0, key}, nullptr);
  }
  dev::Result close_key(const dev::IpcKey& key) override {
    return call({Op::kCloseKey, 0, 0, 0, 0, 0, 0, key}, nullptr);
  }
  void exit() override {
    if (child_ <= 0) return;
    const Call bye{Op::kExit, 0, 0, 0, 0, 0, 0, {}};
    (void)write_all(to_, &bye, sizeof bye);
    ::close(to_);
    ::close(from_);
    int status = 0;
    (void)::waitpid(child_, &status, 0);
    child_ = -1;
  }

 private:
  dev::Result call(const Call& c, Answer* answer) {
    Answer local{};
    Answer* a = answer ? answer : &local;
    if (child_ <= 0 || !write_all(to_, &c, sizeof c) || !read_all(from_, a, sizeof *a)) {
      return dev::Result::from_errno(EPIPE);
    }
    return dev::Result::from_raw(a->result);
  }

  pid_t child_;
  int to_;
  int from_;
};

}  // namespace

std::unique_ptr<PeerProcess> start_emu_peer(const BackendSetup& setup, dev::DeviceBackend& current) {
  int down[2], up[2];
  if (::pipe(down) != 0) return nullptr;
  if (::pipe(up) != 0) {
    ::close(down[0]);
    ::close(down[1]);
    return nullptr;
  }
  current.prepare_fork();
  const pid_t child = ::fork();
  if (child != 0) current.after_fork_parent();
  if (child < 0) {
    for (int fd : {down[0], down[1], up[0], up[1]}) ::close(fd);
    return nullptr;
  }
  if (child == 0) {
    current.after_fork_child();  // the parent's endpoints are not the child's to hold
    ::close(down[1]);
    ::close(up[0]);
    serve(setup, down[0], up[1]);
  }
  ::close(down[0]);
  ::close(up[1]);
  return std::make_unique<EmuPeer>(child, down[1], up[0]);
}

}  // namespace aclvmm::conformance
