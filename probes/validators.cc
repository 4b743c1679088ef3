#include "probes/validators.h"

#include <algorithm>
#include <cmath>

#include "probes/json_fields.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;

size_t utf8_code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

bool is_integral(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

bool has_type(const json& v, std::string_view t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return is_integral(v);
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return true;  // an unknown type name constrains nothing
}

std::string kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::null: return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    default: return "invalid";
  }
}

std::optional<std::string> check_type(const json& v, const json& type) {
  if (type.is_string()) {
    const auto& t = type.get_ref<const std::string&>();
    if (has_type(v, t)) return std::nullopt;
    return "expected " + t + ", got " + kind_of(v);
  }
  if (type.is_array()) {
    std::string names;
    for (const auto& t : type) {
      if (!t.is_string()) continue;
      if (has_type(v, t.get_ref<const std::string&>())) return std::nullopt;
      if (!names.empty()) names += "|";
      names += t.get_ref<const std::string&>();
    }
    return "expected " + names + ", got " + kind_of(v);
  }
  return std::nullopt;
}

std::optional<std::string> violation(const json& v, const json& schema, const std::string& path);

std::optional<std::string> object_violation(const json& v, const json& schema, const std::string& path) {
  const json* props = jsonf::member(schema, "properties");
  if (const json* req = jsonf::member(schema, "required"); req && req->is_array()) {
    for (const auto& k : *req) {
      if (k.is_string() && !v.contains(k.get_ref<const std::string&>())) {
        return path + ": missing required property '" + text::excerpt(k.get_ref<const std::string&>(), 60) + "'";
      }
    }
  }
  const json* extra = jsonf::member(schema, "additionalProperties");
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string child = path + "." + text::excerpt(it.key(), 60);
    const json* sub = (props && props->is_object()) ? jsonf::member(*props, it.key().c_str()) : nullptr;
    if (sub) {
      if (auto e = violation(it.value(), *sub, child)) return e;
    } else if (extra && extra->is_boolean() && !extra->get<bool>()) {
      return child + ": property not allowed (additionalProperties is false)";
    } else if (extra && extra->is_object()) {
      if (auto e = violation(it.value(), *extra, child)) return e;
    }
  }
  return std::nullopt;
}

std::optional<std::string> violation(const json& v, const json& schema, const std::string& path) {
  if (!schema.is_object()) return std::nullopt;  // `true` / `{}`-like schemas allow anything
  if (const json* type = jsonf::member(schema, "type")) {
    if (auto e = check_type(v, *type)) return path + ": " + *e;
  }
  if (const json* en = jsonf::member(schema, "enum"); en && en->is_array()) {
    bool found = false;
    for (const auto& option : *en) found = found || option == v;
    if (!found)
      return path + ": " + text::excerpt(jsonf::dump(v), 60) + " is not one of " + text::excerpt(jsonf::dump(*en), 120);
  }
  if (v.is_string()) {
    size_t n = utf8_code_points(v.get_ref<const std::string&>());
    if (auto mx = jsonf::get_int(schema, "maxLength"); mx && static_cast<int64_t>(n) > *mx)
      return path + ": string of " + std::to_string(n) + " characters is longer than maxLength " + std::to_string(*mx);
    if (auto mn = jsonf::get_int(schema, "minLength"); mn && static_cast<int64_t>(n) < *mn)
      return path + ": string of " + std::to_string(n) + " characters is shorter than minLength " + std::to_string(*mn);
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (auto mx = jsonf::get_number(schema, "maximum"); mx && d > *mx) return path + ": above maximum";
    if (auto mn = jsonf::get_number(schema, "minimum"); mn && d < *mn) return path + ": below minimum";
  }
  if (v.is_array()) {
    if (auto mx = jsonf::get_int(schema, "maxItems"); mx && static_cast<int64_t>(v.size()) > *mx)
      return path + ": more than maxItems";
    if (auto mn = jsonf::get_int(schema, "minItems"); mn && static_cast<int64_t>(v.size()) < *mn)
      return path + ": fewer than minItems";
    if (const json* items = jsonf::member(schema, "items"); items && items->is_object()) {
      for (size_t i = 0; i < v.size(); ++i) {
        if (auto e = violation(v[i], *items, path + "[" + std::to_string(i) + "]")) return e;
      }
    }
  }
  if (v.is_object()) return object_violation(v, schema, path);
  return std::nullopt;
}

bool requires_keys(const json& schema) {
  const json* req = jsonf::member(schema, "required");
  return req && req->is_array() && !req->empty();
}

}  // namespace

std::optional<std::string> schema_violation(const nlohmann::json& value, const nlohmann::json& schema) {
  return violation(value, schema, "$");
}

Verdict check_strict_json(std::string_view content, const nlohmann::json& schema) {
  std::string_view c = text::trim(content);
  if (c.empty()) return {Outcome::InvalidJson, "empty content"};
  json v = jsonf::parse(c);
  if (v.is_discarded()) return {Outcome::InvalidJson, "content is not JSON: " + text::excerpt(c, 100)};
  if (auto e = schema_violation(v, schema)) return {Outcome::InvalidJson, *e};
  return {Outcome::Clean, ""};
}

