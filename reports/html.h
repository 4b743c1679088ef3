// HTML text for reports: escaping of every text that comes from the store
// (candidate names, builds, reasons, event details), anchors for rows and
// events, reasons with the ids they cite turned into links, and the number
// and time formats the pages use. Pure functions; thread-agnostic.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "core/duration.h"

namespace soak::report {

// Text for element content and attribute values (double or single quoted):
// & < > " ' become entities, other control characters than tab and newline
// become U+FFFD (they are not allowed in HTML and could hide text).
std::string escape(std::string_view text);

// Anchor ids in the rows and events tables of a candidate's page.
std::string row_anchor(int64_t id);    // "row-53"
std::string event_anchor(int64_t id);  // "event-7"

// A judge's reason, escaped, with the row and event ids it cites linked to
// their anchors: "3 row(s) (53, 78, 111)", "rows 12, 15 and 4 more",
// "(events 5, 7)", "probe rows 1..500". Only ids in `rows` / `events` (what
// the page has a table line for) become links; other numbers stay text.
std::string linked_reason(std::string_view reason, const std::set<int64_t>& rows, const std::set<int64_t>& events);

// The ids a reason cites (what linked_reason would link), by table.
struct CitedIds {
  std::set<int64_t> rows, events;
};
CitedIds cited_ids(std::string_view reason);

// Numbers as the pages print them: 4 significant digits, whole numbers of
// 5+ digits in full (as the judge's reasons do), never "nan"/"inf".
std::string num(double v);
// A signed percentage of a fraction: "+12.3%".
std::string pct(double fraction);
// Bytes as MB (10^6, as the judge counts them): "20480.5 MB".
std::string mb(double bytes);
// Wall time as ISO 8601 UTC is core's iso_utc (core/duration.h). A duration, "2h 05m".
using soak::iso_utc;
std::string duration_text(int64_t ms);

}  // namespace soak::report
