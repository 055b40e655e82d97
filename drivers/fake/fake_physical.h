// FakePhysical: PhysicalAllocator of the fake backend: each object is a ByteStore with its
// properties and route, found by its id in a table, so a stale (released) or forged id is a
// violation answered with kInvalidArgument, never a crash (D3: the fake validates what the other
// backends trust).
//
// Ids count up from kFirstId and are never reused: the same calls give the same ids in every
// run, and an id from before a release stays dead.
//
// read()/write() reach an object's bytes: the harness's CPU view of physical memory today
// (conformance C9), the fake copy engine's from migration step 3.
//
// Mappings (fake_mmu.h) hold objects: release() of a mapped object ends its id (every later use
// of the id is a violation) but keeps its bytes and its charge until the last unmap, as the
// contract asks; live_objects() counts such objects until then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "drivers/fake/byte_store.h"
#include "drivers/fake/fake_machine.h"
#include "drivers/physical_allocator.h"

namespace aclvmm::dev::fake {

class FakePhysical final : public PhysicalAllocator {
 public:
  static constexpr uint64_t kFirstId = 0xfa4e00000001;

  explicit FakePhysical(FakeMachine& machine) : machine_(machine) {}

  Result create(const PhysicalSpec& spec, PhysicalId* out) override;
  Result release(PhysicalId memory) override;
  Result properties(PhysicalId memory, PhysicalProperties* out) const override;
  Result granularity(const PhysicalSpec& spec, Granularity option, uint64_t* out) const override;
  Result set_map_route(PhysicalId memory, uint32_t route) override;
  Result map_route(PhysicalId memory, uint32_t* route) const override;

  Result read(PhysicalId memory, uint64_t offset, void* dst, size_t n) const;
  Result write(PhysicalId memory, uint64_t offset, const void* src, size_t n);
  size_t live_objects() const;

  // For the fake blocks (fake_blocks.h), under the machine's lock: create() with the block's
  // granule (the host page) instead of the page type's, and release().
  Result create_locked(const PhysicalSpec& spec, uint64_t granule, PhysicalId* out);
  Result release_locked(PhysicalId memory);

  // For the fake MMU, under the machine's lock: the properties of a live id, with one mapping's
  // (nullptr and a counted violation for a dead id); hold() adds one mapping's hold on a live
  // object, let_go() ends one.
  const PhysicalProperties* live_locked(PhysicalId memory, const char* what) const;
  void hold_locked(PhysicalId memory);
  void let_go_locked(PhysicalId memory);
  // The bytes of an object a mapping holds (its id may be released), under the machine's lock.
  ByteStore* bytes_locked(PhysicalId memory);

  // For the fake's sharing, under the machine's lock: the bytes of a live object, shared with
  // the processes that import it; adopt_locked() makes an uncharged object over bytes another
  // "process" exported (the exporter's charge covers them).
  std::shared_ptr<ByteStore> shared_bytes_locked(PhysicalId memory);
  Result adopt_locked(const PhysicalProperties& properties, std::shared_ptr<ByteStore> bytes,
                      PhysicalId* out);
  // Called by release() under the machine's lock before the id dies: its export ends.
  void on_release(void (*ends_export)(void* context, PhysicalId memory), void* context) {
    ends_export_ = ends_export;
    ends_export_context_ = context;
  }

 private:
  struct Object {
    Object(const PhysicalProperties& p, std::shared_ptr<ByteStore> b, bool c)
        : properties(p), bytes(std::move(b)), charged(c) {}
    PhysicalProperties properties;
    uint32_t route = 0;
    std::shared_ptr<ByteStore> bytes;  // shared with the importers in other "processes"
    bool charged = true;               // false for an import: the exporter's charge covers it
    uint32_t mappings = 0;  // holds of the fake MMU
    bool released = false;  // the id is dead; the bytes live on while mapped
  };
  // Under the machine's lock: the live object `memory` names, or nullptr (then counted).
  Object* find(PhysicalId memory, const char* what) const;
  Result check(const PhysicalSpec& spec, uint64_t granule) const;

  FakeMachine& machine_;
  std::map<uint64_t, std::unique_ptr<Object>> objects_;
  uint64_t next_id_ = kFirstId;
  void (*ends_export_)(void* context, PhysicalId memory) = nullptr;
  void* ends_export_context_ = nullptr;
};

}  // namespace aclvmm::dev::fake
