#include "core/log.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace soak {

Result<Logger> make_logger(LogTarget target, const std::string& path, const std::string& level) {
  if (target == LogTarget::Auto) target = isatty(STDERR_FILENO) ? LogTarget::Console : LogTarget::File;
  Logger logger;
  try {
    if (target == LogTarget::Console) {
      logger = std::make_shared<spdlog::logger>("soakd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    } else {
      std::error_code ec;
      auto dir = std::filesystem::path(path).parent_path();
      if (!dir.empty()) std::filesystem::create_directories(dir, ec);
      if (ec) return make_error("cannot create log directory " + dir.string() + ": " + ec.message());
      logger = std::make_shared<spdlog::logger>(
          "soakd", std::make_shared<spdlog::sinks::rotating_file_sink_mt>(path, kLogRotateBytes, kLogRotateFiles));
    }
  } catch (const spdlog::spdlog_ex& e) {
    return make_error("cannot open log " + path + ": " + e.what());
  }
  auto lvl = spdlog::level::from_str(level);
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  return logger;
}

Logger make_null_logger() {
  return std::make_shared<spdlog::logger>("null", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace soak
