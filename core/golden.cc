#include "core/golden.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

namespace soak {

bool constrained_prompt(std::string_view prompt_id) {
  const std::string_view kind = prompt_id.substr(0, prompt_id.find('/'));
  return kind == kGoldenToolCallKind || kind == kGoldenJsonSchemaKind;
}

namespace {

int64_t stored_logprob(double lp) {
  if (!std::isfinite(lp) || lp < kLowestStoredLogprob) lp = kLowestStoredLogprob;
  if (lp > 0) lp = 0;
  return static_cast<int64_t>(std::llround(lp * kLogprobStoredScale));
}

double read_logprob(const nlohmann::json& v) { return static_cast<double>(v.get<int64_t>()) / kLogprobStoredScale; }

}  // namespace

void sort_top(TokenStep& s) {
  std::stable_sort(s.top.begin(), s.top.end(),
                   [](const TokenChoice& x, const TokenChoice& y) { return x.logprob > y.logprob; });
}

std::string_view to_string(LogprobShape s) { return s == LogprobShape::TopK ? "top_k" : "none"; }

std::optional<LogprobShape> parse_logprob_shape(std::string_view s) {
  if (s == "top_k") return LogprobShape::TopK;
  if (s == "none") return LogprobShape::None;
  return std::nullopt;
}

std::string logprob_shape_names() { return "none, top_k"; }

std::vector<StoredGoldenRun> group_golden_runs(const std::vector<GoldenAnswerRow>& rows) {
  std::vector<StoredGoldenRun> runs;
  std::map<std::string, size_t> at;
  for (const GoldenAnswerRow& r : rows) {
    auto [it, added] = at.emplace(r.run, runs.size());
    if (added) runs.push_back(StoredGoldenRun{r.run, r.stage_id, r.wall_ms, r.set_hash, {}});
    GoldenAnswer a;
    a.prompt_id = r.prompt_id;
    a.text_hash = r.text_hash;
    a.logprobs = r.logprobs;
    if (auto steps = decode_steps(r.steps)) {
      a.steps = std::move(*steps);
    } else {
      a.logprobs = LogprobShape::None;
    }
    runs[it->second].answers.answers.push_back(std::move(a));
  }
  return runs;
}

GoldenAnswer unanswered_golden(std::string_view prompt_id) {
  GoldenAnswer a;
  a.prompt_id = std::string(prompt_id);
  return a;
}

GoldenAnswerRow golden_row(const GoldenAnswer& a) {
  return GoldenAnswerRow{
      .prompt_id = a.prompt_id, .text_hash = a.text_hash, .logprobs = a.logprobs, .steps = encode_steps(a.steps)};
}

std::string encode_steps(const std::vector<TokenStep>& steps) {
  using json = nlohmann::json;
  std::map<std::pair<std::string, std::optional<int64_t>>, int64_t> index;
  json pieces = json::array();
  json ids = json::array();
  const auto at = [&](const TokenChoice& c) {
    auto [it, added] = index.emplace(std::make_pair(c.token, c.id), static_cast<int64_t>(pieces.size()));
    if (added) {
      pieces.push_back(c.token);
      ids.push_back(c.id ? json(*c.id) : json(nullptr));
    }
    return it->second;
  };
  json out_steps = json::array();
  for (const TokenStep& s : steps) {
    json row = json::array({at(s.chosen), stored_logprob(s.chosen.logprob)});
    for (const TokenChoice& t : s.top) {
      row.push_back(at(t));
      row.push_back(stored_logprob(t.logprob));
    }
    out_steps.push_back(std::move(row));
  }
  return json{{"t", std::move(pieces)}, {"i", std::move(ids)}, {"s", std::move(out_steps)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::optional<std::vector<TokenStep>> decode_steps(std::string_view text) {
  using json = nlohmann::json;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("t") || !j.contains("i") || !j.contains("s")) return std::nullopt;
  const json& pieces = j["t"];
  const json& ids = j["i"];
  const json& rows = j["s"];
  if (!pieces.is_array() || !ids.is_array() || !rows.is_array() || pieces.size() != ids.size()) return std::nullopt;
  std::vector<TokenChoice> table;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].is_string() || !(ids[i].is_null() || ids[i].is_number_integer())) return std::nullopt;
    TokenChoice c;
    c.token = pieces[i].get<std::string>();
    if (ids[i].is_number_integer()) c.id = ids[i].get<int64_t>();
    table.push_back(std::move(c));
  }
  std::vector<TokenStep> steps;
  for (const json& row : rows) {
    if (!row.is_array() || row.size() < 2 || row.size() % 2 != 0) return std::nullopt;
    for (const json& v : row)
      if (!v.is_number_integer()) return std::nullopt;
    const auto choice = [&](size_t k) -> std::optional<TokenChoice> {
      const int64_t ix = row[k].get<int64_t>();
      if (ix < 0 || static_cast<size_t>(ix) >= table.size()) return std::nullopt;
      TokenChoice c = table[static_cast<size_t>(ix)];
      c.logprob = read_logprob(row[k + 1]);
      return c;
    };
    TokenStep s;
    auto chosen = choice(0);
    if (!chosen) return std::nullopt;
    s.chosen = std::move(*chosen);
    for (size_t k = 2; k < row.size(); k += 2) {
      auto t = choice(k);
      if (!t) return std::nullopt;
      s.top.push_back(std::move(*t));
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

}  // namespace soak
