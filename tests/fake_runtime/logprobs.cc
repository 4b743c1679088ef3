#include "tests/fake_runtime/logprobs.h"

#include <algorithm>
#include <cmath>

namespace soak::fake {
namespace {

using ojson = nlohmann::ordered_json;

constexpr double kSure = -0.05;
constexpr double kRunnerUp = -3.2;
constexpr std::string_view kTieSuffix = "_tie";
constexpr std::string_view kChangedPiece = " CHANGED";

bool asks_json(std::string_view prompt) { return prompt.find("as JSON") != std::string_view::npos; }

int64_t piece_id(std::string_view piece) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : piece) h = (h ^ c) * 0x100000001b3ULL;
  return static_cast<int64_t>(h % 150000);
}

ojson entry(const std::string& piece, double logprob) {
  ojson e;
  e["id"] = piece_id(piece);
  e["token"] = piece;
  ojson bytes = ojson::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  e["bytes"] = std::move(bytes);
  e["logprob"] = logprob;
  return e;
}

bool is_answer_piece(const Piece& p) { return p.kind == PieceKind::Content || p.kind == PieceKind::ToolArgs; }

}  // namespace

std::optional<AnswerMode> parse_answer_mode(std::string_view s) {
  if (s.empty() || s == "steady") return AnswerMode::Steady;
  if (s == "changed") return AnswerMode::Changed;
  if (s == "near-tie") return AnswerMode::NearTie;
  if (s == "no-logprobs") return AnswerMode::NoLogprobs;
  if (s == "not-top1") return AnswerMode::NotTop1;
  if (s == "looping") return AnswerMode::Looping;
  return std::nullopt;
}

std::string answer_mode_names() { return "steady, changed, near-tie, no-logprobs, not-top1, looping"; }

void shape_answer(AnswerMode m, std::string_view prompt, ReplyPlan& plan, std::optional<int> limit) {
  std::vector<Piece>& pieces = plan.pieces;
  if (m == AnswerMode::Looping && !plan.tool_call && !asks_json(prompt)) {
    std::vector<Piece> unit;
    for (const Piece& p : pieces)
      if (p.kind == PieceKind::Content && unit.size() < kLoopUnitPieces) unit.push_back(p);
    if (unit.empty()) return;
    std::vector<Piece> looped;
    for (const Piece& p : pieces)
      if (p.kind != PieceKind::Content) looped.push_back(p);
    const int n = std::max(1, std::min(limit.value_or(kLoopCeilingPieces), kLoopCeilingPieces));
    for (int i = static_cast<int>(looped.size()); i < n; ++i) {
      Piece p = unit[static_cast<size_t>(i) % unit.size()];
      if (i > 0 && p.text.front() != ' ') p.text.insert(0, 1, ' ');  // the unit's first word starts the answer
      looped.push_back(std::move(p));
    }
    pieces = std::move(looped);
    plan.finish_reason = "length";
    return;
  }
  size_t at = 0;
  for (Piece& p : pieces) {
    if (!is_answer_piece(p)) continue;
    if (m == AnswerMode::Changed && at == kChangedPosition && asks_json(prompt)) p.text = std::string(kChangedPiece);
    if (m == AnswerMode::NearTie && at == kTiePosition) p.text += kTieSuffix;
    ++at;
  }
}

std::optional<ojson> answer_logprobs(AnswerMode m, std::string_view prompt, const std::vector<Piece>& pieces,
                                     int top_k) {
  if (m == AnswerMode::NoLogprobs) return std::nullopt;
  ojson content = ojson::array();
  size_t at = 0;
  for (const Piece& p : pieces) {
    if (!is_answer_piece(p)) continue;
    std::vector<std::pair<std::string, double>> top;
    double chosen_lp = kSure;
    if (at == kTiePosition) {
      // Steady's near tie: its own piece just ahead of the tie piece; the
      // near-tie build has the two the other way round.
      const bool took_tie = p.text.size() > kTieSuffix.size() &&
                            p.text.compare(p.text.size() - kTieSuffix.size(), kTieSuffix.size(), kTieSuffix) == 0;
      const std::string other =
          took_tie ? p.text.substr(0, p.text.size() - kTieSuffix.size()) : p.text + std::string(kTieSuffix);
      chosen_lp = std::log(0.49);
      top = {{p.text, chosen_lp}, {other, std::log(0.47)}};
    } else if (m == AnswerMode::NotTop1 && at == kNotTop1Position) {
      chosen_lp = -2.5;
      top = {{p.text + "_first", -0.1}, {p.text, chosen_lp}};
    } else {
      top = {{p.text, kSure}, {p.text + "_alt", kRunnerUp}};
    }
    (void)prompt;
    for (int k = static_cast<int>(top.size()); k < top_k; ++k)
      top.emplace_back(p.text + "_alt" + std::to_string(k), kRunnerUp - k);
    ojson e = entry(p.text, chosen_lp);
    ojson list = ojson::array();
    for (int k = 0; k < top_k && k < static_cast<int>(top.size()); ++k)
      list.push_back(entry(top[static_cast<size_t>(k)].first, top[static_cast<size_t>(k)].second));
    e["top_logprobs"] = std::move(list);
    content.push_back(std::move(e));
    ++at;
  }
  ojson out;
  out["content"] = std::move(content);
  return out;
}

}  // namespace soak::fake
