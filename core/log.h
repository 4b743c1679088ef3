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

#include "core/result.h"

namespace soak {

using Logger = std::shared_ptr<spdlog::logger>;

enum class LogTarget { Auto, Console, File };

inline constexpr size_t kLogRotateBytes = 10 * 1024 * 1024;
inline constexpr size_t kLogRotateFiles = 5;

// Auto: console if stderr is a TTY, else a rotating file at `path`.
Result<Logger> make_logger(LogTarget target, const std::string& path, const std::string& level = "info");
Logger make_null_logger();

std::string redact(std::string_view text);

// The end of a runtime's log on one line, for a reason or an event: trailing
// blanks trimmed, at most `max_chars` of its end ("..." before a cut), each
// line break replaced by `separator`, carriage returns dropped.
std::string log_tail_line(std::string tail, size_t max_chars, std::string_view separator);

}  // namespace soak
