#include "storage/row_json.h"

#include <nlohmann/json.hpp>

#include "storage/columns.h"

namespace soak {

namespace {

// The text columns that hold a JSON document of their own.
bool is_document(std::string_view column) { return column == "extra" || column == "sampling"; }

template <class Row>
nlohmann::ordered_json whole(const Row& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const Column<Row>& c : Table<Row>::columns) {
    if (!c.selected() || !c.json) continue;
    nlohmann::ordered_json& v = out[std::string(c.name)];
    c.json(v, r);
    if (is_document(c.name) && v.is_string()) {
      auto doc = nlohmann::ordered_json::parse(v.get<std::string>(), nullptr, false);
      if (!doc.is_discarded()) v = std::move(doc);
    }
  }
  return out;
}

}  // namespace

nlohmann::ordered_json row_json(const ProbeResult& r) { return whole(r); }

}  // namespace soak
