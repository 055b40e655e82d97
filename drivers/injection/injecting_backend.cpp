#include "drivers/injection/injecting_backend.h"

#include <cerrno>
#include <new>
#include <utility>

namespace aclvmm::dev::injection {

InjectingBackend::InjectingBackend(std::unique_ptr<DeviceBackend> inner, BackendListener& listener)
    : inner_(std::move(inner)),
      devices_(inner_->devices(), InjectionGate(listener)),
      windows_(inner_->windows(), InjectionGate(listener)),
      physical_(inner_->physical(), InjectionGate(listener)),
      blocks_(inner_->blocks(), InjectionGate(listener)),
      mmu_(inner_->mmu(), InjectionGate(listener)),
      copy_engine_(inner_->copy_engine(), InjectionGate(listener)),
      sharing_(inner_->sharing(), InjectionGate(listener)),
      unified_(inner_->unified_memory(), InjectionGate(listener)),
      host_(inner_->host(), InjectionGate(listener)) {}

Result wrap_with_injection(std::unique_ptr<DeviceBackend> inner, BackendListener& listener,
                           std::unique_ptr<DeviceBackend>* out) {
  if (!inner || out == nullptr) return Result::from_errno(EINVAL);
  auto* wrapped = new (std::nothrow) InjectingBackend(std::move(inner), listener);
  if (wrapped == nullptr) return Result::from_errno(ENOMEM);
  out->reset(wrapped);
  return Result::success();
}

}  // namespace aclvmm::dev::injection
