// Filesystem helpers with the permissions soakd promises: directories it
// creates are 0700 (only the ones it creates; existing ones are left alone).
#pragma once

#include <string>

#include "core/result.h"

namespace soak {

Status make_parent_dirs_private(const std::string& file_path);

}  // namespace soak
