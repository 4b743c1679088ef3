// The generic half of reading the config: a section (one JSON object) is a
// table of Fields, each naming its key, the member it fills, the kind of JSON
// value it takes, its bounds and the example its errors show. read_section()
// walks one object against such a table: it reads every known key, reports
// every unknown key (with a "did you mean" and the keys allowed there) and
// every missing required key. The tables themselves are in core/config_schema.cc.
//
// Errors are collected, never thrown, so a file with ten problems shows ten
// lines, each "FILE: json.path: what is wrong (e.g. example)".
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace soak::schema {

using json = nlohmann::json;

// What one parse collects, and what relative paths in it resolve against.
struct ReadContext {
  std::string file;      // named at the start of every error line
  std::string base_dir;  // the config file's directory ("" leaves relative paths as they are)
  std::vector<std::string> errors;

  // One line: "FILE: PATH: WHAT (e.g. EXAMPLE)"; the top level is "(top level)".
  void err(const std::string& path, const std::string& what, const std::string& example = "");
};

std::string join_path(const std::string& base, const std::string& key);  // "a.b"
std::string index_path(const std::string& base, size_t i);               // "a[2]"
const char* json_type_name(const json& v);                               // "a string", "null", ...

// ---- readers of one value; each reports its own error and leaves `out` alone on one,
// returning whether it read a good value
enum class Zero { Reject, Allow };  // whether a duration of zero is accepted

// A non-empty string; nullopt (reported) for anything else.
std::optional<std::string> read_string(ReadContext& ctx, const json& v, const std::string& path,
                                       const std::string& example);
bool read_duration(ReadContext& ctx, const json& v, const std::string& path, int64_t& out, const std::string& example,
                   Zero zero);
bool read_int(ReadContext& ctx, const json& v, const std::string& path, int64_t& out, int64_t min, int64_t max,
              const std::string& example);
bool read_double(ReadContext& ctx, const json& v, const std::string& path, double& out, double min, double max,
                 const std::string& example);
bool read_bool(ReadContext& ctx, const json& v, const std::string& path, bool& out);
// A non-empty array of integers in [1, max]; stops at the first bad element.
// `why_max`, when given, is said after "must be at most N".
bool read_positive_list(ReadContext& ctx, const json& v, const std::string& path, std::vector<int64_t>& out,
                        int64_t max, const std::string& example, const std::string& why_max = "");

// False (and reported) when `v` is not an object.
bool expect_object(ReadContext& ctx, const json& v, const std::string& path, const std::string& example);
// Every key of `v` not in `allowed`: "unknown key ...; did you mean ...? Allowed here: ...".
void report_unknown_keys(ReadContext& ctx, const json& v, const std::string& path,
                         const std::vector<std::string>& allowed);

// ---- the table
// The JSON value a key takes (what the tests feed it and what documentation would list).
enum class Kind { Duration, Int, Double, Bool, String, List, Object };
enum class Presence { Optional, Required };

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

template <class S>
struct Field {
  std::string key;
  Kind kind = Kind::String;
  std::string example;       // after "e.g." in this key's messages
  double min = -kUnbounded;  // numeric kinds: the accepted closed range
  double max = kUnbounded;   //   (durations: milliseconds)
  Presence presence = Presence::Optional;
  // Reads the value into the section's struct. Empty: the key is allowed here
  // but read by the caller (the candidates, which must see the defaults first).
  std::function<void(ReadContext&, const json& value, const std::string& path, S&)> read;
};

template <class S>
struct Section {
  std::string example;  // shown when the value is not an object
  std::vector<Field<S>> fields;

  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& f : fields) k.push_back(f.key);
    return k;
  }
};

// Reads object `v` at `path` into `out`: known keys in table order, then
// unknown keys, then missing required ones. False when `v` is not an object.
template <class S>
bool read_section(ReadContext& ctx, const json& v, const std::string& path, const Section<S>& section, S& out) {
  if (!expect_object(ctx, v, path, section.example)) return false;
  for (const auto& f : section.fields) {
    auto it = v.find(f.key);
    if (it != v.end() && f.read) f.read(ctx, *it, join_path(path, f.key), out);
  }
  report_unknown_keys(ctx, v, path, section.keys());
  for (const auto& f : section.fields) {
    if (f.presence == Presence::Required && !v.contains(f.key))
      ctx.err(join_path(path, f.key), "is required", "\"" + f.key + "\": " + f.example);
  }
  return true;
}

// ---- building rows: one call per key
namespace detail {
template <class T>
struct Slot {
  using type = T;
};  // the integer a member holds
template <class T>
struct Slot<std::optional<T>> {
  using type = T;
};

template <class S>
Field<S> row(std::string key, Kind kind, std::string example, double min = -kUnbounded, double max = kUnbounded) {
  Field<S> f;
  f.key = std::move(key);
  f.kind = kind;
  f.example = std::move(example);
  f.min = min;
  f.max = max;
  return f;
}
}  // namespace detail

template <class S>
Field<S> duration(std::string key, int64_t S::*m, std::string example, Zero zero = Zero::Reject) {
  const double min_ms = zero == Zero::Allow ? 0.0 : 1.0;
  Field<S> f = detail::row<S>(std::move(key), Kind::Duration, std::move(example), min_ms);
  f.read = [m, ex = f.example, zero](ReadContext& c, const json& v, const std::string& p, S& s) {
    read_duration(c, v, p, s.*m, ex, zero);
  };
  return f;
}

