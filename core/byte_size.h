// Memory sizes in the config: strings with units ("64GiB", "48GB", "512MiB",
// "1.5GiB"), held as bytes. Binary units (KiB, MiB, GiB, TiB) are powers of
// 1024, decimal ones (KB, MB, GB, TB) powers of 1000, as macOS and the runtime
// docs write them; a bare number is an error (bytes or megabytes?). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace soak {

Result<int64_t> parse_byte_size(std::string_view s);
// For messages: the largest binary unit that keeps one decimal, e.g. "64.0 GiB", "512.0 MiB", "900 B".
std::string format_bytes(int64_t bytes);

}  // namespace soak
