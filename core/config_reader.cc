#include "core/config_reader.h"

#include <algorithm>
#include <sstream>

#include "core/duration.h"

namespace soak::schema {

void ReadContext::err(const std::string& path, const std::string& what, const std::string& example) {
  std::string line = file + ": " + (path.empty() ? std::string("(top level)") : path) + ": " + what;
  if (!example.empty()) line += " (e.g. " + example + ")";
  errors.push_back(std::move(line));
}

std::string join_path(const std::string& base, const std::string& key) { return base.empty() ? key : base + "." + key; }

std::string index_path(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

const char* json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "a number";
  }
}

std::optional<std::string> read_string(ReadContext& ctx, const json& v, const std::string& path,
                                       const std::string& example) {
  if (!v.is_string()) {
    ctx.err(path, std::string("must be a string, not ") + json_type_name(v), example);
    return std::nullopt;
  }
  std::string s = v.get<std::string>();
  if (s.empty()) {
    ctx.err(path, "must not be empty", example);
    return std::nullopt;
  }
  return s;
}

bool read_duration(ReadContext& ctx, const json& v, const std::string& path, int64_t& out, const std::string& example,
                   Zero zero) {
  if (!v.is_string()) {
    ctx.err(path, std::string("must be a duration string with a unit, not ") + json_type_name(v), example);
    return false;
  }
  auto r = parse_duration(v.get<std::string>());
  if (!r) {
    ctx.err(path, r.message(), example);
    return false;
  }
  if (*r < 0 || (*r == 0 && zero == Zero::Reject)) {
    ctx.err(path, "must be greater than zero", example);
    return false;
  }
  out = *r;
  return true;
}

bool read_int(ReadContext& ctx, const json& v, const std::string& path, int64_t& out, int64_t min, int64_t max,
              const std::string& example) {
  if (!v.is_number_integer()) {
    ctx.err(path, std::string("must be an integer, not ") + json_type_name(v), example);
    return false;
  }
  int64_t x = v.get<int64_t>();
  if (x < min) {
    ctx.err(path, "must be at least " + std::to_string(min), example);
    return false;
  }
  if (x > max) {  // the member is narrower than JSON's integers: never wrap silently
    ctx.err(path, "must be at most " + std::to_string(max), example);
    return false;
  }
  out = x;
  return true;
}

bool read_double(ReadContext& ctx, const json& v, const std::string& path, double& out, double min, double max,
                 const std::string& example) {
  if (!v.is_number()) {
    ctx.err(path, std::string("must be a number, not ") + json_type_name(v), example);
    return false;
  }
  double x = v.get<double>();
  if (!(x >= min && x <= max)) {
    std::ostringstream os;
    os << "must be between " << min << " and " << max;
    ctx.err(path, os.str(), example);
    return false;
  }
  out = x;
  return true;
}

bool read_bool(ReadContext& ctx, const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) {
    ctx.err(path, std::string("must be true or false, not ") + json_type_name(v), "true");
    return false;
  }
  out = v.get<bool>();
  return true;
}

bool read_positive_list(ReadContext& ctx, const json& v, const std::string& path, std::vector<int64_t>& out,
                        int64_t max, const std::string& example, const std::string& why_max) {
  if (!v.is_array() || v.empty()) {
    ctx.err(path, "must be a non-empty array of positive integers", example);
    return false;
  }
  std::vector<int64_t> tmp;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    if (!e.is_number_integer() || e.get<int64_t>() <= 0) {
      ctx.err(index_path(path, i), "must be a positive integer", example);
      return false;
    }
    if (e.get<int64_t>() > max) {
      ctx.err(index_path(path, i), "must be at most " + std::to_string(max) + (why_max.empty() ? "" : ": " + why_max),
              example);
      return false;
    }
    tmp.push_back(e.get<int64_t>());
  }
  out = std::move(tmp);
  return true;
}

bool expect_object(ReadContext& ctx, const json& v, const std::string& path, const std::string& example) {
  if (v.is_object()) return true;
  ctx.err(path, std::string("must be an object, not ") + json_type_name(v), example);
  return false;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

void report_unknown_keys(ReadContext& ctx, const json& v, const std::string& path,
                         const std::vector<std::string>& allowed) {
  if (!v.is_object()) return;
  std::string allowed_list;
  for (const auto& k : allowed) allowed_list += (allowed_list.empty() ? "" : ", ") + k;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    // The closest allowed key within two edits: a typo, not a different word.
    std::string best;
    size_t best_d = 3;
    for (const auto& k : allowed) {
      size_t d = edit_distance(it.key(), k);
      if (d < best_d) {
        best_d = d;
        best = k;
      }
    }
    std::string msg = "unknown key \"" + it.key() + "\"";
    if (!best.empty()) msg += "; did you mean \"" + best + "\"?";
    msg += " Allowed here: " + allowed_list;
    ctx.err(join_path(path, it.key()), msg);
  }
}

}  // namespace soak::schema