// An integer member (int, int64_t or optional<int>), at least `min`, at most what the member holds.
template <class S, class T>
Field<S> integer(std::string key, T S::*m, int64_t min, std::string example) {
  using Held = typename detail::Slot<T>::type;
  constexpr int64_t kMax = std::numeric_limits<Held>::max();
  Field<S> f = detail::row<S>(std::move(key), Kind::Int, std::move(example), static_cast<double>(min),
                              static_cast<double>(kMax));
  f.read = [m, min, ex = f.example](ReadContext& c, const json& v, const std::string& p, S& s) {
    int64_t n = 0;
    if (read_int(c, v, p, n, min, kMax, ex)) s.*m = static_cast<Held>(n);
  };
  return f;
}

// An integer given in one unit and held in a smaller one (megabytes -> bytes).
template <class S>
Field<S> scaled_integer(std::string key, int64_t S::*m, int64_t scale, int64_t min, std::string example) {
  const int64_t max = std::numeric_limits<int64_t>::max() / scale;
  Field<S> f =
      detail::row<S>(std::move(key), Kind::Int, std::move(example), static_cast<double>(min), static_cast<double>(max));
  f.read = [m, scale, min, max, ex = f.example](ReadContext& c, const json& v, const std::string& p, S& s) {
    int64_t n = 0;
    if (read_int(c, v, p, n, min, max, ex)) s.*m = n * scale;
  };
  return f;
}

template <class S>
Field<S> number(std::string key, double S::*m, double min, double max, std::string example) {
  Field<S> f = detail::row<S>(std::move(key), Kind::Double, std::move(example), min, max);
  f.read = [m, min, max, ex = f.example](ReadContext& c, const json& v, const std::string& p, S& s) {
    read_double(c, v, p, s.*m, min, max, ex);
  };
  return f;
}

template <class S>
Field<S> boolean(std::string key, bool S::*m) {
  Field<S> f = detail::row<S>(std::move(key), Kind::Bool, "true");
  f.read = [m](ReadContext& c, const json& v, const std::string& p, S& s) { read_bool(c, v, p, s.*m); };
  return f;
}

// A non-empty string member (std::string or optional<std::string>).
template <class S, class T>
Field<S> text(std::string key, T S::*m, std::string example) {
  Field<S> f = detail::row<S>(std::move(key), Kind::String, std::move(example));
  f.read = [m, ex = f.example](ReadContext& c, const json& v, const std::string& p, S& s) {
    if (auto str = read_string(c, v, p, ex)) s.*m = std::move(*str);
  };
  return f;
}

// An upper bound on list elements, with the reason the message gives.
struct Bound {
  int64_t max;
  std::string why;
};

// A non-empty list of positive integers (vector<int> or vector<int64_t>), each
// at most `bound.max` when a bound is given.
template <class S, class T>
Field<S> positive_list(std::string key, std::vector<T> S::*m, std::string example, std::optional<Bound> bound = {}) {
  const int64_t max = bound ? bound->max : static_cast<int64_t>(std::numeric_limits<T>::max());
  Field<S> f = detail::row<S>(std::move(key), Kind::List, std::move(example), 1.0, static_cast<double>(max));
  f.read = [m, max, why = bound ? bound->why : std::string(), ex = f.example](ReadContext& c, const json& v,
                                                                              const std::string& p, S& s) {
    std::vector<int64_t> xs;
    if (read_positive_list(c, v, p, xs, max, ex, why)) (s.*m).assign(xs.begin(), xs.end());
  };
  return f;
}

// A nested object read with its own table (which must outlive this row).
template <class S, class T>
Field<S> object(std::string key, T S::*m, const Section<T>& section) {
  Field<S> f = detail::row<S>(std::move(key), Kind::Object, section.example);
  f.read = [m, sec = &section](ReadContext& c, const json& v, const std::string& p, S& s) {
    read_section(c, v, p, *sec, s.*m);
  };
  return f;
}

// A key with rules of its own; `read` gets the row's example so it is written once.
template <class S>
Field<S> custom(
    std::string key, Kind kind, std::string example,
    std::function<void(ReadContext&, const json&, const std::string& path, const std::string& example, S&)> read) {
  Field<S> f = detail::row<S>(std::move(key), kind, std::move(example));
  f.read = [r = std::move(read), ex = f.example](ReadContext& c, const json& v, const std::string& p, S& s) {
    r(c, v, p, ex, s);
  };
  return f;
}

// A key allowed here but read by the caller (no reader in the table).
template <class S>
Field<S> read_elsewhere(std::string key, Kind kind, std::string example) {
  return detail::row<S>(std::move(key), kind, std::move(example));
}

template <class S>
Field<S> required(Field<S> f) {
  f.presence = Presence::Required;
  return f;
}

// The rows of `inner`, read into member `m` of the outer struct: the campaign
// keys a candidate accepts alongside its own.
template <class S, class T>
void embed(std::vector<Field<S>>& into, T S::*m, const Section<T>& inner) {
  for (const auto& f : inner.fields) {
    Field<S> g = detail::row<S>(f.key, f.kind, f.example, f.min, f.max);
    g.presence = f.presence;
    if (f.read)
      g.read = [m, r = f.read](ReadContext& c, const json& v, const std::string& p, S& s) { r(c, v, p, s.*m); };
    into.push_back(std::move(g));
  }
}

}  // namespace soak::schema
