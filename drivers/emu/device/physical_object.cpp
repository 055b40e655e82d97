#include "drivers/emu/device/physical_object.h"

#include "drivers/emu/device/capacity.h"

namespace aclvmm::dev::emu {

void EmuPhysical::drop() {
  // acq_rel: whoever frees the object sees every write made by the holders before they let go.
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (ledger_ != nullptr) ledger_->uncharge(properties_.location, properties_.size);
  delete this;
}

}  // namespace aclvmm::dev::emu