Verdict check_tool_calls(const std::vector<ToolCall>& calls, const ToolExpectation& expect) {
  if (calls.empty()) return {Outcome::InvalidToolCall, "no tool call in the answer"};
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall& c = calls[i];
    const std::string where = "tool_calls[" + std::to_string(i) + "]";
    if (c.name != expect.name) {
      return {Outcome::InvalidToolCall,
              where + " calls '" + text::excerpt(c.name, 60) + "', expected '" + expect.name + "'"};
    }
    std::string_view args = text::trim(c.arguments);
    if (args.empty() || args == "{}") {
      if (requires_keys(expect.parameters))
        return {Outcome::EmptyToolArgs, where + " has empty arguments where required keys were expected"};
      continue;
    }
    json v = jsonf::parse(args);
    if (v.is_discarded())
      return {Outcome::InvalidToolCall, where + ".arguments is not valid JSON: " + text::excerpt(args, 80)};
    if (!v.is_object())
      return {Outcome::InvalidToolCall, where + ".arguments is a JSON " + kind_of(v) + ", not an object"};
    if (v.empty() && requires_keys(expect.parameters))
      return {Outcome::EmptyToolArgs, where + " has empty arguments where required keys were expected"};
    if (auto e = schema_violation(v, expect.parameters)) return {Outcome::InvalidToolCall, where + ".arguments " + *e};
  }
  return {Outcome::Clean, ""};
}

Verdict check_marker(const ChatResult& r, std::string_view marker) {
  if (r.content.find(marker) != std::string::npos) return {Outcome::Clean, ""};
  if (!marker.empty() && r.reasoning.find(marker) != std::string::npos)
    return {Outcome::MissingMarker, "marker appears only in the reasoning, not in the answer"};
  return {Outcome::MissingMarker, "marker absent; answer starts: " + text::excerpt(r.content, 80)};
}

Verdict check_embeddings(std::string_view body, size_t expected) {
  json j = jsonf::parse(text::trim(body));
  const json* data = jsonf::member(j, "data");
  if (!data || !data->is_array()) return {Outcome::MalformedResponse, "embeddings answer has no data array"};
  if (data->size() != expected)
    return {Outcome::MalformedResponse,
            std::to_string(data->size()) + " embeddings for " + std::to_string(expected) + " inputs"};
  size_t dim = 0;
  for (size_t i = 0; i < data->size(); ++i) {
    const json* e = jsonf::member((*data)[i], "embedding");
    if (!e || !e->is_array() || e->empty())
      return {Outcome::MalformedResponse, "data[" + std::to_string(i) + "].embedding is not a non-empty array"};
    if (dim == 0) dim = e->size();
    if (e->size() != dim) return {Outcome::MalformedResponse, "embeddings of different dimensions"};
    for (const auto& x : *e)
      if (!x.is_number() || !std::isfinite(x.get<double>()))
        return {Outcome::MalformedResponse, "data[" + std::to_string(i) + "].embedding holds a non-finite value"};
  }
  return {Outcome::Clean, ""};
}

Verdict check_rerank(std::string_view body, size_t documents) {
  json j = jsonf::parse(text::trim(body));
  const json* results = jsonf::member(j, "results");
  if (!results || !results->is_array() || results->empty())
    return {Outcome::MalformedResponse, "rerank answer has no results"};
  for (size_t i = 0; i < results->size(); ++i) {
    const json& r = (*results)[i];
    auto index = jsonf::get_int(r, "index");
    auto score = jsonf::get_number(r, "relevance_score");
    if (!index || *index < 0 || static_cast<size_t>(*index) >= documents)
      return {Outcome::MalformedResponse, "results[" + std::to_string(i) + "].index is missing or out of range"};
    if (!score || !std::isfinite(*score))
      return {Outcome::MalformedResponse, "results[" + std::to_string(i) + "].relevance_score is not a number"};
  }
  return {Outcome::Clean, ""};
}

RepetitionReport detect_repetition(std::string_view text) {
  RepetitionReport rep;
  std::string_view tail = text.size() > kRepetitionTailChars ? text.substr(text.size() - kRepetitionTailChars) : text;
  const size_t n = tail.size();
  rep.tail_chars = n;
  if (n < 2 * kRepetitionMinRepeats) return rep;
  const size_t needed = std::max(kRepetitionMinLoopChars,
                                 static_cast<size_t>(std::ceil(kRepetitionMinTailCoverage * static_cast<double>(n))));
  const size_t max_unit = std::min(kRepetitionMaxUnitChars, n / kRepetitionMinRepeats);
  for (size_t p = 1; p <= max_unit; ++p) {
    // Length of the longest suffix in which every byte equals the byte p later.
    size_t run = 0;
    for (size_t j = n - p; j-- > 0;) {
      if (tail[j] != tail[j + p]) break;
      ++run;
    }
    const size_t periodic = run + p;
    if (periodic < kRepetitionMinRepeats * p) continue;
    rep.longest_run_chars = std::max(rep.longest_run_chars, periodic);
    if (!rep.looping && n >= kRepetitionMinLoopChars && periodic >= needed) {
      rep.looping = true;
      rep.unit_chars = p;
      rep.loop_chars = periodic;
      rep.unit_excerpt = text::excerpt(tail.substr(n - p), 60);
    }
    // The whole tail is periodic: no larger unit can give a longer run, and the
    // smallest unit is already kept. Every answer passes here (loops are
    // looked for on all of them), so a looping one stops at its unit.
    if (periodic == n) break;
  }
  return rep;
}

Verdict repetition_verdict(const RepetitionReport& rep) {
  if (!rep.looping) return {Outcome::Clean, ""};
  return {Outcome::Repetition, "the last " + std::to_string(rep.loop_chars) + " bytes repeat a " +
                                   std::to_string(rep.unit_chars) + "-byte unit: '" + rep.unit_excerpt + "'"};
}

Verdict check_repetition(const ChatResult& r) {
  const std::string& produced = r.content.empty() ? r.reasoning : r.content;
  return repetition_verdict(detect_repetition(produced));
}

}  // namespace soak::probes
