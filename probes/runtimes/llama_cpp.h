// llama.cpp's build string, "b<N>-<commit>": what its /props build_info and
// answers' system_fingerprint carry, and what its entry (llama_cpp.cc) makes
// of `llama-server --version`. Everything else soakd knows about llama.cpp is
// that entry's; this header is only the build number, which tests read apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace soak::probes {

struct LlamaBuild {
  int64_t number = 0;        // b<N>
  std::string commit;        // short hash, may be empty for distro builds ("b8681-Debian" keeps "Debian")
  std::string text() const;  // "b<N>-<commit>" (or "b<N>")
};
// "b9928-81ff7abe5" (/props build_info, system_fingerprint).
std::optional<LlamaBuild> parse_llamacpp_build_info(std::string_view s);
// `llama-server --version` output: "version: 9928 (81ff7abe5)".
Result<LlamaBuild> parse_llama_server_version(std::string_view output);

}  // namespace soak::probes
