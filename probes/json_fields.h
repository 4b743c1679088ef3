// Non-throwing field access on parsed runtime answers. Runtime bodies are
// untrusted: a field can be missing, null, or of the wrong type, and none of
// that may throw (parsers run inside libcurl callbacks, docs/DESIGN.md §5.4). Every
// accessor answers nullopt for "absent or not of the expected type".
// Header-only, pure, thread-agnostic.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "probes/text_util.h"

namespace soak::probes::jsonf {

using json = nlohmann::json;

// Parse without exceptions; a failure yields a value with is_discarded() true.
inline json parse(std::string_view text) {
  return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

// A body that should be one JSON object (surrounding whitespace allowed, as
// oMLX's keep-alive spaces); anything else is null.
inline json parse_object(std::string_view body) {
  json j = parse(text::trim(body));
  return j.is_object() ? j : json();
}

inline const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// The member when it is an array (a list of models, slots, ids); else null.
inline const json* array_member(const json& j, const char* key) {
  const json* m = member(j, key);
  return m && m->is_array() ? m : nullptr;
}

inline std::optional<std::string> get_string(const json& j, const char* key) {
  const json* m = member(j, key);
  if (!m || !m->is_string()) return std::nullopt;
  return m->get_ref<const std::string&>();
}

// Integers, and floats that hold an integral value (some servers print 12.0).
inline std::optional<int64_t> as_int(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

inline std::optional<int64_t> get_int(const json& j, const char* key) {
  const json* m = member(j, key);
  return m ? as_int(*m) : std::nullopt;
}

inline std::optional<double> get_number(const json& j, const char* key) {
  const json* m = member(j, key);
  if (!m || !m->is_number()) return std::nullopt;
  return m->get<double>();
}

inline std::optional<bool> get_bool(const json& j, const char* key) {
  const json* m = member(j, key);
  if (!m || !m->is_boolean()) return std::nullopt;
  return m->get<bool>();
}

// A struct's optional numeric fields read by name, one table per type: a
// runtime's figure block (llama.cpp `timings`, OpenAI `usage`) maps straight
// onto the struct, absent or mistyped members staying nullopt.
template <class T>
using IntField = std::pair<const char*, std::optional<int64_t> T::*>;
template <class T>
using NumberField = std::pair<const char*, std::optional<double> T::*>;

template <class T>
void read_fields(const json& j, T& out, std::initializer_list<IntField<T>> ints,
                 std::initializer_list<NumberField<T>> numbers) {
  for (const auto& [key, field] : ints) out.*field = get_int(j, key);
  for (const auto& [key, field] : numbers) out.*field = get_number(j, key);
}

// dump() throws on invalid UTF-8 unless told to replace; bodies are untrusted.
inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace soak::probes::jsonf
