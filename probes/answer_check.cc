#include "probes/answer_check.h"

#include <nlohmann/json.hpp>

#include "probes/text_util.h"

namespace soak::probes {

RepetitionReport answer_repetition(const ChatResult& r) {
  return detect_repetition(r.content.empty() ? std::string_view(r.reasoning) : std::string_view(r.content));
}

std::optional<Verdict> check_answer(const ChatResult& r, const RepetitionReport& rep, bool expects_answer) {
  if (rep.looping) return repetition_verdict(rep);
  if (!expects_answer || !r.tool_calls.empty() || !text::trim(r.content).empty()) return std::nullopt;
  if (!r.reasoning.empty()) {
    return Verdict{Outcome::EmptyAnswer, "no answer content: the whole reply (" + std::to_string(r.reasoning.size()) +
                                             " bytes) came as reasoning, which is not an answer"};
  }
  return Verdict{Outcome::EmptyAnswer, "no answer content and no tool call (finish_reason " +
                                           (r.finish_reason.empty() ? std::string("none") : r.finish_reason) + ")"};
}

std::string with_loop_figure(const std::string& extra_json, const RepetitionReport& rep) {
  auto j = nlohmann::ordered_json::parse(extra_json.empty() ? "{}" : extra_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::ordered_json::object();
  j["loop_run_chars"] = rep.longest_run_chars;
  j["loop_tail_chars"] = rep.tail_chars;
  return j.dump();
}

Verdict check_code_word(const ChatResult& r, const std::string& code_word) {
  if (r.content.find(code_word) != std::string::npos) return {Outcome::Clean, ""};
  if (!code_word.empty() && r.reasoning.find(code_word) != std::string::npos)
    return {Outcome::MissingMarker,
            "code word " + code_word + " only in the reasoning, not in the long-context answer"};
  return {Outcome::MissingMarker, "code word " + code_word + " absent from the long-context answer; answer starts: " +
                                      text::excerpt(r.content, 80)};
}

}  // namespace soak::probes
