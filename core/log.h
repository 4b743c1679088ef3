// Logging setup. The composition root makes one logger and hands it down by
// shared_ptr; nothing logs through a global. Console when stderr is a
// terminal, a size-rotated file otherwise (launchd). Secrets are never logged:
// API keys stay in the environment and are only read when a request is built;
// redact() scrubs Authorization headers and bearer tokens from any text that
// might echo one back (e.g. a runtime's error body).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "core/log_text.h"  // redact, log_tail_line
#include "core/result.h"

namespace soak {

using Logger = std::shared_ptr<spdlog::logger>;

enum class LogTarget { Auto, Console, File };

inline constexpr size_t kLogRotateBytes = 10 * 1024 * 1024;
inline constexpr size_t kLogRotateFiles = 5;

// Auto: console if stderr is a TTY, else a rotating file at `path`.
Result<Logger> make_logger(LogTarget target, const std::string& path, const std::string& level = "info");
Logger make_null_logger();

}  // namespace soak
