// A strict check that an aclInit configuration file is one JSON object nested at most 10 deep
// (CANN's limit). The keys concern features outside this library, so nothing else is read.
#pragma once

#include <string>

namespace aclvmm {

bool json_config_valid(const std::string& text, std::string* why);

}  // namespace aclvmm
