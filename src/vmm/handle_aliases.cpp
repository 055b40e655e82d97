#include "vmm/handle_aliases.h"

#include <new>

namespace aclvmm {

bool HandleAliases::bind(uint64_t driver_handle, uint64_t token) noexcept {
  std::lock_guard lock(mu_);
  try {
    tokens_[driver_handle] = token;
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

uint64_t HandleAliases::token_of(uint64_t value) const {
  std::lock_guard lock(mu_);
  auto it = tokens_.find(value);
  return it != tokens_.end() ? it->second : value;
}

void HandleAliases::clear() {
  std::lock_guard lock(mu_);
  tokens_.clear();
}

}  // namespace aclvmm
