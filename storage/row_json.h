// A stored row shown whole as JSON, from its table's column declarations
// (storage/columns.h): every column read back, under its stored name, in the
// table's order; enums by name, an absent value null, a column declared a
// document (doc<>, a probe row's `extra` and `sampling`) as that document.
// So `soakd probe --json` and any other reader show a row as the store holds
// it, and a column added to the table shows up with no code of its own.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "core/types.h"

namespace soak {

nlohmann::ordered_json row_json(const ProbeResult& r);

}  // namespace soak
