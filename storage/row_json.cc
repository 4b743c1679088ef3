#include "storage/row_json.h"

#include <nlohmann/json.hpp>

#include "storage/columns.h"

namespace soak {

namespace {

template <class Row>
nlohmann::ordered_json whole(const Row& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const Column<Row>& c : Table<Row>::columns) {
    if (!c.selected() || !c.json) continue;
    c.json(out[std::string(c.name)], r);
  }
  return out;
}

}  // namespace

nlohmann::ordered_json row_json(const ProbeResult& r) { return whole(r); }

}  // namespace soak
