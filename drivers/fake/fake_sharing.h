// FakeSharing: the fake's Sharing unit (drivers/sharing.h) over a FakeWorld: the same contract
// as emu's, enforced the same way (the whitelist with its stamps against logical start times,
// disable_validation, the same-process rules, an exporter's exit), with no sockets; IPC keys
// likewise (their text carries the configured pid as the bare tgid).
//
// Results as drivers/sharing.h gives them; a dead or forged PhysicalId, a device out of range or
// a null pointer is a counted violation (kInvalidArgument), as everywhere in the fake.
//
// Threading: the machine's lock, then the world's, for every operation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "drivers/fake/fake_machine.h"
#include "drivers/fake/fake_physical.h"
#include "drivers/fake/fake_world.h"
#include "drivers/sharing.h"

namespace aclvmm::dev::fake {

class FakeSharing final : public Sharing {
 public:
  // Starts this process in `world` (its pid from the configuration, its start time the world's
  // clock now).
  FakeSharing(FakeMachine& machine, FakePhysical& physical, std::shared_ptr<FakeWorld> world);
  // The process exits: its exports vanish from the world.
  ~FakeSharing() override;
  FakeSharing(const FakeSharing&) = delete;
  FakeSharing& operator=(const FakeSharing&) = delete;

  Result export_memory(PhysicalId memory, ShareToken* out) override;
  Result export_fabric(PhysicalId memory, FabricToken* inout) override;
  Result disable_validation(ShareToken token) override;
  Result set_pids(ShareToken token, const int32_t* pids, uint32_t count) override;
  Result token_of_fabric(const FabricToken& fabric, ShareToken* out) override;
  Result import_memory(ShareToken token, DeviceIndex device, ImportedMemory* out) override;
  Result import_fabric(const FabricToken& fabric, DeviceIndex device,
                       ImportedMemory* out) override;

  Result ipc_export(const IpcRange& range, bool validate_pids, IpcKey* out) override;
  Result ipc_set_pids(const IpcKey& key, const int32_t* pids, uint32_t count) override;
  Result ipc_set_link(const IpcKey& key, uint32_t link) override;
  Result ipc_close_export(const IpcKey& key) override;
  void ipc_revoke(const IpcKey& key) override;
  Result ipc_import(const IpcKey& key, DeviceIndex device, IpcImported* out) override;

  uint64_t imports_denied() const;

 private:
  Result export_locked(PhysicalId memory, uint64_t* token);
  // FakePhysical::release, under the machine's lock: the export of `memory` ends.
  static void ends_export(void* self, PhysicalId memory);

  FakeMachine& machine_;
  FakePhysical& physical_;
  const std::shared_ptr<FakeWorld> world_;
  const int32_t pid_;
  std::map<uint64_t, uint64_t> exported_;  // PhysicalId -> token; under the machine's lock
  uint64_t denied_ = 0;                    // under the machine's lock
};

}  // namespace aclvmm::dev::fake
