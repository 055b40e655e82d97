#include "drivers/emu/device/page_table.h"

#include <cerrno>
#include <cstdlib>
#include <new>

#include "drivers/emu/device/hazard.h"

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kTopEntries = EmuPageTable::kLimit / kGiB;

}  // namespace

Access MmuEntry::access(Location location) const {
  if (location.kind == Location::Kind::kHost) {
    return static_cast<Access>(host.load(std::memory_order_relaxed));
  }
  if (location.kind != Location::Kind::kDevice || location.id < 0 || location.id >= kMaxDevices) {
    return Access::kNone;
  }
  const uint64_t bit = uint64_t{1} << location.id;
  if ((dev_read.load(std::memory_order_relaxed) & bit) == 0) return Access::kNone;
  return (dev_write.load(std::memory_order_relaxed) & bit) != 0 ? Access::kReadWrite
                                                                  : Access::kRead;
}

void MmuEntry::set_access(Location location, Access flags) {
  const auto value = static_cast<uint8_t>(flags);
  if (location.kind == Location::Kind::kHost) {
    host.store(value, std::memory_order_relaxed);
    return;
  }
  if (location.kind != Location::Kind::kDevice || location.id < 0 || location.id >= kMaxDevices) {
    return;
  }
  // The core serializes the calls on one range (device_mmu.h), so one writer at a time: a load
  // and a store each, not a locked read-modify-write (two of those were a tenth of a map's cost
  // in the emulator). The copy engine reads concurrently and sees the old mask or the new one.
  const uint64_t bit = uint64_t{1} << location.id;
  const uint64_t read = dev_read.load(std::memory_order_relaxed);
  dev_read.store((value & 1) != 0 ? read | bit : read & ~bit, std::memory_order_relaxed);
  const uint64_t write = dev_write.load(std::memory_order_relaxed);
  dev_write.store(flags == Access::kReadWrite ? write | bit : write & ~bit,
                  std::memory_order_relaxed);
}

EmuPageTable::EmuPageTable() {
  // calloc of 1 MiB: the allocator maps it, and untouched GiBs cost no memory.
  top_ = static_cast<std::atomic<Leaf*>*>(std::calloc(kTopEntries, sizeof(std::atomic<Leaf*>)));
}

EmuPageTable::~EmuPageTable() {
  if (top_ == nullptr) return;
  for (uint64_t i = 0; i < kTopEntries; ++i) delete top_[i].load(std::memory_order_relaxed);
  std::free(top_);
}

std::atomic<MmuEntry*>* EmuPageTable::word(uint64_t va) const {
  if (top_ == nullptr || va >= kLimit) return nullptr;
  Leaf* leaf = top_[va / kGiB].load(std::memory_order_acquire);
  return leaf == nullptr ? nullptr : &leaf->words[(va % kGiB) / kGranule];
}

MmuEntry* EmuPageTable::find(uint64_t va) const {
  std::atomic<MmuEntry*>* w = word(va);
  return w == nullptr ? nullptr : w->load(std::memory_order_acquire);
}

MmuEntry* EmuPageTable::protect(size_t k, uint64_t va) const {
  std::atomic<MmuEntry*>* w = word(va);
  return w == nullptr ? nullptr : hazard::protect(k, *w);
}

MmuEntry* EmuPageTable::first_from(uint64_t va) const {
  if (top_ == nullptr) return nullptr;
  for (uint64_t i = va / kGiB; i < kTopEntries; ++i) {
    Leaf* leaf = top_[i].load(std::memory_order_acquire);
    if (leaf == nullptr) continue;
    const uint64_t first = i == va / kGiB ? (va % kGiB) / kGranule : 0;
    for (uint64_t w = first; w < kLeafWords; ++w) {
      if (MmuEntry* e = leaf->words[w].load(std::memory_order_acquire)) return e;
    }
  }
  return nullptr;
}

size_t EmuPageTable::live() const {
  size_t count = 0;
  for (MmuEntry* e = first_from(0); e != nullptr; e = first_from(e->words_end())) ++count;
  return count;
}

Result EmuPageTable::prepare(uint64_t va, uint64_t size) {
  if (top_ == nullptr) return Result::from_errno(ENOMEM);
  if (size == 0 || va >= kLimit || size > kLimit - va) return Result::from_errno(EINVAL);
  for (uint64_t gib = va / kGiB; gib <= (va + size - 1) / kGiB; ++gib) {
    if (top_[gib].load(std::memory_order_acquire) != nullptr) continue;
    Leaf* fresh = new (std::nothrow) Leaf();
    if (fresh == nullptr) return Result::from_errno(ENOMEM);
    Leaf* expected = nullptr;
    // acq_rel: the winner's zeroed words are seen by every later lookup through the pointer.
    if (!top_[gib].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
      delete fresh;  // another range of the same GiB made it first
    }
  }
  for (uint64_t a = va; a < va + size; a += kGranule) {
    if (word(a)->load(std::memory_order_relaxed) != nullptr) return Result::from_errno(EINVAL);
  }
  return Result::success();
}

void EmuPageTable::publish(MmuEntry* entry) {
  for (uint64_t a = entry->va; a < entry->va + entry->size; a += kGranule) {
    word(a)->store(entry, std::memory_order_release);
  }
}

void EmuPageTable::clear(uint64_t va, uint64_t size) {
  for (uint64_t a = va; a < va + size; a += kGranule) {
    word(a)->store(nullptr, std::memory_order_release);
  }
}

}  // namespace aclvmm::dev::emu
