// Prefill progress a runtime reports while it reads a long prompt, before the
// first token (docs/DESIGN.md §2.2). Two shapes exist:
// - MLX-LM streams an SSE comment `: keepalive <processed>/<total>` after each
//   prefill step (mlx_lm/server.py handle_completion keepalive_callback, fed
//   by stream_generate's prompt_progress_callback);
// - llama.cpp streams chunks with a `prompt_progress` object {total, cache,
//   processed, time_ms} when the request sets "return_progress": true
//   (tools/server/server-task.cpp result_prompt_progress, sent once per batch
//   from server-context.cpp), with a role-only delta and no output.
// Only a report that read more of the prompt than every earlier one is
// progress: a runtime repeating the same count is pinging, not reading.
// Plain keep-alives (`: ping`, `:`, oMLX "keepalive" chunks, Rapid-MLX
// `: keepalive` without counts) parse as nothing here.
//
// Pure and thread-agnostic; a PrefillProgress belongs to one request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace soak::probes {

struct PrefillReport {
  int64_t processed = 0;  // prompt tokens read so far (llama.cpp counts cached ones too)
  int64_t total = 0;      // prompt tokens in all
};

// The SSE comment text after its ':' (one leading space removed):
// "keepalive 1024/65536" -> {1024, 65536}. Anything else (a timestamp, a
// counter without a total, processed > total) is not a report.
std::optional<PrefillReport> parse_keepalive_comment(std::string_view text);

// A chat chunk's `prompt_progress` object, if it has a valid one.
std::optional<PrefillReport> parse_prompt_progress(const nlohmann::json& chunk);

// Whether a chunk with a prompt_progress object carries nothing of the answer
// (llama.cpp sends a role-only delta): no output, reasoning, tool call,
// finish, usage or error. One that did would be read as an ordinary chunk.
bool carries_only_progress(const nlohmann::json& chunk);

struct PrefillProgress {
  int64_t reports = 0;                      // reports that read further than any before
  std::optional<int64_t> processed, total;  // the furthest report
  // Records `r`; true when it is progress: further than every earlier report
  // (the first one counts once it is past 0).
  bool note(const PrefillReport& r);
};

// For a stall before the first token: "the prefill last reported 1024/65536
// prompt tokens", or "no prefill progress reported".
std::string describe(const PrefillProgress& p);

}  // namespace soak::probes
