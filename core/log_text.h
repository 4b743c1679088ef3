// Text that goes into logs, reasons and events, kept apart from the logger
// itself (core/log.h) so that code which only shapes such text links without
// spdlog: soakctl reads the store and needs no logger or event loop.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace soak {

// Scrubs Authorization headers, bearer tokens and API keys from any text that
// might echo one back (e.g. a runtime's error body).
std::string redact(std::string_view text);

// The end of a runtime's log on one line, for a reason or an event: trailing
// blanks trimmed, at most `max_chars` of its end ("..." before a cut), each
// line break replaced by `separator`, carriage returns dropped.
std::string log_tail_line(std::string tail, size_t max_chars, std::string_view separator);

}  // namespace soak
