// The two outputs of aclvmm-smi: the npu-smi-like table and JSON (schema in docs/smi.md).
#pragma once

#include <string>

#include "snapshot.h"

namespace aclvmm::smi_tool {

std::string render_table(const Snapshot& snap, const std::string& version);
std::string render_json(const Snapshot& snap, const std::string& version);

}  // namespace aclvmm::smi_tool
