// Behaviour that changes while a fake runtime runs, for scenarios that play
// out across soakd's stages without the fake knowing of stages: a build whose
// long prefills are slower, a host session slower than the last, a prompt
// cache that fills up to its cap. Each is a knob (scenario.h, the command
// line) that POST /fake/control also sets while the listener runs, so a test
// changes it at the moment its story needs (e.g. when soakd logs that a soak
// started).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/fake_runtime/scenario.h"

namespace soak::fake::drift {

// `ms` of prefill or token pacing for a prompt of `prompt_tokens`, scaled by
// slow_pct when the prompt has at least slow_from_tokens tokens.
int64_t scaled_ms(const Knobs& k, size_t prompt_tokens, int64_t ms);

// The drift keys of POST /fake/control: slow_pct, slow_from_tokens,
// cache_ram, cache_fill_mib (non-negative integers; others are ignored).
void control(Knobs& k, const nlohmann::json& body);

// A runtime that turns slow in the middle of a run: every inference request
// a slot starts waits first_token_delay_ms before its prompt is read, once
// first_token_delay_after more of them have started since the knob was set
// (POST /fake/control {"first_token_delay_ms": 5000, "first_token_delay_after":
// 40}: "from a third of the way into the soak, 5 s to the first byte").
class FirstTokenDelay {
 public:
  // A /fake/control body that sets first_token_delay_after arms the count.
  void control(const nlohmann::json& body);
  // The delay of the request a slot starts now.
  int64_t on_start(const Knobs& k);

 private:
  int64_t before_ = 0;  // requests still to start undelayed
};

// llama-server's host-RAM prompt cache (--cache-ram, MiB): each inference
// request keeps cache_fill_mib more MiB of it, allocated and touched so the
// process's resident memory grows, until the cap; then it holds.
class PromptCache {
 public:
  void on_request(const Knobs& k);
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  uint64_t bytes_ = 0;
};

}  // namespace soak::fake::drift
